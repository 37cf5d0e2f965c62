package ops

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// The QR factorization, by Householder reflections in float64.

var qrOp *eager.Op

func init() {
	qrOp = eager.Register(&eager.Op{
		Name: "QR", Inputs: 1, DTypes: linalgTypes,
		Infer: func(c *eager.Call) []eager.Out {
			dt, batch, m, n, k := matrixDims(c)
			return []eager.Out{{DType: dt, Shape: append(batch.Clone(), m, k)}, {DType: dt, Shape: append(batch.Clone(), k, n)}}
		},
		Grad:      qrGrad,
		GradReads: eager.ReadsOutputs,
	})
}

// qrGrad: for m ≥ n, ā = (Q̄ + Q·copyltu(M))·R⁻ᵀ with M = R·R̄ᵀ - Q̄ᵀ·Q
// and copyltu(M) M's lower triangle mirrored into the upper (Walter and
// Lehmann 2018; Liao et al. 2019, PyTorch's rule); for m < n, a = [X Y]
// with X = Q·U square, Ȳ = Q·V̄ and X̄ the square rule's with Q̄ + Y·V̄ᵀ
// and Ū. R must be invertible (a of full rank): ±∞ and NaN otherwise.
func qrGrad(g *eager.Grad) []*tensor.Tensor {
	q, r := g.Outputs[0], g.Outputs[1]
	dq, dr := g.OutGrads[0], g.OutGrads[1]
	if !g.Reached(0) { // their terms left out (nil): no zero products
		dq = nil
	}
	if !g.Reached(1) {
		dr = nil
	}
	m, n := q.Dim(-2), r.Dim(-1)
	if m >= n {
		return []*tensor.Tensor{qrTallGrad(q, r, dq, dr)}
	}
	var t temps
	defer t.release()
	// R = [U V]: U the square part, V = Qᵀ·Y.
	u, v := t.keep(lastSlice(r, 0, m)), t.keep(lastSlice(r, m, n))
	var du, dx, dy *tensor.Tensor
	if dr == nil {
		dx = t.keep(qrTallGrad(q, u, dq, nil))
		dy = t.keep(ZerosLike(v))
	} else {
		dv := t.keep(lastSlice(dr, m, n))
		du = t.keep(lastSlice(dr, 0, m))
		y := t.keep(MatMul(q, v))
		dqy := t.keep(MatMulT(y, dv, false, true))
		if dq != nil {
			dqy = t.keep(Add(dq, dqy))
		}
		dx = t.keep(qrTallGrad(q, u, dqy, du))
		dy = t.keep(MatMul(q, dv))
	}
	return []*tensor.Tensor{Concatenate(-1, dx, dy)}
}

// qrTallGrad is the rule of a tall (or square) factorization; a nil dq or
// dr is a gradient that is zero, its terms left out.
func qrTallGrad(q, r, dq, dr *tensor.Tensor) *tensor.Tensor {
	var t temps
	defer t.release()
	var mm *tensor.Tensor
	switch {
	case dq == nil:
		mm = t.keep(MatMulT(r, dr, false, true))
	case dr == nil:
		mm = t.keep(Neg(t.keep(MatMulT(dq, q, true, false))))
	default:
		mm = t.keep(Sub(t.keep(MatMulT(r, dr, false, true)), t.keep(MatMulT(dq, q, true, false))))
	}
	lower := t.keep(Tril(mm, -1))
	sym := t.keep(Add(t.keep(Tril(mm, 0)), t.keep(matrixT(lower)))) // copyltu(M)
	b := t.keep(MatMul(q, sym))
	if dq != nil {
		b = t.keep(Add(dq, b))
	}
	// B·R⁻ᵀ = (R⁻¹·Bᵀ)ᵀ: a solve with R's upper triangle.
	return matrixT(t.keep(TriangularSolve(r, t.keep(matrixT(b)), TriangularSolveOpts{Upper: true})))
}

// lastSlice is x[..., lo:hi] along the last dimension.
func lastSlice(x *tensor.Tensor, lo, hi int) *tensor.Tensor {
	start, limit := make([]int, x.Rank()), x.Shape().Clone()
	start[x.Rank()-1], limit[x.Rank()-1] = lo, hi
	return Slice(x, start, limit, nil)
}

// QR returns the reduced QR factorization of each matrix of a [..., m,
// n]: q [..., m, k] with orthonormal columns and r [..., k, n] upper
// triangular, k = min(m, n), a = q·r (torch.linalg.qr's "reduced" mode,
// TensorFlow's qr): Householder reflections in float64, each row of r
// signed so that its diagonal element is not negative (the factorization
// of a full-rank a is then unique; LAPACK's may differ by those signs).
// Its gradient needs r invertible (a of full rank). float32 or float64.
func QR(a *tensor.Tensor) (q, r *tensor.Tensor) {
	out := eager.Run(qrOp, nil, a)
	return out[0], out[1]
}
