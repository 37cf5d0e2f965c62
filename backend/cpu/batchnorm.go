package cpu

import (
	"math"

	"github.com/eagerflow/eagerflow/backend/move"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernels of BatchNorm and its backprop (ops/batchnorm.go), x viewed as
// [outer, C, inner] with the features C in the middle (NHWC: inner 1;
// NCHW: outer the batch, inner the image). Sums per feature are float64,
// each of a fixed number of tasks over outer adding its own partial sums,
// added in task order, so results do not depend on the threads. The
// forward takes the mean, then the variance about it (two passes, as the
// ops spelled out do), then writes y; the backward sums dy and dy·(x −
// mean) per feature, then writes dx. float32 runs through the vector
// kernels where the CPU has them (batchnorm_vec.go).

// bnView is a call's x as [outer, C, inner] and its per-feature sums.
type bnView struct {
	c                *eager.Call
	outer, ch, inner int
	count            float64 // elements per feature: outer·inner
	tasks            int
}

func newBNView(c *eager.Call) *bnView {
	a := c.Attrs.(ops.BatchNormAttrs)
	outer, ch, inner := move.Split(c.Inputs[0].Shape(), a.Axis)
	return &bnView{c: c, outer: outer, ch: ch, inner: inner, count: float64(outer * inner), tasks: max(1, min(outer, normTasks))}
}

// sums runs body over the rows [lo, hi) of outer of each task, with that
// task's k·C partial sums, and returns the partials added in task order.
func (v *bnView) sums(k int, body func(lo, hi int, acc []float64)) []float64 {
	part := make([]float64, v.tasks*k*v.ch)
	deviceOf(v.c).Parallel(v.tasks, float64(v.outer*v.ch*v.inner)/float64(v.tasks)*4, func(tlo, thi int) {
		for t := tlo; t < thi; t++ {
			body(t*v.outer/v.tasks, (t+1)*v.outer/v.tasks, part[t*k*v.ch:(t+1)*k*v.ch])
		}
	})
	total := part[:k*v.ch]
	for t := 1; t < v.tasks; t++ {
		for i, s := range part[t*k*v.ch : (t+1)*k*v.ch] {
			total[i] += s
		}
	}
	return total
}

// each runs body over rows [lo, hi) of outer, in parallel.
func (v *bnView) each(cost float64, body func(lo, hi int)) {
	deviceOf(v.c).Parallel(v.outer, cost*float64(v.ch*v.inner), body)
}

// rows runs body for each row of outer in [lo, hi): its C·inner elements
// from e.
func (v *bnView) rows(lo, hi int, body func(e int)) {
	for o := lo; o < hi; o++ {
		body(o * v.ch * v.inner)
	}
}

// scaled finishes the forward's statistics: the variance over the count,
// both statistics written to outs[1] and outs[2], and each feature's
// scale γ·r (r = 1/√(variance + epsilon), as the backward's and the
// GPU's) and offset β (0 without one).
func scaled[T tensor.Float](v *bnView, outs []*tensor.Tensor, gamma, beta []T, mean, variance []float64, eps float64) (scale, offset []float64) {
	scale, offset = make([]float64, v.ch), make([]float64, v.ch)
	for f := range variance {
		variance[f] /= v.count
		scale[f] = float64(gamma[f]) * (1 / math.Sqrt(variance[f]+eps))
		if beta != nil {
			offset[f] = float64(beta[f])
		}
		setStat(outs[1], f, mean[f])
		setStat(outs[2], f, variance[f])
	}
	return scale, offset
}

// gradCoefficients finishes the backward's sums (Σdy, then Σdy·(x −
// mean), C each): the scale's and offset's gradients written to dgamma
// and dbeta, and each feature's γ·r, k2 and k3 of dx = γ·r·dy + k3 +
// k2·(x − mean), from dγ = r·Σdy·(x − mean), dβ = Σdy and the statistics'
// own gradients (∂mean/∂x = 1/M, ∂variance/∂x = 2(x − mean)/M).
func gradCoefficients[T tensor.Float](v *bnView, c *eager.Call, gamma, dgamma, dbeta []T, sums []float64, eps float64) (gr, k2, k3 []float64) {
	gr, k2, k3 = make([]float64, v.ch), make([]float64, v.ch), make([]float64, v.ch)
	for f := range v.ch {
		r := 1 / math.Sqrt(statAt(c.Inputs[3], f)+eps)
		db, dg := sums[f], sums[v.ch+f]*r
		if v.count == 0 {
			dg = 0 // a sum of nothing, whatever r (NaN) is
		}
		dbeta[f], dgamma[f] = T(db), T(dg)
		gr[f] = float64(gamma[f]) * r
		k2[f] = (2*statAt(c.Inputs[6], f) - gr[f]*r*dg) / v.count
		k3[f] = (statAt(c.Inputs[5], f) - gr[f]*db) / v.count
	}
	return gr, k2, k3
}

func batchNormKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	a := c.Attrs.(ops.BatchNormAttrs)
	v := newBNView(c)
	xs, gamma, y := data[T](c.Inputs[0]), data[T](c.Inputs[1]), data[T](outs[0])
	var beta []T
	if len(c.Inputs) == 3 {
		beta = data[T](c.Inputs[2])
	}
	if v.ch == 0 {
		return // no features: nothing to write
	}
	if x32, ok := any(xs).([]float32); ok && v.vec32() {
		var b32 []float32
		if beta != nil {
			b32 = any(beta).([]float32)
		}
		batchNorm32(v, outs, x32, any(gamma).([]float32), b32, any(y).([]float32), a.Epsilon)
		return
	}
	n := v.ch * v.inner
	mean := v.sums(1, func(lo, hi int, acc []float64) {
		v.rows(lo, hi, func(e int) {
			if v.inner == 1 {
				xr := xs[e : e+n]
				acc := acc[:len(xr)] // the bounds known, the checks go
				for f, x := range xr {
					acc[f] += float64(x)
				}
				return
			}
			for f := range v.ch {
				s := 0.0
				for _, x := range xs[e+f*v.inner : e+(f+1)*v.inner] {
					s += float64(x)
				}
				acc[f] += s
			}
		})
	})
	for f := range mean {
		mean[f] /= v.count // NaN for no elements, as the ops' mean
	}
	variance := v.sums(1, func(lo, hi int, acc []float64) {
		v.rows(lo, hi, func(e int) {
			if v.inner == 1 {
				xr := xs[e : e+n]
				acc, mean := acc[:len(xr)], mean[:len(xr)]
				for f, x := range xr {
					d := float64(x) - mean[f]
					acc[f] += d * d
				}
				return
			}
			for f := range v.ch {
				s, m := 0.0, mean[f]
				for _, x := range xs[e+f*v.inner : e+(f+1)*v.inner] {
					d := float64(x) - m
					s += d * d
				}
				acc[f] += s
			}
		})
	})
	scale, offset := scaled(v, outs, gamma, beta, mean, variance, a.Epsilon)
	v.each(4, func(lo, hi int) {
		v.rows(lo, hi, func(e int) {
			if v.inner == 1 {
				xr := xs[e : e+n]
				yr, mean, scale, offset := y[e:e+len(xr)], mean[:len(xr)], scale[:len(xr)], offset[:len(xr)]
				for f, x := range xr {
					yr[f] = T((float64(x)-mean[f])*scale[f] + offset[f])
				}
				return
			}
			for f := range v.ch {
				m, k, b, at := mean[f], scale[f], offset[f], e+f*v.inner
				for i, x := range xs[at : at+v.inner] {
					y[at+i] = T((float64(x)-m)*k + b)
				}
			}
		})
	})
}

func batchNormBackpropKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	a := c.Attrs.(ops.BatchNormAttrs)
	v := newBNView(c)
	xs, gamma, dy := data[T](c.Inputs[0]), data[T](c.Inputs[1]), data[T](c.Inputs[4])
	dx, dgamma, dbeta := data[T](outs[0]), data[T](outs[1]), data[T](outs[2])
	mean := make([]float64, v.ch)
	for f := range mean {
		mean[f] = statAt(c.Inputs[2], f)
	}
	if v.ch == 0 {
		return // no features: nothing to write
	}
	if x32, ok := any(xs).([]float32); ok && v.vec32() {
		batchNormBackprop32(v, x32, any(gamma).([]float32), any(dy).([]float32), any(dx).([]float32),
			any(dgamma).([]float32), any(dbeta).([]float32), mean, a.Epsilon)
		return
	}
	n := v.ch * v.inner
	// Per feature: Σdy, then Σdy·(x − mean).
	sums := v.sums(2, func(lo, hi int, acc []float64) {
		v.rows(lo, hi, func(e int) {
			if v.inner == 1 {
				xr := xs[e : e+n]
				dyr, sg, sgx, mean := dy[e:e+len(xr)], acc[:len(xr)], acc[v.ch:v.ch+len(xr)], mean[:len(xr)]
				for f, x := range xr {
					g := float64(dyr[f])
					sg[f] += g
					sgx[f] += g * (float64(x) - mean[f])
				}
				return
			}
			for f := range v.ch {
				sg, sgx, m, at := 0.0, 0.0, mean[f], e+f*v.inner
				for i, x := range xs[at : at+v.inner] {
					g := float64(dy[at+i])
					sg += g
					sgx += g * (float64(x) - m)
				}
				acc[f] += sg
				acc[v.ch+f] += sgx
			}
		})
	})
	gr, k2, k3 := gradCoefficients(v, c, gamma, dgamma, dbeta, sums, a.Epsilon)
	// γ·r·dy and k3 are added first, the product rounded (never fused
	// with k3), so that a feature of one element (x = mean) gets exactly
	// the zero gradient it has.
	v.each(6, func(lo, hi int) {
		v.rows(lo, hi, func(e int) {
			if v.inner == 1 {
				xr := xs[e : e+n]
				dxr, dyr, gr, k2, k3, mean := dx[e:e+len(xr)], dy[e:e+len(xr)], gr[:len(xr)], k2[:len(xr)], k3[:len(xr)], mean[:len(xr)]
				for f, x := range xr {
					dxr[f] = T(float64(gr[f]*float64(dyr[f])) + k3[f] + k2[f]*(float64(x)-mean[f]))
				}
				return
			}
			for f := range v.ch {
				m, g, s, t, at := mean[f], gr[f], k2[f], k3[f], e+f*v.inner
				for i, x := range xs[at : at+v.inner] {
					dx[at+i] = T(float64(g*float64(dy[at+i])) + t + s*(float64(x)-m))
				}
			}
		})
	})
}

func init() {
	kernels{f32: batchNormKernel[float32], f64: batchNormKernel[float64]}.register("BatchNorm")
	kernels{f32: batchNormBackpropKernel[float32], f64: batchNormBackpropKernel[float64]}.register("BatchNormBackprop")
}
