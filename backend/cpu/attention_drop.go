package cpu

import (
	"math"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernels of ScaledDotProductAttentionDropout and its backprop
// (ops/attention_drop.go), the reference a GPU's fused kernels are
// checked against (ops.AttentionDropout composes the op on the CPU,
// which stores the mask once instead of drawing it twice): a batch
// matrix at a time, its weights
// materialised (the scores by a GEMM, each row's softmax), the keep mask
// of the whole call drawn once from the stream (tensor.RandBernoulliAt,
// the draws ops.AttentionDropout's composition makes), the kept weights
// times 1/(1−rate) in the product with the values. The backward draws the
// same mask again and recomputes the weights from the log-sum-exps.

// dropMask is the call's keep factors [batch·tq·tk] (0 or 1/(1−rate),
// rounded to T as the composition's scalar is), from the draws a and the
// starts input (nil for none) name, in a tensor the caller releases.
func dropMask[T tensor.Float](a ops.AttentionDropoutAttrs, starts *tensor.Tensor, g attnGeom) *tensor.Tensor {
	base := a.Offset
	if starts != nil {
		base += uint64(data[int64](starts)[a.Slot])
	}
	t := tensor.RandBernoulliAt(device.Host(), a.Key, base, tensor.DTypeOf[T](), 1-a.Rate, g.batch*g.tq*g.tk)
	scaleRow(data[T](t), T(1/(1-a.Rate)))
	return t
}

// dropWeights sets row (query i's scores against keys 0 on of batch
// matrix b, scaled) to its softmax's weights, the keys after i hidden
// where causal, and those mask hides; it returns the row's log-sum-exp
// (−Inf, the row NaN, where every key is hidden).
func dropWeights[T tensor.Float](g attnGeom, row []T, mask []bool, causal bool, b, i int) float64 {
	live := row[:causalKept(causal, i, 0, len(row))]
	clear(row[len(live):])
	maskRow(g, live, mask, false, b, i, 0)
	m := T(math.Inf(-1))
	if len(live) > 0 {
		m = rowMax(live)
	}
	if math.IsInf(float64(m), -1) {
		for j := range row {
			row[j] = T(math.NaN())
		}
		return math.Inf(-1)
	}
	addScalar(live, live, -m)
	expInPlace(live)
	l := float64(sumReducer[T]().row(0, row))
	scaleRow(live, T(1/l))
	return float64(m) + math.Log(l)
}

func attentionDropoutKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	q, k, v := c.Inputs[0], c.Inputs[1], c.Inputs[2]
	a := c.Attrs.(ops.AttentionDropoutAttrs)
	starts, maskT := ops.DropoutExtras(c.Inputs[3:])
	g := attnGeomOf(q, k, v, maskT)
	var mask []bool
	if maskT != nil {
		mask = data[bool](maskT)
	}
	qs, ks, vs, out := data[T](q), data[T](k), data[T](v), data[T](outs[0])
	keep := dropMask[T](a, starts, g)
	defer keep.Release()
	z := data[T](keep)
	deviceOf(c).Parallel(g.batch, float64(g.tq*g.tk*(g.d+g.dv)), func(lo, hi int) {
		p := make([]T, g.tq*g.tk)
		for b := lo; b < hi; b++ {
			gemmAcc(nil, g.tq, g.tk, g.d, qs[b*g.tq*g.d:(b+1)*g.tq*g.d], false, ks[b*g.tk*g.d:(b+1)*g.tk*g.d], true, p, false)
			for i := range g.tq {
				row := p[i*g.tk : (i+1)*g.tk]
				scaleRow(row, T(a.Scale))
				setLSE(outs[1], b*g.tq+i, dropWeights(g, row, mask, a.Causal, b, i))
				mulRows(row, z[(b*g.tq+i)*g.tk:(b*g.tq+i+1)*g.tk])
			}
			gemmAcc(nil, g.tq, g.dv, g.tk, p, false, vs[b*g.tk*g.dv:(b+1)*g.tk*g.dv], false, out[b*g.tq*g.dv:(b+1)*g.tq*g.dv], false)
		}
	})
}

// Inputs q, k, v, out, lse, dout, dlse[, starts]; outputs dq, dk, dv:
// with P the weights and Z the keep factors, dV = (P⊙Z)ᵀ·dO, dS =
// P⊙((dO·Vᵀ)⊙Z − rowsum(dO⊙O) + dlse), dQ = dS·K·scale, dK = dSᵀ·Q·scale.
func attentionDropoutBackpropKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	q, k, v, o, lse, dout, dlse := c.Inputs[0], c.Inputs[1], c.Inputs[2], c.Inputs[3], c.Inputs[4], c.Inputs[5], c.Inputs[6]
	a := c.Attrs.(ops.AttentionDropoutAttrs)
	starts, maskT := ops.DropoutExtras(c.Inputs[7:])
	g := attnGeomOf(q, k, v, maskT)
	var mask []bool
	if maskT != nil {
		mask = data[bool](maskT)
	}
	qs, ks, vs, os, dos := data[T](q), data[T](k), data[T](v), data[T](o), data[T](dout)
	dq, dk, dv := data[T](outs[0]), data[T](outs[1]), data[T](outs[2])
	keep := dropMask[T](a, starts, g)
	defer keep.Release()
	z := data[T](keep)
	deviceOf(c).Parallel(g.batch, float64(g.tq*g.tk*(2*g.d+2*g.dv)), func(lo, hi int) {
		p, dp := make([]T, g.tq*g.tk), make([]T, g.tq*g.tk)
		for b := lo; b < hi; b++ {
			qb, kb, vb, dob := qs[b*g.tq*g.d:(b+1)*g.tq*g.d], ks[b*g.tk*g.d:(b+1)*g.tk*g.d], vs[b*g.tk*g.dv:(b+1)*g.tk*g.dv], dos[b*g.tq*g.dv:(b+1)*g.tq*g.dv]
			gemmAcc(nil, g.tq, g.tk, g.d, qb, false, kb, true, p, false)
			gemmAcc(nil, g.tq, g.tk, g.dv, dob, false, vb, true, dp, false)
			for i := range g.tq {
				row, drow, zrow := p[i*g.tk:(i+1)*g.tk], dp[i*g.tk:(i+1)*g.tk], z[(b*g.tq+i)*g.tk:(b*g.tq+i+1)*g.tk]
				li := getLSE(lse, b*g.tq+i)
				if math.IsInf(li, -1) { // a row of nothing: no weights, no gradients
					clear(row)
					clear(drow)
					continue
				}
				delta := -getLSE(dlse, b*g.tq+i)
				for x, d := range dob[i*g.dv : (i+1)*g.dv] {
					delta += float64(d) * float64(os[(b*g.tq+i)*g.dv+x])
				}
				live := causalKept(a.Causal, i, 0, g.tk)
				clear(row[live:])
				clear(drow[live:])
				scaleRow(row[:live], T(a.Scale))
				addScalar(row[:live], row[:live], T(-li))
				maskRow(g, row[:live], mask, false, b, i, 0)
				expInPlace(row[:live])            // hidden keys: 0
				mulRows(drow[:live], zrow[:live]) // (dO·Vᵀ)⊙Z
				addScalar(drow[:live], drow[:live], T(-delta))
				mulRows(drow[:live], row[:live]) // dS
				scaleRow(drow[:live], T(a.Scale))
				mulRows(row[:live], zrow[:live]) // P⊙Z, for dV
			}
			gemmAcc(nil, g.tq, g.d, g.tk, dp, false, kb, false, dq[b*g.tq*g.d:(b+1)*g.tq*g.d], false)
			gemmAcc(nil, g.tk, g.d, g.tq, dp, true, qb, false, dk[b*g.tk*g.d:(b+1)*g.tk*g.d], false)
			gemmAcc(nil, g.tk, g.dv, g.tq, p, true, dob, false, dv[b*g.tk*g.dv:(b+1)*g.tk*g.dv], false)
		}
	})
}

func init() {
	kernels{f32: attentionDropoutKernel[float32], f64: attentionDropoutKernel[float64]}.register("ScaledDotProductAttentionDropout")
	kernels{f32: attentionDropoutBackpropKernel[float32], f64: attentionDropoutBackpropKernel[float64]}.register("ScaledDotProductAttentionDropoutBackprop")
}
