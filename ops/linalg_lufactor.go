package ops

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// The LU factorization as a value (ops/linalg_lu.go registers its op):
// LU, solves with its factors, and its factors unpacked. Its gradient is
// ops, so it differentiates to any order.

// LU factors each square matrix of a [..., n, n] with partial pivoting
// (LAPACK's getrf, in float64): P·a = L·U with L unit lower triangular
// and U upper triangular. lu holds both, packed as getrf does (L below
// the diagonal, its ones implied; U on and above), in a's dtype and
// shape; pivots [..., n] Int32 are the row exchanged with row j at step j
// (0-based: LAPACK's ipiv less one); perm [..., n] Int32 is the
// permutation they make, row i of P·a being row perm[i] of a (JAX's
// lax.linalg.lu returns the same three). A zero pivot leaves its column
// as it is (a singular a factors without error: U has a zero on its
// diagonal). Differentiable in a through lu (the integer outputs have no
// gradient). float32 or float64.
func LU(a *tensor.Tensor) (lu, pivots, perm *tensor.Tensor) {
	out := eager.Run(luOp, nil, a)
	return out[0], out[1], out[2]
}

// LUSolveOpts chooses the system LUSolve solves: a·x = b, or aᵀ·x = b
// where Transpose.
type LUSolveOpts struct {
	Transpose bool
}

// LUSolve returns x with a·x = b (aᵀ·x = b where opts.Transpose) for the
// a that LU factored into lu [..., n, n] and perm [..., n], b [..., n,
// k]; batch dimensions broadcast (torch.linalg.lu_solve, with the
// permutation where it takes the pivots). Composed of TakeAlongAxis and
// two triangular solves, so it runs on every device and is
// differentiable in lu and b. A zero on U's diagonal gives ±∞ and NaN.
// Panics with a *tensor.Error when lu is not square, perm not Int32 of
// lu's shape less its last dimension, or b not [..., n, k].
func LUSolve(lu, perm, b *tensor.Tensor, opts LUSolveOpts) *tensor.Tensor {
	needInputs("LUSolve", lu, perm, b)
	defer asOp("LUSolve")
	in := []*tensor.Tensor{lu, perm, b}
	if lu.Rank() < 2 || lu.Dim(-1) != lu.Dim(-2) {
		fail("LUSolve", tensor.ErrShape, in, "lu %v is not a square matrix or a batch of them ([..., n, n])", lu.Shape())
	}
	if perm.DType() != tensor.Int32 || !perm.Shape().Equal(lu.Shape()[:lu.Rank()-1]) {
		fail("LUSolve", tensor.ErrShape, in, "perm must be Int32 %v (lu %v less its last dimension), got %s",
			lu.Shape()[:lu.Rank()-1], lu.Shape(), tensor.Describe(perm))
	}
	if b.Rank() < 2 || b.Dim(-2) != lu.Dim(-1) {
		fail("LUSolve", tensor.ErrShape, in, "b %v is not [batch..., %d, k] for lu %v", b.Shape(), lu.Dim(-1), lu.Shape())
	}
	var t temps
	defer t.release()
	if blu, bb := broadcastBatches("LUSolve", lu, b); blu != lu {
		lu, perm = t.keep(blu), t.keep(BroadcastTo(perm, blu.Shape()[:blu.Rank()-1]...))
		if bb != b {
			b = t.keep(bb)
		}
	} else if bb != b {
		b = t.keep(bb)
	}
	if !opts.Transpose { // x = U⁻¹·L⁻¹·(P·b)
		y := t.keep(TriangularSolve(lu, t.keep(permuteRows(b, perm)), TriangularSolveOpts{UnitDiagonal: true}))
		return TriangularSolve(lu, y, TriangularSolveOpts{Upper: true})
	}
	// aᵀ = Uᵀ·Lᵀ·P: x = Pᵀ·L⁻ᵀ·U⁻ᵀ·b.
	z := t.keep(TriangularSolve(lu, b, TriangularSolveOpts{Upper: true, Transpose: true}))
	y := t.keep(TriangularSolve(lu, z, TriangularSolveOpts{Transpose: true, UnitDiagonal: true}))
	return permuteRows(y, t.keep(ArgSort(perm, -1, false)))
}

// permuteRows is x [..., n, k] with row i taken from row p[..., i] (P·x
// for LU's perm p; Pᵀ·x for p's inverse), p of x's batch shape.
func permuteRows(x, p *tensor.Tensor) *tensor.Tensor {
	idx := ExpandDims(p, -1)
	defer releaseTemp(idx)
	return TakeAlongAxis(x, idx, -2)
}

// LUUnpack returns LU's factors as matrices: p, l and u with a = p·l·u
// (torch.lu_unpack's and SciPy's lu convention; p = Pᵀ for LU's P), l
// unit lower triangular, u upper triangular, each [..., n, n] in lu's
// dtype. Differentiable in lu. Panics with a *tensor.Error when lu is not
// square or perm not Int32 of lu's shape less its last dimension.
func LUUnpack(lu, perm *tensor.Tensor) (p, l, u *tensor.Tensor) {
	needInputs("LUUnpack", lu, perm)
	defer asOp("LUUnpack")
	if lu.Rank() < 2 || lu.Dim(-1) != lu.Dim(-2) || perm.DType() != tensor.Int32 || !perm.Shape().Equal(lu.Shape()[:lu.Rank()-1]) {
		fail("LUUnpack", tensor.ErrShape, []*tensor.Tensor{lu, perm}, "lu must be [..., n, n] and perm Int32 [..., n], got %s and %s",
			tensor.Describe(lu), tensor.Describe(perm))
	}
	onehot := OneHot(perm, lu.Dim(-1), lu.DType()) // P: row i has its 1 at perm[i]
	defer releaseTemp(onehot)
	return matrixT(onehot), unitLower(lu), Triu(lu, 0)
}

// unitLower is L of the packed factors lu: their strict lower triangle
// and a unit diagonal.
func unitLower(lu *tensor.Tensor) *tensor.Tensor {
	strict, eye := Tril(lu, -1), eyeLike(lu)
	defer releaseTemp(strict)
	defer releaseTemp(eye)
	return Add(strict, eye)
}

// luBackward is a's gradient from Ḡ, the gradient of its packed factors
// lu (perm LU's permutation): with L̄ Ḡ's strict lower triangle and Ū its
// upper, ā = Pᵀ·L⁻ᵀ·(tril₋₁(Lᵀ·L̄) + triu(Ū·Uᵀ))·U⁻ᵀ (from L⁻¹·P·da·U⁻¹ =
// L⁻¹·dL + dU·U⁻¹, whose strict lower part is the first term and upper
// part the second).
func luBackward(lu, perm, g *tensor.Tensor) *tensor.Tensor {
	var t temps
	defer t.release()
	l, u := t.keep(unitLower(lu)), t.keep(Triu(lu, 0))
	lower := t.keep(Tril(t.keep(MatMulT(l, t.keep(Tril(g, -1)), true, false)), -1))
	upper := t.keep(Triu(t.keep(MatMulT(t.keep(Triu(g, 0)), u, false, true)), 0))
	y := t.keep(TriangularSolve(lu, t.keep(Add(lower, upper)), TriangularSolveOpts{Transpose: true, UnitDiagonal: true})) // L⁻ᵀ·M
	z := t.keep(matrixT(t.keep(TriangularSolve(lu, t.keep(matrixT(y)), TriangularSolveOpts{Upper: true}))))               // Y·U⁻ᵀ = (U⁻¹·Yᵀ)ᵀ
	return permuteRows(z, t.keep(ArgSort(perm, -1, false)))
}
