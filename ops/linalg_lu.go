package ops

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// The functions of general square matrices, by LU factorization with
// partial pivoting (LAPACK's getrf: the largest magnitude of each column
// below the diagonal as its pivot, the first on ties), each computed in
// float64: LU itself, Solve, Inverse, Det and Slogdet. A singular matrix
// is not an error: its solve holds ±∞ and NaN (as JAX's), its
// determinant is 0.

var luOp, solveOp, detOp, slogdetOp *eager.Op

func init() {
	// Outputs lu (a's dtype and shape), pivots and perm (Int32 [..., n]).
	luOp = eager.Register(&eager.Op{
		Name: "LU", Inputs: 1, DTypes: linalgTypes,
		Infer: func(c *eager.Call) []eager.Out {
			a := c.Inputs[0]
			needSquare(c, a, "a")
			return luOuts(a)
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			if !g.Reached(0) {
				return []*tensor.Tensor{nil}
			}
			return []*tensor.Tensor{luBackward(g.Outputs[0], g.Outputs[2], g.OutGrads[0])}
		},
		GradReads: eager.ReadsOutputs,
	})
	// Outputs x, then a's factorization as LU's (which x's gradient
	// reuses: a's gradient solves with it instead of factoring aᵀ).
	solveOp = eager.Register(&eager.Op{
		Name: "Solve", Inputs: 2, DTypes: linalgTypes, SameDTypes: true,
		Infer: func(c *eager.Call) []eager.Out {
			x := eager.Out{DType: c.Inputs[1].DType(), Shape: systemShape(c)}
			return append([]eager.Out{x}, luOuts(c.Inputs[0])...)
		},
		Grad:      solveGrad,
		GradReads: eager.ReadsOutputs,
	})
	detOp = eager.Register(&eager.Op{
		Name: "Det", Inputs: 1, DTypes: linalgTypes,
		Infer: func(c *eager.Call) []eager.Out {
			a := c.Inputs[0]
			needSquare(c, a, "a")
			return c.Out1(a.DType(), a.Shape()[:a.Rank()-2].Clone())
		},
		Grad: detGrad,
	})
	slogdetOp = eager.Register(&eager.Op{
		Name: "Slogdet", Inputs: 1, DTypes: linalgTypes,
		Infer: func(c *eager.Call) []eager.Out {
			a := c.Inputs[0]
			needSquare(c, a, "a")
			batch := a.Shape()[:a.Rank()-2]
			return []eager.Out{{DType: a.DType(), Shape: batch.Clone()}, {DType: a.DType(), Shape: batch.Clone()}}
		},
		Grad:      slogdetGrad,
		GradReads: eager.ReadsInputs,
	})
}

// systemShape checks the system a·x = b of c's inputs, a [..., n, n] and
// b [..., n, k] of one batch shape, and returns x's shape (b's).
func systemShape(c *eager.Call) tensor.Shape {
	a, b := c.Inputs[0], c.Inputs[1]
	needSquare(c, a, "a")
	if b.Rank() != a.Rank() || !b.Shape()[:b.Rank()-2].Equal(a.Shape()[:a.Rank()-2]) || b.Dim(-2) != a.Dim(-1) {
		c.Fail(tensor.ErrShape, "b %v is not [batch..., %d, k] for a %v", b.Shape(), a.Dim(-1), a.Shape())
	}
	return b.Shape()
}

// luOuts are LU's outputs for a [..., n, n]: the factors packed in a's
// dtype and shape, the exchanges and the permutation Int32 [..., n].
func luOuts(a *tensor.Tensor) []eager.Out {
	rows := a.Shape()[:a.Rank()-1].Clone()
	return []eager.Out{{DType: a.DType(), Shape: a.Shape()}, {DType: tensor.Int32, Shape: rows}, {DType: tensor.Int32, Shape: rows.Clone()}}
}

// solveGrad: with x = a⁻¹·b, ∂b = a⁻ᵀ·Ḡ (by the forward's factors) and
// ∂a = -∂b·xᵀ, plus what the factors' own gradient gives (luBackward).
func solveGrad(g *eager.Grad) []*tensor.Tensor {
	x, lu, perm := g.Outputs[0], g.Outputs[1], g.Outputs[3]
	var da, db *tensor.Tensor
	if dx := g.OutGrads[0]; g.Reached(0) {
		db = LUSolve(lu, perm, dx, LUSolveOpts{Transpose: true}) // a's gradient needs it too
		if g.Needs[0] {
			p := MatMulT(db, x, false, true)
			da = Neg(p)
			releaseTemp(p)
		}
	}
	if dlu := g.OutGrads[1]; g.Reached(1) && g.Needs[0] {
		d := luBackward(lu, perm, dlu)
		if da == nil {
			da = d
		} else {
			sum := Add(da, d)
			releaseTemp(da)
			releaseTemp(d)
			da = sum
		}
	}
	if !g.Needs[1] && db != nil {
		releaseTemp(db)
		db = nil
	}
	return []*tensor.Tensor{da, db}
}

// inverseT is a⁻ᵀ, the gradient of ln|det a|, solved with a's own LU
// factors, those Det and Slogdet multiply the pivots of: where their
// determinant is not 0, no pivot is, and a⁻ᵀ is finite (factoring aᵀ
// instead, a matrix singular but for rounding can meet a zero pivot that
// a's factors do not have: ±∞ times a determinant of 1e-15). NaN and ±∞
// where a is singular.
func inverseT(a *tensor.Tensor) *tensor.Tensor {
	var t temps
	defer t.release()
	lu, pivots, perm := LU(a)
	t.keepAll(lu, pivots, perm)
	return LUSolve(lu, perm, t.keep(eyeLike(a)), LUSolveOpts{Transpose: true})
}

// detGrad: ∂a = Ḡ·C with C the cofactor matrix, det(a)·a⁻ᵀ where every
// determinant of the batch is nonzero. Where one is 0, a⁻ᵀ does not
// exist but C does (a rank n-1 matrix has a nonzero one), and the batch's
// C comes from the SVD instead (cofactorsBySVD, PyTorch 2's way). Which
// way is read on the host; a trace guards it.
func detGrad(g *eager.Grad) []*tensor.Tensor {
	var t temps
	defer t.release()
	a, det := g.Inputs[0], g.Outputs[0]
	scale := t.keep(ExpandDims(t.keep(ExpandDims(g.OutGrads[0], -1)), -1))
	zeros := t.keep(Eq(det, t.keep(ScalarLike(det, 0))))
	if countNonzero("Det's gradient", zeros) > 0 {
		return []*tensor.Tensor{Mul(t.keep(cofactorsBySVD(a)), scale)}
	}
	d := t.keep(ExpandDims(t.keep(ExpandDims(det, -1)), -1))
	return []*tensor.Tensor{Mul(t.keep(inverseT(a)), t.keep(Mul(scale, d)))}
}

// cofactorsBySVD is the cofactor matrix of each a [..., n, n], singular or
// not: with a = u·diag(s)·vᵀ, C = det(u)·det(v)·u·diag(p)·vᵀ where pᵢ is
// the product of the singular values but sᵢ (the adjugate of a product
// being the product of the adjugates, in turn; Σ's adjugate is diag(p)).
// pᵢ multiplies the sⱼ before i by those after, so no sⱼ is divided by.
func cofactorsBySVD(a *tensor.Tensor) *tensor.Tensor {
	var t temps
	defer t.release()
	u, s, vt := SVD(a)
	t.keepAll(u, s, vt)
	p := t.keep(Mul(t.keep(Cumprod(s, -1, true, false)), t.keep(Cumprod(s, -1, true, true))))
	sign := t.keep(Mul(t.keep(Det(u)), t.keep(Det(vt))))
	p = t.keep(Mul(p, t.keep(ExpandDims(sign, -1))))
	return MatMul(t.keep(Mul(u, t.keep(ExpandDims(p, -2)))), vt)
}

// slogdetGrad: ln|det a|'s gradient Ḡ·a⁻ᵀ; the sign has none.
func slogdetGrad(g *eager.Grad) []*tensor.Tensor {
	var t temps
	defer t.release()
	scale := t.keep(ExpandDims(t.keep(ExpandDims(g.OutGrads[1], -1)), -1))
	return []*tensor.Tensor{Mul(t.keep(inverseT(g.Inputs[0])), scale)}
}

// Solve returns x with a·x = b for a square a [..., n, n] and b [..., n,
// k], their batch dimensions broadcast (torch.linalg.solve's and
// TensorFlow's matrix_solve with a matrix b; a vector b is b[..., n, 1]):
// LU factorization with partial pivoting, in float64. A singular a gives
// ±∞ and NaN, with no error. float32 or float64, one dtype. Its gradient
// solves with the forward's factors (in a's dtype) rather than factoring
// aᵀ again, as PyTorch's does.
func Solve(a, b *tensor.Tensor) *tensor.Tensor {
	needInputs("Solve", a, b)
	defer asOp("Solve")
	a, b = broadcastBatches("Solve", a, b)
	out := eager.Run(solveOp, nil, a, b)
	for _, t := range out[1:] { // a tape that recorded the op holds them
		releaseTemp(t)
	}
	return out[0]
}

// Inverse returns a⁻¹ for a square a [..., n, n]: Solve(a, I). A
// singular a gives ±∞ and NaN.
func Inverse(a *tensor.Tensor) *tensor.Tensor {
	needInputs("Inverse", a)
	defer asOp("Inverse")
	if a.Rank() < 2 || a.Dim(-1) != a.Dim(-2) {
		fail("Inverse", tensor.ErrShape, []*tensor.Tensor{a}, "a %v is not a square matrix or a batch of them ([..., n, n])", a.Shape())
	}
	eye := eyeLike(a)
	defer releaseTemp(eye)
	return Solve(a, eye)
}

// identity is the n×n identity matrix's elements, row-major.
func identity(n int) []float64 {
	e := make([]float64, n*n)
	for i := range n {
		e[i*n+i] = 1
	}
	return e
}

// Det returns the determinant of each matrix of a [..., n, n] (a tensor
// of the batch shape): the product of its LU factor's pivots, signed by
// the row exchanges; 0 where a is singular; 1 for n = 0. Its gradient is
// Ḡ times the cofactor matrix, det·a⁻ᵀ, or by the SVD where a batch holds
// a determinant of 0 (a singular matrix's cofactors, as PyTorch 2's).
// float32 or float64.
func Det(a *tensor.Tensor) *tensor.Tensor { return eager.Run1(detOp, nil, a) }

// Slogdet returns the sign of each matrix's determinant (-1, 0 or 1) and
// the logarithm of its magnitude (-∞ where it is 0), each of the batch
// shape (torch.linalg.slogdet, TensorFlow's log_matrix_determinant): a
// determinant past float64's range keeps its logarithm. The logarithm's
// gradient is Ḡ·a⁻ᵀ; the sign has none. float32 or float64.
func Slogdet(a *tensor.Tensor) (sign, logAbsDet *tensor.Tensor) {
	out := eager.Run(slogdetOp, nil, a)
	return out[0], out[1]
}
