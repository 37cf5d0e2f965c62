package ops

import (
	"github.com/eagerflow/eagerflow/tensor"
)

// Functions of matrices composed of the factorizations and other ops:
// each runs on every device and differentiates through its parts.

// Diagonal returns the main diagonal of each square matrix of a [..., n,
// n], a tensor [..., n] (torch.diagonal over the last two dimensions,
// TensorFlow's matrix_diag_part): Sum(a·I, -1). Numbers.
func Diagonal(a *tensor.Tensor) *tensor.Tensor {
	needInputs("Diagonal", a)
	defer asOp("Diagonal")
	if a.Rank() < 2 || a.Dim(-1) != a.Dim(-2) {
		fail("Diagonal", tensor.ErrShape, []*tensor.Tensor{a}, "a %v is not a square matrix or a batch of them ([..., n, n])", a.Shape())
	}
	eye := eyeLike(a)
	defer releaseTemp(eye)
	masked := Mul(a, eye)
	defer releaseTemp(masked)
	return Sum(masked, -1)
}

// eyeLike is the identity matrix of a's last dimension, dtype and
// device.
func eyeLike(a *tensor.Tensor) *tensor.Tensor {
	n := a.Dim(-1)
	return Cast(tensor.FromSliceOn(a.Device(), identity(n), n, n), a.DType())
}

// Trace returns the sum of each square matrix's diagonal, a tensor of
// a's batch shape. Numbers.
func Trace(a *tensor.Tensor) *tensor.Tensor {
	needInputs("Trace", a)
	defer asOp("Trace")
	d := Diagonal(a)
	defer releaseTemp(d)
	return Sum(d, -1)
}

// Lstsq returns the least-squares solution x [..., n, k] of a·x ≈ b for
// a [..., m, n] of full rank and b [..., m, k], batches broadcast: for m
// ≥ n the x minimizing ‖a·x - b‖ (x = r⁻¹·qᵀ·b, a = q·r), for m < n the
// x of least norm with a·x = b (x = q·r⁻ᵀ·b, aᵀ = q·r). By QR, not by
// the normal equations, so a's condition number is not squared
// (torch.linalg.lstsq's "gels", NumPy's lstsq for full-rank a). A
// rank-deficient a gives ±∞ and NaN. float32 or float64.
func Lstsq(a, b *tensor.Tensor) *tensor.Tensor {
	needInputs("Lstsq", a, b)
	defer asOp("Lstsq")
	if a.Rank() < 2 || b.Rank() < 2 || a.Dim(-2) != b.Dim(-2) {
		fail("Lstsq", tensor.ErrShape, []*tensor.Tensor{a, b}, "a %v and b %v are not [..., m, n] and [..., m, k]", a.Shape(), b.Shape())
	}
	a, b = broadcastBatches("Lstsq", a, b)
	var t temps
	defer t.release()
	if a.Dim(-2) >= a.Dim(-1) {
		q, r := QR(a)
		t.keep(q)
		t.keep(r)
		return TriangularSolve(r, t.keep(MatMulT(q, b, true, false)), TriangularSolveOpts{Upper: true})
	}
	q, r := QR(t.keep(matrixT(a)))
	t.keep(q)
	t.keep(r)
	return MatMul(q, t.keep(TriangularSolve(r, b, TriangularSolveOpts{Upper: true, Transpose: true})))
}

// Pinv returns the Moore–Penrose pseudo-inverse [..., n, m] of each
// matrix of a [..., m, n], by SVD: v·diag(1/s)·uᵀ, singular values at or
// below max(m, n)·ε·max(s) taken as 0 (ε float32's or float64's epsilon:
// torch.linalg.pinv's and NumPy's default cut-off). float32 or float64.
func Pinv(a *tensor.Tensor) *tensor.Tensor {
	needInputs("Pinv", a)
	defer asOp("Pinv")
	var t temps
	defer t.release()
	u, s, vt := SVD(a)
	t.keepAll(u, s, vt)
	eps := 0x1p-52
	if a.DType() == tensor.Float32 {
		eps = 0x1p-23
	}
	rtol := t.keep(ScalarLike(s, float64(max(a.Dim(-2), a.Dim(-1)))*eps))
	cut := t.keep(Mul(t.keep(Reduce(s, Reduction{Kind: ReduceMax, Dims: []int{-1}, KeepDims: true})), rtol))
	keep := t.keep(Gt(s, cut))
	one, zero := t.keep(ScalarLike(s, 1)), t.keep(ScalarLike(s, 0))
	inv := t.keep(Where(keep, t.keep(Div(one, t.keep(Where(keep, s, one)))), zero)) // no 1/0 for a derivative to meet
	scaled := t.keep(Mul(t.keep(matrixT(vt)), t.keep(ExpandDims(inv, -2))))
	return MatMulT(scaled, u, false, true)
}

// MatrixNorm returns a norm of each matrix of a [..., m, n], a tensor of
// the batch shape (torch.linalg.matrix_norm's ords): "fro" (√Σa²), "nuc"
// (the singular values' sum), "2" and "-2" (the largest and smallest
// singular values), "1" and "-1" (the largest and smallest column sums of
// |a|), "inf" and "-inf" (the same of rows). float32 or float64 (the
// singular values' ords) or floats; an unknown ord is a *tensor.Error.
func MatrixNorm(a *tensor.Tensor, ord string) *tensor.Tensor {
	needInputs("MatrixNorm", a)
	defer asOp("MatrixNorm")
	if a.Rank() < 2 {
		fail("MatrixNorm", tensor.ErrRank, []*tensor.Tensor{a}, "a %v is not a matrix or a batch of them ([..., m, n])", a.Shape())
	}
	var t temps
	defer t.release()
	singular := func() *tensor.Tensor {
		u, s, vt := SVD(a)
		t.keep(u)
		t.keep(vt)
		return t.keep(s)
	}
	sums := func(axis int) *tensor.Tensor { return t.keep(Sum(t.keep(Abs(a)), axis)) }
	switch ord {
	case "fro":
		return Norm(a, 2, -2, -1)
	case "nuc":
		return Sum(singular(), -1)
	case "2":
		return Amax(singular(), -1)
	case "-2":
		return Amin(singular(), -1)
	case "1":
		return Amax(sums(-2), -1)
	case "-1":
		return Amin(sums(-2), -1)
	case "inf":
		return Amax(sums(-1), -1)
	case "-inf":
		return Amin(sums(-1), -1)
	}
	fail("MatrixNorm", tensor.ErrValue, []*tensor.Tensor{a}, "ord %q: want fro, nuc, 2, -2, 1, -1, inf or -inf", ord)
	return nil
}
