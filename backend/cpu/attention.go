package cpu

import (
	"math"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernels of ScaledDotProductAttention and its backprop (ops/attention.go).
// The forward takes each query row against the keys a block at a time
// with an online softmax (the running maximum rescales the sums), so no
// score matrix is kept: memory is a row's block of scores. It writes the
// row's log-sum-exp, from which the backward recomputes each probability
// exp(s - lse) where it needs it. Rows of the forward run in parallel;
// the backward accumulates the key and value gradients over rows, so its
// work is split by batch (and head).

// attnBlock is the keys a query row scores at a time.
const attnBlock = 64

// attnGeom is one call's sizes: batch matrices of tq queries and tk keys,
// d features of query and key, dv of value; the mask's batch stride (0:
// one [tq tk] mask for all).
type attnGeom struct {
	batch, tq, tk, d, dv int
	maskStep             int
}

func attnGeomOf(q, k, v, mask *tensor.Tensor) attnGeom {
	r := q.Rank()
	g := attnGeom{tq: q.Dim(-2), tk: k.Dim(-2), d: q.Dim(-1), dv: v.Dim(-1)}
	g.batch = tensor.Shape(q.Shape()[:r-2]).NumElements()
	if mask != nil && mask.Rank() > 2 {
		g.maskStep = g.tq * g.tk
	}
	return g
}

// keeps reports whether query i attends to key j of batch b.
func (g attnGeom) keeps(mask []bool, causal bool, b, i, j int) bool {
	if causal && j > i {
		return false
	}
	return mask == nil || mask[b*g.maskStep+i*g.tk+j]
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
	rows := g.batch * g.tq
	deviceOf(c).Parallel(rows, float64(g.tk*(g.d+g.dv)), func(lo, hi int) {
		scores := make([]float64, attnBlock)
		acc := make([]float64, g.dv)
		for row := lo; row < hi; row++ {
			b, i := row/g.tq, row%g.tq
			qi := qs[row*g.d : (row+1)*g.d]
			m, l := math.Inf(-1), 0.0
			clear(acc)
			for j0 := 0; j0 < g.tk; j0 += attnBlock {
				j1 := min(j0+attnBlock, g.tk)
				bm := math.Inf(-1)
				for j := j0; j < j1; j++ {
					s := math.Inf(-1)
					if g.keeps(mask, a.Causal, b, i, j) {
						kj := ks[(b*g.tk+j)*g.d:][:g.d]
						dot := 0.0
						for x, qv := range qi {
							dot += float64(qv) * float64(kj[x])
						}
						s = dot * a.Scale
					}
					scores[j-j0] = s
					bm = math.Max(bm, s)
				}
				if math.IsInf(bm, -1) {
					continue // every key of the block masked
				}
				mNew := math.Max(m, bm)
				rescale := math.Exp(m - mNew)
				l *= rescale
				for x := range acc {
					acc[x] *= rescale
				}
				for j := j0; j < j1; j++ {
					p := math.Exp(scores[j-j0] - mNew)
					if p == 0 {
						continue
					}
					l += p
					vj := vs[(b*g.tk+j)*g.dv:][:g.dv]
					for x, vv := range vj {
						acc[x] += p * float64(vv)
					}
				}
				m = mNew
			}
			o := out[row*g.dv : (row+1)*g.dv]
			for x := range o {
				o[x] = T(acc[x] / l) // NaN where every key is masked (0/0)
			}
			setLSE(lse, row, m+math.Log(l))
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
		// float64 sums for the batch's key and value gradients
		dkAcc, dvAcc, dqi := make([]float64, g.tk*g.d), make([]float64, g.tk*g.dv), make([]float64, g.d)
		for b := lo; b < hi; b++ {
			clear(dkAcc)
			clear(dvAcc)
			for i := 0; i < g.tq; i++ {
				row := b*g.tq + i
				qi, doi, oi := qs[row*g.d:][:g.d], dos[row*g.dv:][:g.dv], os[row*g.dv:][:g.dv]
				// rowsum(dout ⊙ out), less the log-sum-exp's gradient:
				// ds = p·(dp - delta) then carries both.
				delta := -getLSE(dlse, row)
				for x, d := range doi {
					delta += float64(d) * float64(oi[x])
				}
				li := getLSE(lse, row)
				clear(dqi)
				for j := 0; j < g.tk; j++ {
					if !g.keeps(mask, a.Causal, b, i, j) {
						continue
					}
					kj, vj := ks[(b*g.tk+j)*g.d:][:g.d], vs[(b*g.tk+j)*g.dv:][:g.dv]
					dot := 0.0
					for x, qv := range qi {
						dot += float64(qv) * float64(kj[x])
					}
					p := math.Exp(dot*a.Scale - li)
					dp := 0.0
					for x, d := range doi {
						dvAcc[j*g.dv+x] += p * float64(d)
						dp += float64(d) * float64(vj[x])
					}
					ds := p * (dp - delta) * a.Scale
					for x := range qi {
						dqi[x] += ds * float64(kj[x])
						dkAcc[j*g.d+x] += ds * float64(qi[x])
					}
				}
				for x, v := range dqi {
					dq[row*g.d+x] = T(v)
				}
			}
			for j := range dkAcc {
				dk[b*g.tk*g.d+j] = T(dkAcc[j])
			}
			for j := range dvAcc {
				dv[b*g.tk*g.dv+j] = T(dvAcc[j])
			}
		}
	})
}

func init() {
	kernels{f32: attentionKernel[float32], f64: attentionKernel[float64]}.register("ScaledDotProductAttention")
	kernels{f32: attentionBackpropKernel[float32], f64: attentionBackpropKernel[float64]}.register("ScaledDotProductAttentionBackprop")
}
