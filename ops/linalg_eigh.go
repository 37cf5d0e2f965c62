package ops

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// The eigendecomposition of symmetric matrices, by Jacobi's rotations in
// float64: accurate to the last places of the small eigenvalues too.

var eighOp *eager.Op

func init() {
	eighOp = eager.Register(&eager.Op{
		Name: "Eigh", Inputs: 1, DTypes: linalgTypes,
		Infer: func(c *eager.Call) []eager.Out {
			a := c.Inputs[0]
			needSquare(c, a, "a")
			return []eager.Out{{DType: a.DType(), Shape: a.Shape()[:a.Rank()-1].Clone()}, {DType: a.DType(), Shape: a.Shape()}}
		},
		Grad:      eighGrad,
		GradReads: eager.ReadsOutputs,
	})
}

// eighGrad: with a = V·diag(λ)·Vᵀ, the symmetric gradient is V·(diag(λ̄)
// + F∘(Vᵀ·V̄))·Vᵀ, F[i][j] = 1/(λⱼ - λᵢ) off the diagonal and 0 on it
// (±∞ and NaN where eigenvalues repeat and V̄ is not 0, as PyTorch's;
// where no gradient reached V, as when only the eigenvalues are used, the
// term is left out, so that repeated eigenvalues give a finite gradient);
// the lower triangle Eigh reads gets Φ(G + Gᵀ), as Cholesky's.
func eighGrad(g *eager.Grad) []*tensor.Tensor {
	lam, v := g.Outputs[0], g.Outputs[1]
	dlam, dv := g.OutGrads[0], g.OutGrads[1]
	var t temps
	defer t.release()
	n := lam.Dim(-1)
	constant := func(e []float64) *tensor.Tensor {
		return t.keep(Cast(tensor.FromSliceOn(lam.Device(), e, n, n), lam.DType()))
	}
	eye := constant(identity(n))
	inner := t.keep(Mul(t.keep(ExpandDims(dlam, -1)), eye))
	if g.Reached(1) {
		// λⱼ - λᵢ at [i][j], 1 on the diagonal, where off's 0 makes F 0
		// (no 0/0 for a derivative of the rule to meet).
		off := constant(offDiagonal(n))
		gap := t.keep(Add(t.keep(Sub(t.keep(ExpandDims(lam, -2)), t.keep(ExpandDims(lam, -1)))), eye))
		inner = t.keep(Add(inner, t.keep(Mul(t.keep(Div(off, gap)), t.keep(MatMulT(v, dv, true, false))))))
	}
	full := t.keep(MatMulT(t.keep(MatMul(v, inner)), v, false, true))
	return []*tensor.Tensor{lowerHalved(t.keep(Add(full, t.keep(matrixT(full)))))}
}

// offDiagonal is the n×n matrix of ones off the diagonal, row-major.
func offDiagonal(n int) []float64 {
	e := make([]float64, n*n)
	for i := range e {
		if i/n != i%n {
			e[i] = 1
		}
	}
	return e
}

// Eigh returns the eigenvalues of each symmetric matrix of a [..., n, n]
// in ascending order ([..., n]) and its eigenvectors, the columns of
// [..., n, n] (a = V·diag(values)·Vᵀ), reading a's lower triangle only
// (torch.linalg.eigh, TensorFlow's self_adjoint_eig): cyclic Jacobi
// rotations in float64, each eigenvector signed so that its component of
// largest magnitude (the first of equals) is positive. The eigenvalues'
// gradient is V·diag(λ̄)·Vᵀ; the eigenvectors' divides by the gaps
// between eigenvalues, ±∞ and NaN where they repeat. A matrix holding ±∞
// or NaN gives NaN. float32 or float64.
func Eigh(a *tensor.Tensor) (values, vectors *tensor.Tensor) {
	out := eager.Run(eighOp, nil, a)
	return out[0], out[1]
}
