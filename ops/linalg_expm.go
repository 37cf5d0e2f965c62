package ops

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

var matrixExpOp *eager.Op

func init() {
	matrixExpOp = eager.Register(&eager.Op{
		Name: "MatrixExp", Inputs: 1, DTypes: linalgTypes,
		Infer: func(c *eager.Call) []eager.Out {
			a := c.Inputs[0]
			needSquare(c, a, "a")
			return c.Out1(a.DType(), a.Shape())
		},
		Grad:      matrixExpGrad,
		GradReads: eager.ReadsInputs,
	})
}

// matrixExpGrad is exp's Fréchet derivative at aᵀ in the direction Ḡ:
// the upper right block of exp([[aᵀ, Ḡ], [0, aᵀ]]) (Mathias, 1996; as
// PyTorch's and JAX's rules), MatrixExp again, so that it differentiates
// to any order.
func matrixExpGrad(g *eager.Grad) []*tensor.Tensor {
	a, dy := g.Inputs[0], g.OutGrads[0]
	n := a.Dim(-1)
	var t temps
	defer t.release()
	at := t.keep(matrixT(a))
	zeros := t.keep(ZerosLike(at))
	block := t.keep(Concatenate(-2, t.keep(Concatenate(-1, at, dy)), t.keep(Concatenate(-1, zeros, at))))
	e := t.keep(MatrixExp(block))
	start, limit := make([]int, e.Rank()), e.Shape().Clone()
	start[e.Rank()-1], limit[e.Rank()-2] = n, n
	return []*tensor.Tensor{Slice(e, start, limit, nil)}
}

// MatrixExp returns the exponential Σ aᵏ/k! of each square matrix of a
// [..., n, n] (torch.linalg.matrix_exp, scipy.linalg.expm, TensorFlow's
// linalg.expm): Higham's scaling and squaring (2005) in float64, the
// [m/m] Padé approximant of the first degree m of 3, 5, 7, 9 and 13 whose
// bound θ_m holds ‖a‖₁, else a scaled by 2⁻ˢ to ‖a‖₁ ≤ θ₁₃ and the
// approximant squared s times; accurate to about ‖a‖₁ times the unit
// roundoff, relative to ‖exp(a)‖ (the approximant's denominator cancels:
// exp(7) of a 1×1 matrix is 23 ulps off, where PyTorch's Taylor-based
// method is exact). Its gradient is exp's Fréchet
// derivative at aᵀ, by the exponential of a block matrix of twice the
// order. A matrix holding ±∞ or NaN gives NaN. float32 (computed in
// float64, rounded once) or float64.
func MatrixExp(a *tensor.Tensor) *tensor.Tensor { return eager.Run1(matrixExpOp, nil, a) }
