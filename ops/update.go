package ops

import "github.com/eagerflow/eagerflow/tensor"

// AdamParams are one Adam step's constants: the learning rate, the decay
// rates, the bias corrections 1-β1^t and 1-β2^t, ε, the decoupled
// weight decay (0 for plain Adam) and the gradient's scale (below).
// tape.Variable.AdamUpdate takes them.
//
// In every step's parameters GradScale multiplies the gradient before
// the rule reads it, the product rounded to the variable's dtype: the
// inverse of a loss scale (nn.LossScaleOptimizer), so that unscaling
// takes no pass of its own. 0 is 1. GradFactor, where not nil, is a
// scalar tensor that multiplies it next, the product rounded again: a
// factor computed on the device, such as a global-norm clip's
// (nn.ClippedOptimizer), which a GPU's step reads from device memory
// when it runs, so that the host does not wait for it. It is cast to
// each variable's dtype and moved to its device where it is not there;
// a recorded step (tape.StepRecord) reads it from its buffer at every
// replay, so there it must be the recording's (computed inside it).
type AdamParams struct {
	LR, Beta1, Beta2, C1, C2, Eps, WeightDecay float64
	GradScale                                  float64
	GradFactor                                 *tensor.Tensor
}

// MomentumParams are one step of SGD with momentum: the learning rate,
// the momentum μ, and Nesterov's variant. In the dtype of the variable,
// each product and sum rounded on its own:
//
//	vel = μ·vel + g;  w -= lr·vel               (heavy ball)
//	vel = μ·vel + g;  w -= lr·(g + μ·vel)       (Nesterov)
//
// tape.MomentumUpdateAll takes them.
type MomentumParams struct {
	LR, Momentum float64
	Nesterov     bool
	GradScale    float64        // the gradient's factor, as AdamParams'
	GradFactor   *tensor.Tensor // the gradient's device factor, as AdamParams'
}

// RMSPropParams are one RMSProp step: the learning rate, the decay ρ of
// the mean square, ε, and the momentum μ (0: none). In the dtype of the
// variable, each product, sum, root and quotient rounded on its own:
//
//	s = ρ·s + (1-ρ)·g²;  u = g / (sqrt(s) + ε)
//	mom = μ·mom + u;  u = mom                   (where μ > 0)
//	w -= lr·u
//
// tape.RMSPropUpdateAll takes them.
type RMSPropParams struct {
	LR, Rho, Eps, Momentum float64
	GradScale              float64        // the gradient's factor, as AdamParams'
	GradFactor             *tensor.Tensor // the gradient's device factor, as AdamParams'
}
