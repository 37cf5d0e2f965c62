package cpu

import (
	"math"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/attnmask"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernels of ScaledDotProductAttention and its backprop (ops/attention.go).
// The forward takes a block of query rows against the keys a block at a
// time: the block's scores are one GEMM, an online softmax rescales the
// running sums as each block's maximum rises, and the probabilities times
// the values are another GEMM; only the rows' log-sum-exps are kept, no
// score matrix. The backward takes a block of query rows against all the
// keys (memory: the block's rows of scores), recomputing the
// probabilities from the log-sum-exps, with GEMMs for the scores, the
// probabilities' gradient and the three results; it accumulates the key
// and value gradients over the blocks of a batch, so its work is split by
// batch (and head). A causal call skips the key blocks wholly after a
// query block.

// attnBlock is the rows of queries (and keys, in the forward) taken at a
// time.
const attnBlock = 64

// attnGeom is one call's sizes: batch matrices of tq queries and tk keys,
// d features of query and key, dv of value; where the mask's elements
// lie (attnmask.Layout).
type attnGeom struct {
	batch, tq, tk, d, dv int
	mask                 attnmask.Layout
}

func attnGeomOf(q, k, v, mask *tensor.Tensor) attnGeom {
	r := q.Rank()
	g := attnGeom{tq: q.Dim(-2), tk: k.Dim(-2), d: q.Dim(-1), dv: v.Dim(-1)}
	g.batch = tensor.Shape(q.Shape()[:r-2]).NumElements()
	if mask != nil {
		g.mask, _ = attnmask.Of(q.Shape()[:r-2], g.tq, g.tk, mask.Shape()) // checked by the op
	}
	return g
}

// keeps reports whether query i attends to key j of batch b.
func (g attnGeom) keeps(mask []bool, causal bool, b, i, j int) bool {
	if causal && j > i {
		return false
	}
	return mask == nil || mask[b/g.mask.Rep*g.mask.Step+i*g.mask.Row+j]
}

// maskRow sets to -Inf the scores of row, query i's against keys j0 on of
// batch b, that query i does not attend to.
func maskRow[T tensor.Float](g attnGeom, row []T, mask []bool, causal bool, b, i, j0 int) {
	if mask == nil {
		if causal {
			for j := max(i+1-j0, 0); j < len(row); j++ {
				row[j] = T(math.Inf(-1))
			}
		}
		return
	}
	for j := range row {
		if !g.keeps(mask, causal, b, i, j0+j) {
			row[j] = T(math.Inf(-1))
		}
	}
}

// causalKept is how many of the n keys from j0 on query i may see by
// causality alone: all n, or up to key i; the rest of a causal row is 0
// after the softmax's exp, which need not be computed.
func causalKept(causal bool, i, j0, n int) int {
	if !causal {
		return n
	}
	return min(max(i+1-j0, 0), n)
}

// keyEnd is where the keys a block of queries ending (exclusive) at i1
// may see end: all of them, or i1 where causal.
func (g attnGeom) keyEnd(causal bool, i1 int) int {
	if causal {
		return min(i1, g.tk)
	}
	return g.tk
}

// mulRows sets x to x·y elementwise (float32 by the vector kernel).
func mulRows[T tensor.Float](x, y []T) {
	if len(x) > 0 && !vecVV(x, x, y, smul) {
		for i := range x {
			x[i] *= y[i]
		}
	}
}

// rowMax is the largest of x (n > 0; float32 by the vector kernel).
func rowMax[T tensor.Float](x []T) T {
	if x32, ok := any(x).([]float32); ok && haveVecKernels {
		return any(smax(&x32[0], len(x32))).(T)
	}
	m := x[0]
	for _, v := range x[1:] {
		if v > m {
			m = v
		}
	}
	return m
}

// scaleRow sets x to x·s (float32 by the vector kernel).
func scaleRow[T tensor.Float](x []T, s T) {
	if len(x) > 0 && !vecScalar(x, x, s, smuls) {
		for i := range x {
			x[i] *= s
		}
	}
}

// expInPlace sets x to exp(x) (float32 by the vector kernel).
func expInPlace[T tensor.Float](x []T) {
	if x32, ok := any(x).([]float32); ok {
		exp32Loop(x32, x32)
		return
	}
	for i, v := range x {
		x[i] = T(math.Exp(float64(v)))
	}
}

func attentionKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	q, k, v := c.Inputs[0], c.Inputs[1], c.Inputs[2]
	var mask []bool
	if len(c.Inputs) == 4 {
		mask = data[bool](c.Inputs[3])
	}
	a := c.Attrs.(ops.AttentionAttrs)
	g := attnGeomOf(q, k, v, maskTensor(c.Inputs))
	qs, ks, vs, out := data[T](q), data[T](k), data[T](v), data[T](outs[0])
	lse := outs[1]
	blocks := (g.tq + attnBlock - 1) / attnBlock
	deviceOf(c).Parallel(g.batch*blocks, float64(attnBlock*g.tk*(g.d+g.dv)), func(lo, hi int) {
		s := make([]T, attnBlock*attnBlock)
		acc := make([]T, attnBlock*g.dv)
		m, l := make([]float64, attnBlock), make([]float64, attnBlock)
		for task := lo; task < hi; task++ {
			b, i0 := task/blocks, task%blocks*attnBlock
			i1 := min(i0+attnBlock, g.tq)
			bq := i1 - i0
			qb := qs[(b*g.tq+i0)*g.d : (b*g.tq+i1)*g.d]
			for r := range bq {
				m[r], l[r] = math.Inf(-1), 0
			}
			clear(acc[:bq*g.dv])
			for j0 := 0; j0 < g.keyEnd(a.Causal, i1); j0 += attnBlock {
				j1 := min(j0+attnBlock, g.tk)
				bk := j1 - j0
				sb := s[:bq*bk]
				gemmAcc(nil, bq, bk, g.d, qb, false, ks[(b*g.tk+j0)*g.d:(b*g.tk+j1)*g.d], true, sb, false)
				for r := range bq {
					row := sb[r*bk : (r+1)*bk]
					// The keys causality hides weigh 0: their scores are
					// neither scaled nor exponentiated.
					live := row[:causalKept(a.Causal, i0+r, j0, bk)]
					clear(row[len(live):])
					if len(live) == 0 {
						continue
					}
					scaleRow(live, T(a.Scale))
					maskRow(g, live, mask, false, b, i0+r, j0)
					mNew := max(m[r], float64(rowMax(live)))
					if math.IsInf(mNew, -1) { // nothing kept yet: no weight
						clear(live)
						continue
					}
					if alpha := math.Exp(m[r] - mNew); alpha != 1 {
						l[r] *= alpha
						scaleRow(acc[r*g.dv:(r+1)*g.dv], T(alpha))
					}
					addScalar(live, live, T(-mNew))
					expInPlace(live)
					l[r] += float64(sumReducer[T]().row(0, row))
					m[r] = mNew
				}
				gemmAcc(nil, bq, g.dv, bk, sb, false, vs[(b*g.tk+j0)*g.dv:(b*g.tk+j1)*g.dv], false, acc[:bq*g.dv], true)
			}
			for r := range bq {
				row := b*g.tq + i0 + r
				o := out[row*g.dv : (row+1)*g.dv]
				for x := range o {
					o[x] = T(float64(acc[r*g.dv+x]) / l[r]) // NaN where every key is masked (0/0)
				}
				setLSE(lse, row, m[r]+math.Log(l[r]))
			}
		}
	})
}

// maskTensor is the mask among an attention call's inputs, or nil.
func maskTensor(in []*tensor.Tensor) *tensor.Tensor {
	if len(in) == 4 || len(in) == 8 {
		return in[len(in)-1]
	}
	return nil
}

// setLSE and getLSE write and read element i of the log-sum-exp tensor
// (float32, or float64 for float64 attention).
func setLSE(t *tensor.Tensor, i int, v float64) {
	if t.DType() == tensor.Float64 {
		data[float64](t)[i] = v
		return
	}
	data[float32](t)[i] = float32(v)
}

func getLSE(t *tensor.Tensor, i int) float64 {
	if t.DType() == tensor.Float64 {
		return data[float64](t)[i]
	}
	return float64(data[float32](t)[i])
}

func attentionBackpropKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	q, k, v, out, lse, dout, dlse := c.Inputs[0], c.Inputs[1], c.Inputs[2], c.Inputs[3], c.Inputs[4], c.Inputs[5], c.Inputs[6]
	var mask []bool
	if len(c.Inputs) == 8 {
		mask = data[bool](c.Inputs[7])
	}
	a := c.Attrs.(ops.AttentionAttrs)
	g := attnGeomOf(q, k, v, maskTensor(c.Inputs))
	qs, ks, vs, os, dos := data[T](q), data[T](k), data[T](v), data[T](out), data[T](dout)
	dq, dk, dv := data[T](outs[0]), data[T](outs[1]), data[T](outs[2])
	deviceOf(c).Parallel(g.batch, float64(g.tq*g.tk*(2*g.d+2*g.dv)), func(lo, hi int) {
		p, dp := make([]T, attnBlock*g.tk), make([]T, attnBlock*g.tk)
		for b := lo; b < hi; b++ {
			kb, vb := ks[b*g.tk*g.d:(b+1)*g.tk*g.d], vs[b*g.tk*g.dv:(b+1)*g.tk*g.dv]
			dkb, dvb := dk[b*g.tk*g.d:(b+1)*g.tk*g.d], dv[b*g.tk*g.dv:(b+1)*g.tk*g.dv]
			clear(dkb)
			clear(dvb)
			for i0 := 0; i0 < g.tq; i0 += attnBlock {
				i1 := min(i0+attnBlock, g.tq)
				bq, tk := i1-i0, g.keyEnd(a.Causal, i1) // keys after tk have no weight
				if tk == 0 {
					clear(dq[(b*g.tq+i0)*g.d : (b*g.tq+i1)*g.d])
					continue
				}
				qb, dob := qs[(b*g.tq+i0)*g.d:(b*g.tq+i1)*g.d], dos[(b*g.tq+i0)*g.dv:(b*g.tq+i1)*g.dv]
				pb, dpb := p[:bq*tk], dp[:bq*tk]
				var dobs []T                                                           // dO with the rows of nothing zeroed, where there are any
				gemmAcc(nil, bq, tk, g.d, qb, false, kb[:tk*g.d], true, pb, false)     // scores
				gemmAcc(nil, bq, tk, g.dv, dob, false, vb[:tk*g.dv], true, dpb, false) // dP = dO·Vᵀ
				for r := range bq {
					row := b*g.tq + i0 + r
					li := getLSE(lse, row)
					delta := -getLSE(dlse, row) // rowsum(dO ⊙ O) less the log-sum-exp's gradient
					for x, d := range dob[r*g.dv : (r+1)*g.dv] {
						delta += float64(d) * float64(os[row*g.dv+x])
					}
					pr, dpr := pb[r*tk:(r+1)*tk], dpb[r*tk:(r+1)*tk]
					if math.IsInf(li, -1) { // a row of nothing: no weights, no gradients (delta is NaN)
						clear(pr)
						clear(dpr)
					} else {
						// The keys causality hides: P and dS are 0.
						n := causalKept(a.Causal, i0+r, 0, tk)
						live, dlive := pr[:n], dpr[:n]
						clear(pr[n:])
						clear(dpr[n:])
						scaleRow(live, T(a.Scale))
						addScalar(live, live, T(-li))
						maskRow(g, live, mask, false, b, i0+r, 0)
						expInPlace(live) // masked keys: 0
						// dS = P ⊙ (dP - delta)·scale, over dP's buffer.
						addScalar(dlive, dlive, T(-delta))
						mulRows(dlive, live)
						scaleRow(dlive, T(a.Scale))
					}
					if math.IsInf(li, -1) && dobs == nil { // a row of nothing: its dO must not reach dV (0·NaN)
						dobs = append([]T(nil), dob...)
					}
					if dobs != nil && math.IsInf(li, -1) {
						clear(dobs[r*g.dv : (r+1)*g.dv])
					}
				}
				if dobs != nil {
					dob, dobs = dobs, nil
				}
				gemmAcc(nil, bq, g.d, tk, dpb, false, kb[:tk*g.d], false, dq[(b*g.tq+i0)*g.d:(b*g.tq+i1)*g.d], false) // dQ = dS·K
				gemmAcc(nil, tk, g.d, bq, dpb, true, qb, false, dkb[:tk*g.d], true)                                   // dK += dSᵀ·Q
				gemmAcc(nil, tk, g.dv, bq, pb, true, dob, false, dvb[:tk*g.dv], true)                                 // dV += Pᵀ·dO
			}
		}
	})
}

func init() {
	kernels{f32: attentionKernel[float32], f64: attentionKernel[float64]}.register("ScaledDotProductAttention")
	kernels{f32: attentionBackpropKernel[float32], f64: attentionBackpropKernel[float64]}.register("ScaledDotProductAttentionBackprop")
}
