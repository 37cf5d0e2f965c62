package ops

import (
	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Linear algebra of square matrices, each over the last two dimensions
// of a batch of them (leading dimensions): Cholesky's factorization and
// the triangular solves that use it. float32 and float64; float32
// accumulates in float64, rounding each stored element once.

var choleskyOp, triangularSolveOp *eager.Op

// linalgTypes are the dtypes the factorizations take.
var linalgTypes = []tensor.DType{tensor.Float32, tensor.Float64}

func init() {
	choleskyOp = eager.Register(&eager.Op{
		Name: "Cholesky", Inputs: 1, DTypes: linalgTypes,
		Infer: func(c *eager.Call) []eager.Out {
			a := c.Inputs[0]
			needSquare(c, a, "a")
			return c.Out1(a.DType(), a.Shape())
		},
		Grad:      choleskyGrad,
		GradReads: eager.ReadsOutputs,
	})
	triangularSolveOp = eager.Register(&eager.Op{
		Name: "TriangularSolve", Inputs: 2, DTypes: linalgTypes, SameDTypes: true,
		Infer: func(c *eager.Call) []eager.Out { return c.Out1(c.Inputs[1].DType(), systemShape(c)) },
		Grad:  triangularSolveGrad,
	})
}

// matrixDims fails c unless its input is a matrix or a batch of them
// ([..., m, n]), and returns its dtype, batch shape, m, n and k = min(m,
// n): the reduced factorizations' dimensions.
func matrixDims(c *eager.Call) (dt tensor.DType, batch tensor.Shape, m, n, k int) {
	a := c.Inputs[0]
	if a.Rank() < 2 {
		c.Fail(tensor.ErrRank, "a %v is not a matrix or a batch of them ([..., m, n])", a.Shape())
	}
	m, n = a.Dim(-2), a.Dim(-1)
	return a.DType(), a.Shape()[:a.Rank()-2], m, n, min(m, n)
}

// needSquare fails c unless x is a square matrix or a batch of them.
func needSquare(c *eager.Call, x *tensor.Tensor, name string) {
	if x.Rank() < 2 || x.Dim(-1) != x.Dim(-2) {
		c.Fail(tensor.ErrShape, "%s %v is not a square matrix or a batch of them ([..., n, n])", name, x.Shape())
	}
}

// choleskyGrad is the gradient of the lower triangle that Cholesky reads:
// with L the factor and Ḡ its gradient, X = L⁻ᵀ·Φ(Lᵀ·Ḡ)·L⁻¹ (Murray,
// "Differentiation of the Cholesky decomposition", 2016; TensorFlow's
// rule) and the gradient Φ(X + Xᵀ), Φ the lower triangle with its
// diagonal halved. TensorFlow and PyTorch return the symmetric ½(X + Xᵀ)
// instead; through a symmetric a made of other tensors both give them
// the same gradient.
func choleskyGrad(g *eager.Grad) []*tensor.Tensor {
	l, dl := g.Outputs[0], g.OutGrads[0]
	var t temps
	defer t.release()
	p := t.keep(lowerHalved(t.keep(MatMulT(l, dl, true, false))))
	back := TriangularSolveOpts{Transpose: true}
	y := t.keep(TriangularSolve(l, p, back))                                   // L⁻ᵀ·P
	x := t.keep(matrixT(t.keep(TriangularSolve(l, t.keep(matrixT(y)), back)))) // (L⁻ᵀ·Yᵀ)ᵀ = Y·L⁻¹
	return []*tensor.Tensor{lowerHalved(t.keep(Add(x, t.keep(matrixT(x)))))}
}

// triangularSolveGrad: with x = a⁻¹·b (a⁻ᵀ·b where transposed), b's
// gradient solves the other way, ∂b = a⁻ᵀ·Ḡ (a⁻¹·Ḡ), and a's is -∂b·xᵀ
// (-x·∂bᵀ) kept to the triangle the op reads.
func triangularSolveGrad(g *eager.Grad) []*tensor.Tensor {
	a, x, dx := g.Inputs[0], g.Outputs[0], g.OutGrads[0]
	at := g.Attrs.(opattr.TriangularSolveAttrs)
	opts := TriangularSolveOpts{Upper: at.Upper, Transpose: !at.Transpose, UnitDiagonal: at.UnitDiagonal}
	db := TriangularSolve(a, dx, opts) // a's gradient needs it too
	var da *tensor.Tensor
	if g.Needs[0] {
		var p *tensor.Tensor
		if at.Transpose {
			p = MatMulT(x, db, false, true)
		} else {
			p = MatMulT(db, x, false, true)
		}
		neg := Neg(p)
		da = triangleOf(neg, at)
		releaseTemp(p)
		releaseTemp(neg)
	}
	return []*tensor.Tensor{da, db}
}

// triangleOf is m kept to the triangle a TriangularSolve of at reads
// (the diagonal left out where it is a unit one).
func triangleOf(m *tensor.Tensor, at opattr.TriangularSolveAttrs) *tensor.Tensor {
	k := 0
	if at.UnitDiagonal {
		k = 1
	}
	if at.Upper {
		return Triu(m, k)
	}
	return Tril(m, -k)
}

// lowerHalved is Φ(m): m's lower triangle with its diagonal halved (a
// mask of m's dtype: 1 below the diagonal, ½ on it).
func lowerHalved(m *tensor.Tensor) *tensor.Tensor {
	n := m.Dim(-1)
	mask := make([]float64, n*n)
	for i := range n {
		for j := range i {
			mask[i*n+j] = 1
		}
		mask[i*n+i] = 0.5
	}
	w := Cast(tensor.FromSliceOn(m.Device(), mask, n, n), m.DType())
	defer releaseTemp(w)
	return Mul(m, w)
}

// matrixT is m with its last two dimensions swapped.
func matrixT(m *tensor.Tensor) *tensor.Tensor { return Transpose(m, lastTwo(m.Rank())...) }

// lastTwo is the permutation of rank dimensions that swaps the last two.
func lastTwo(rank int) []int {
	perm := make([]int, rank)
	for i := range perm {
		perm[i] = i
	}
	perm[rank-2], perm[rank-1] = rank-1, rank-2
	return perm
}

// Cholesky returns the lower-triangular L with L·Lᵀ = a for a symmetric
// positive-definite a [..., n, n] (a batch over the leading dimensions),
// zeros above the diagonal; only a's lower triangle is read (LAPACK's
// potrf, TensorFlow's Cholesky). Where a's lower triangle is not
// positive definite (a pivot not above 0, or NaN), that matrix of the
// result is NaN, as JAX's: no error, on any device. Its gradient is that
// of the lower triangle it reads (choleskyGrad). float32 or float64.
func Cholesky(a *tensor.Tensor) *tensor.Tensor { return eager.Run1(choleskyOp, nil, a) }

// TriangularSolveOpts configure TriangularSolve. The zero value solves
// a·x = b with a's lower triangle.
type TriangularSolveOpts struct {
	// Upper reads a's upper triangle instead of its lower.
	Upper bool
	// Transpose solves aᵀ·x = b.
	Transpose bool
	// UnitDiagonal takes a's diagonal as ones, without reading it.
	UnitDiagonal bool
}

// TriangularSolve returns x with a·x = b (aᵀ·x = b where opts.Transpose)
// for a triangular a [..., n, n] and b [..., n, k], their batch
// dimensions broadcast (TensorFlow's matrix_triangular_solve, XLA's
// TriangularSolve on the left): the triangle opts names is read, the
// other ignored. A zero on the diagonal gives ±∞ and NaN, as LAPACK's
// trsm, with no error. float32 or float64, one dtype.
func TriangularSolve(a, b *tensor.Tensor, opts TriangularSolveOpts) *tensor.Tensor {
	needInputs("TriangularSolve", a, b)
	defer asOp("TriangularSolve")
	a, b = broadcastBatches("TriangularSolve", a, b)
	return eager.Run1(triangularSolveOp, opattr.TriangularSolveAttrs{Upper: opts.Upper, Transpose: opts.Transpose, UnitDiagonal: opts.UnitDiagonal}, a, b)
}

// CholeskySolve returns x with (l·lᵀ)·x = b for Cholesky's factor l
// [..., n, n] and b [..., n, k] (batch dimensions broadcast): two
// triangular solves (torch.cholesky_solve, TensorFlow's cholesky_solve).
func CholeskySolve(l, b *tensor.Tensor) *tensor.Tensor {
	needInputs("CholeskySolve", l, b)
	defer asOp("CholeskySolve")
	y := TriangularSolve(l, b, TriangularSolveOpts{})
	x := TriangularSolve(l, y, TriangularSolveOpts{Transpose: true})
	releaseTemp(y)
	return x
}

// broadcastBatches broadcasts the leading (batch) dimensions of the
// matrices a [..., n, n] and b [..., n, k] against each other.
func broadcastBatches(op string, a, b *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) {
	if a.Rank() < 2 || b.Rank() < 2 {
		fail(op, tensor.ErrRank, []*tensor.Tensor{a, b}, "a %v and b %v need rank 2 or more ([..., n, n] and [..., n, k])", a.Shape(), b.Shape())
	}
	ab, bb := a.Shape()[:a.Rank()-2], b.Shape()[:b.Rank()-2]
	if ab.Equal(bb) {
		return a, b
	}
	batch, ok := broadcastAll(ab, bb)
	if !ok {
		fail(op, tensor.ErrShape, []*tensor.Tensor{a, b}, "batch dimensions %v and %v do not broadcast", ab, bb)
	}
	to := func(x *tensor.Tensor) *tensor.Tensor {
		shape := append(append(tensor.Shape{}, batch...), x.Shape()[x.Rank()-2:]...)
		if x.Shape().Equal(shape) {
			return x
		}
		return BroadcastTo(x, shape...)
	}
	return to(a), to(b)
}
