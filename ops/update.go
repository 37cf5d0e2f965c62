package ops

// AdamParams are one Adam step's constants: the learning rate, the decay
// rates, the bias corrections 1-β1^t and 1-β2^t, ε, and the decoupled
// weight decay (0 for plain Adam). tape.Variable.AdamUpdate takes them.
type AdamParams struct {
	LR, Beta1, Beta2, C1, C2, Eps, WeightDecay float64
}
