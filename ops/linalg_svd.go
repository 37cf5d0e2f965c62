package ops

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// The singular value decomposition, by one-sided Jacobi rotations in
// float64 (Hestenes'): accurate to the last places of the small singular
// values too.

var svdOp *eager.Op

func init() {
	svdOp = eager.Register(&eager.Op{
		Name: "SVD", Inputs: 1, DTypes: linalgTypes,
		Infer: func(c *eager.Call) []eager.Out {
			dt, batch, m, n, k := matrixDims(c)
			return []eager.Out{
				{DType: dt, Shape: append(batch.Clone(), m, k)},
				{DType: dt, Shape: append(batch.Clone(), k)},
				{DType: dt, Shape: append(batch.Clone(), k, n)},
			}
		},
		Grad:      svdGrad,
		GradReads: eager.ReadsOutputs,
	})
}

// svdGrad is Townsend's rule ("Differentiating the singular value
// decomposition", 2016) for a = U·diag(s)·Vᵀ, k = min(m, n):
//
//	ā = U·(J·S + diag(s̄) + S·K)·Vᵀ + (I - U·Uᵀ)·Ū·S⁻¹·Vᵀ + U·S⁻¹·V̄ᵀ·(I - V·Vᵀ)
//
// with J = F∘(Uᵀ·Ū - Ūᵀ·U), K = F∘(Vᵀ·V̄ - V̄ᵀ·V), F[i][j] = 1/(sⱼ² - sᵢ²)
// off the diagonal: ±∞ and NaN where singular values repeat or are 0
// and the vectors' gradients are not, as PyTorch's. The terms of a
// vector output no gradient reached are left out (the singular values
// alone have a finite gradient where they repeat).
func svdGrad(g *eager.Grad) []*tensor.Tensor {
	u, s, vt := g.Outputs[0], g.Outputs[1], g.Outputs[2]
	du, ds, dvt := g.OutGrads[0], g.OutGrads[1], g.OutGrads[2]
	var t temps
	defer t.release()
	k := s.Dim(-1)
	constant := func(e []float64) *tensor.Tensor {
		return t.keep(Cast(tensor.FromSliceOn(s.Device(), e, k, k), s.DType()))
	}
	eye := constant(identity(k))
	row, col := t.keep(ExpandDims(s, -2)), t.keep(ExpandDims(s, -1)) // S on the right, on the left
	inner := t.keep(Mul(t.keep(ExpandDims(ds, -1)), eye))
	var f, v, dv *tensor.Tensor
	if g.Reached(0) || g.Reached(2) {
		off := constant(offDiagonal(k))
		s2 := t.keep(Square(s))
		gap := t.keep(Add(t.keep(Sub(t.keep(ExpandDims(s2, -2)), t.keep(ExpandDims(s2, -1)))), eye)) // sⱼ² - sᵢ², 1 on the diagonal
		f = t.keep(Div(off, gap))
		v, dv = t.keep(matrixT(vt)), t.keep(matrixT(dvt))
	}
	antisym := func(x, dx *tensor.Tensor) *tensor.Tensor { // xᵀ·dx - dxᵀ·x
		p := t.keep(MatMulT(x, dx, true, false))
		return t.keep(Sub(p, t.keep(matrixT(p))))
	}
	if g.Reached(0) {
		inner = t.keep(Add(inner, t.keep(Mul(t.keep(Mul(f, antisym(u, du))), row))))
	}
	if g.Reached(2) {
		inner = t.keep(Add(inner, t.keep(Mul(col, t.keep(Mul(f, antisym(v, dv)))))))
	}
	grad := MatMul(t.keep(MatMul(u, inner)), vt)
	add := func(x *tensor.Tensor) {
		sum := Add(grad, x)
		releaseTemp(grad)
		grad = sum
	}
	// The parts outside the spans of U and V, where m > k or n > k.
	m, n := u.Dim(-2), vt.Dim(-1)
	if m > k && g.Reached(0) {
		duS := t.keep(Div(du, row)) // Ū·S⁻¹
		proj := t.keep(Sub(duS, t.keep(MatMul(u, t.keep(MatMulT(u, duS, true, false))))))
		add(t.keep(MatMul(proj, vt)))
	}
	if n > k && g.Reached(2) {
		dvS := t.keep(Div(dvt, col)) // S⁻¹·V̄ᵀ
		proj := t.keep(Sub(dvS, t.keep(MatMulT(t.keep(MatMul(dvS, v)), v, false, true))))
		add(t.keep(MatMul(u, proj)))
	}
	return []*tensor.Tensor{grad}
}

// SVD returns the reduced singular value decomposition of each matrix of
// a [..., m, n]: u [..., m, k] and vt [..., k, n] with orthonormal
// columns and rows, and the singular values s [..., k] in descending
// order, k = min(m, n), a = u·diag(s)·vt (torch.linalg.svd with
// full_matrices false; TensorFlow's svd returns s, u, v). One-sided
// Jacobi rotations in float64; each pair of singular vectors signed so
// that u's component of largest magnitude (the first of equals) is
// positive; where a is rank-deficient, u's columns for the zero singular
// values complete an orthonormal set. The vectors' gradients divide by
// the gaps between squared singular values: ±∞ and NaN where they repeat
// or vanish. A matrix holding ±∞ or NaN gives NaN. float32 or float64.
func SVD(a *tensor.Tensor) (u, s, vt *tensor.Tensor) {
	out := eager.Run(svdOp, nil, a)
	return out[0], out[1], out[2]
}
