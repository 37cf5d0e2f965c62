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
// mean) per feature, then writes dx.

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

// each runs body for each row of outer (C·inner elements from e), in
// parallel.
func (v *bnView) each(cost float64, body func(e int)) {
	deviceOf(v.c).Parallel(v.outer, cost*float64(v.ch*v.inner), func(lo, hi int) {
		for o := lo; o < hi; o++ {
			body(o * v.ch * v.inner)
		}
	})
}

// rows runs body for each row of outer in [lo, hi).
func (v *bnView) rows(lo, hi int, body func(e int)) {
	for o := lo; o < hi; o++ {
		body(o * v.ch * v.inner)
	}
}

// runBuffer is a run's scratch for the vector kernels where vec says
// they run, else nil.
func (v *bnView) runBuffer(vec bool) []float32 {
	if !vec {
		return nil
	}
	return make([]float32, v.inner)
}

// Each pass below reads a row of C·inner elements: with the features
// last (inner 1) as one loop over them, otherwise a run of inner a
// feature.

func batchNormKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	a := c.Attrs.(ops.BatchNormAttrs)
	v := newBNView(c)
	xs, gamma, y := data[T](c.Inputs[0]), data[T](c.Inputs[1]), data[T](outs[0])
	var beta []T
	if len(c.Inputs) == 3 {
		beta = data[T](c.Inputs[2])
	}
	n := v.ch * v.inner
	x32, y32, vec := vecRuns(v, xs, y)
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
			if vec {
				for f := range v.ch {
					acc[f] += float64(ssum(&x32[e+f*v.inner], v.inner))
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
		tmp := v.runBuffer(vec) // a run less its mean, for the vector kernels
		v.rows(lo, hi, func(e int) {
			if vec {
				for f := range v.ch {
					sadds(&tmp[0], &x32[e+f*v.inner], -float32(mean[f]), v.inner)
					acc[f] += float64(sdot(&tmp[0], &tmp[0], v.inner))
				}
				return
			}
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
	scale, offset := make([]float64, v.ch), make([]float64, v.ch)
	for f := range variance {
		variance[f] /= v.count
		scale[f] = float64(gamma[f]) * (1 / math.Sqrt(variance[f]+a.Epsilon)) // γ·r, as the backward and the GPU's
		if beta != nil {
			offset[f] = float64(beta[f])
		}
		setStat(outs[1], f, mean[f])
		setStat(outs[2], f, variance[f])
	}
	v.each(4, func(e int) {
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
			if vec {
				sadds(&y32[at], &x32[at], -float32(m), v.inner)
				smuls(&y32[at], &y32[at], float32(k), v.inner)
				sadds(&y32[at], &y32[at], float32(b), v.inner)
				continue
			}
			for i, x := range xs[at : at+v.inner] {
				y[at+i] = T((float64(x)-m)*k + b)
			}
		}
	})
}

// bnVecRun is the shortest run of a feature (inner) that the float32
// vector kernels take.
const bnVecRun = 16

// vecRuns returns x and out as float32 and whether the float32 vector
// kernels take v's runs (a float32 x on a CPU that has them, runs of
// bnVecRun or more): sums in float32 a run, added in float64, as
// LayerNorm's rows are.
func vecRuns[T tensor.Float](v *bnView, x, out []T) (x32, out32 []float32, ok bool) {
	x32, ok = any(x).([]float32)
	if !ok || !haveVecKernels || v.inner < bnVecRun {
		return nil, nil, false
	}
	return x32, any(out).([]float32), true
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
	n := v.ch * v.inner
	x32, dx32, vec := vecRuns(v, xs, dx)
	var dy32 []float32
	if vec {
		dy32 = any(dy).([]float32)
	}
	// Per feature: Σdy, then Σdy·(x − mean).
	sums := v.sums(2, func(lo, hi int, acc []float64) {
		tmp := v.runBuffer(vec) // a run less its mean, for the vector kernels
		v.rows(lo, hi, func(e int) {
			if vec {
				for f := range v.ch {
					at := e + f*v.inner
					sadds(&tmp[0], &x32[at], -float32(mean[f]), v.inner)
					acc[f] += float64(ssum(&dy32[at], v.inner))
					acc[v.ch+f] += float64(sdot(&dy32[at], &tmp[0], v.inner))
				}
				return
			}
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
	// dx = γ·r·dy + k3 + k2·(x − mean), from the scale's and offset's
	// gradients dγ = r·Σdy·(x − mean) and dβ = Σdy and the statistics'
	// own: ∂mean/∂x = 1/M, ∂variance/∂x = 2(x − mean)/M. γ·r·dy and k3
	// are added first, so that a feature of one element (x = mean) gets
	// exactly the zero gradient it has.
	gr, k2, k3 := make([]float64, v.ch), make([]float64, v.ch), make([]float64, v.ch)
	for f := range v.ch {
		r := 1 / math.Sqrt(statAt(c.Inputs[3], f)+a.Epsilon)
		db, dg := sums[f], sums[v.ch+f]*r
		if v.count == 0 {
			dg = 0 // a sum of nothing, whatever r (NaN) is
		}
		dbeta[f], dgamma[f] = T(db), T(dg)
		gr[f] = float64(gamma[f]) * r
		k2[f] = (2*statAt(c.Inputs[6], f) - gr[f]*r*dg) / v.count
		k3[f] = (statAt(c.Inputs[5], f) - gr[f]*db) / v.count
	}
	// The product γ·r·dy is rounded before the sum (never fused with k3).
	if vec {
		deviceOf(c).Parallel(v.outer, 6*float64(n), func(lo, hi int) {
			tmp := v.runBuffer(vec)
			for o := lo; o < hi; o++ {
				for f := range v.ch {
					at := (o*v.ch + f) * v.inner
					smuls(&dx32[at], &dy32[at], float32(gr[f]), v.inner)
					sadds(&dx32[at], &dx32[at], float32(k3[f]), v.inner)
					sadds(&tmp[0], &x32[at], -float32(mean[f]), v.inner)
					saxpy(&dx32[at], &tmp[0], float32(k2[f]), v.inner)
				}
			}
		})
		return
	}
	v.each(6, func(e int) {
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
}

func init() {
	kernels{f32: batchNormKernel[float32], f64: batchNormKernel[float64]}.register("BatchNorm")
	kernels{f32: batchNormBackpropKernel[float32], f64: batchNormBackpropKernel[float64]}.register("BatchNormBackprop")
}
