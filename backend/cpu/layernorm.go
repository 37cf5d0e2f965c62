package cpu

import (
	"math"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernels of LayerNorm and its backprop (ops/layernorm.go), for LayerNorm
// and RMSNorm alike: the forward reads a row for its statistics (in
// float64) and again to write it normalized; the backward reads a row of
// x and of the output's gradient for two sums and again to write the
// input's gradient, adding the row's share of the scale's and offset's
// gradients to a partial sum of its task. The tasks are fixed in number
// and their partial sums added in order, so results do not depend on how
// the rows were shared among threads.

// normTasks is the most tasks the backward splits its rows into (each
// keeps partial sums of the scale's and offset's gradients).
const normTasks = 16

// statAt and setStat read and write element i of a statistic (float32,
// or float64 for float64 inputs: ops.statDType).
func statAt(t *tensor.Tensor, i int) float64 {
	if t.DType() == tensor.Float64 {
		return data[float64](t)[i]
	}
	return float64(data[float32](t)[i])
}

func setStat(t *tensor.Tensor, i int, v float64) {
	if t.DType() == tensor.Float64 {
		data[float64](t)[i] = v
		return
	}
	data[float32](t)[i] = float32(v)
}

func layerNormKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	a := c.Attrs.(ops.NormAttrs)
	x := c.Inputs[0]
	xs, gamma, y := data[T](x), data[T](c.Inputs[1]), data[T](outs[0])
	var beta []T
	if len(c.Inputs) == 3 {
		beta = data[T](c.Inputs[2])
	}
	n := x.Dim(-1)
	rows := outs[1].Shape().NumElements() // with no features, each row's statistics are NaN (0/0)
	if x32, ok := any(xs).([]float32); ok && haveVecKernels && n > 0 {
		g32, y32 := any(gamma).([]float32), any(y).([]float32)
		b32, _ := any(beta).([]float32)
		deviceOf(c).Parallel(rows, float64(n), func(lo, hi int) {
			for r := lo; r < hi; r++ {
				mean, rstd := normRow32(y32[r*n:(r+1)*n], x32[r*n:(r+1)*n], g32, b32, a)
				setStat(outs[1], r, float64(mean))
				setStat(outs[2], r, float64(rstd))
			}
		})
		return
	}
	deviceOf(c).Parallel(rows, float64(6*n), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row, out := xs[r*n:(r+1)*n], y[r*n:(r+1)*n]
			mean := 0.0
			if !a.RMS {
				for _, v := range row {
					mean += float64(v)
				}
				mean /= float64(n)
			}
			ss := 0.0
			for _, v := range row {
				d := float64(v) - mean
				ss += d * d
			}
			rstd := 1 / math.Sqrt(ss/float64(n)+a.Epsilon)
			for j, v := range row {
				o := T((float64(v)-mean)*rstd) * gamma[j] // the deviation in float64, as the backward's
				if beta != nil {
					o += beta[j]
				}
				out[j] = o
			}
			setStat(outs[1], r, mean)
			setStat(outs[2], r, rstd)
		}
	})
}

// normRow32 normalizes one float32 row x into out with the vector
// kernels (n > 0): its mean (0 for RMSNorm) and reciprocal deviation, in
// float32 sums as PyTorch's kernel; b nil for no offset. The mean is
// summed about the row's first element (x0 + Σ(x−x0)/n, out as scratch):
// each difference is exact where the values lie within a factor of two of
// x0, so a row of equal values has exactly their mean, normalizes to
// exactly 0 and gives its scale no gradient (Σx/n in float32 missed by an
// ulp, which 1/√eps magnified).
func normRow32(out, x, g, b []float32, a ops.NormAttrs) (mean, rstd float32) {
	n := len(x)
	if !a.RMS {
		x0 := x[0]
		sadds(&out[0], &x[0], -x0, n)
		mean = x0 + ssum(&out[0], n)/float32(n)
	}
	deviations32(out, x, mean, a)
	rstd = float32(1 / math.Sqrt(float64(sdot(&out[0], &out[0], n))/float64(n)+a.Epsilon))
	smuls(&out[0], &out[0], rstd, n)
	smul(&out[0], &out[0], &g[0], n)
	if b != nil {
		sadd(&out[0], &out[0], &b[0], n)
	}
	return mean, rstd
}

// deviations32 sets d = x - mean for a float32 row, refined where the
// norm subtracts a mean: the mean rounded to float32 is off by δ (up to
// half an ulp of the values: 1/32 at 1e6), which every deviation would
// carry, so their mean, -δ to the sum's rounding, is subtracted again
// (each deviation rounded once more). Rows of 1e4 ± 1 were off by 8.5e-4
// after the normalization, 1e6 ± 1 by 0.057; the backward takes the same
// deviations.
func deviations32(d, x []float32, mean float32, a ops.NormAttrs) {
	n := len(x)
	sadds(&d[0], &x[0], -mean, n)
	if !a.RMS {
		sadds(&d[0], &d[0], -ssum(&d[0], n)/float32(n), n)
	}
}

// refinement is the mean of a row's deviations from its mean as stored
// (rounded to the dtype: off by δ), -δ: added to it, the deviations are
// the forward's, taken in float64.
func refinement[T tensor.Float](row []T, mean float64) float64 {
	sum := 0.0
	for _, v := range row {
		sum += float64(v) - mean
	}
	return sum / float64(len(row))
}

// normGradRow32 is one float32 row of the backward with the vector
// kernels (n > 0): dx into out, the row's share of the scale's and
// offset's gradients added to dg and db; xhat and gy are scratch rows.
func normGradRow32(out, x, dy, g, dg, db, xhat, gy []float32, mean, rstd, dmean, drstd float32, a ops.NormAttrs) {
	n := len(x)
	cn := float32(n)
	deviations32(xhat, x, mean, a)
	smuls(&xhat[0], &xhat[0], rstd, n)
	sadd(&db[0], &db[0], &dy[0], n)
	smul(&gy[0], &dy[0], &xhat[0], n)
	sadd(&dg[0], &dg[0], &gy[0], n)
	smul(&gy[0], &dy[0], &g[0], n)
	sumG, sumGX := ssum(&gy[0], n), sdot(&gy[0], &xhat[0], n)
	shift := -rstd*sumG/cn + dmean/cn
	if a.RMS {
		shift = 0
	}
	slope := -rstd*sumGX/cn - rstd*rstd*drstd/cn
	smuls(&out[0], &gy[0], rstd, n)
	sadds(&out[0], &out[0], shift, n)
	saxpy(&out[0], &xhat[0], slope, n)
}

func layerNormBackpropKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	a := c.Attrs.(ops.NormAttrs)
	x, meanT, rstdT, dmeanT, drstdT := c.Inputs[0], c.Inputs[2], c.Inputs[3], c.Inputs[5], c.Inputs[6]
	xs, gamma, dy := data[T](x), data[T](c.Inputs[1]), data[T](c.Inputs[4])
	dx, dgamma, dbeta := data[T](outs[0]), data[T](outs[1]), data[T](outs[2])
	n, rows := x.Dim(-1), meanT.Shape().NumElements()
	tasks := min(rows, normTasks)
	partial := make([]float64, 2*tasks*n) // per task: dgamma's n, then dbeta's
	cn := float64(n)
	if x32, ok := any(xs).([]float32); ok && haveVecKernels && n > 0 {
		g32, dy32, dx32 := any(gamma).([]float32), any(dy).([]float32), any(dx).([]float32)
		part32 := make([]float32, 2*tasks*n)
		deviceOf(c).Parallel(tasks, float64(2*n*rows/max(tasks, 1)), func(lo, hi int) {
			xhat, gy := make([]float32, n), make([]float32, n)
			for t := lo; t < hi; t++ {
				dg, db := part32[2*t*n:(2*t+1)*n], part32[(2*t+1)*n:(2*t+2)*n]
				for r := t * rows / tasks; r < (t+1)*rows/tasks; r++ {
					row := r * n
					normGradRow32(dx32[row:row+n], x32[row:row+n], dy32[row:row+n], g32, dg, db, xhat, gy,
						float32(statAt(meanT, r)), float32(statAt(rstdT, r)), float32(statAt(dmeanT, r)), float32(statAt(drstdT, r)), a)
				}
			}
		})
		for i, v := range part32 {
			partial[i] = float64(v)
		}
	} else {
		deviceOf(c).Parallel(tasks, float64(10*n*rows/max(tasks, 1)), func(lo, hi int) {
			xhat := make([]float64, n)
			for t := lo; t < hi; t++ {
				dg, db := partial[2*t*n:(2*t+1)*n], partial[(2*t+1)*n:(2*t+2)*n]
				for r := t * rows / tasks; r < (t+1)*rows/tasks; r++ {
					row, g, out := xs[r*n:(r+1)*n], dy[r*n:(r+1)*n], dx[r*n:(r+1)*n]
					mean, rstd := statAt(meanT, r), statAt(rstdT, r)
					if !a.RMS {
						mean += refinement(row, mean)
					}
					sumG, sumGX := 0.0, 0.0 // Σ dy·γ and Σ dy·γ·x̂
					for j, v := range row {
						h := (float64(v) - mean) * rstd
						xhat[j] = h
						d := float64(g[j])
						dg[j] += d * h
						db[j] += d
						gj := d * float64(gamma[j])
						sumG += gj
						sumGX += gj * h
					}
					if a.RMS {
						sumG = 0 // no mean was subtracted
					}
					// dx = rstd·(g - mean(g) - x̂·mean(g·x̂)), plus the
					// statistics' own gradients: ∂mean/∂x = 1/C and
					// ∂rstd/∂x = -rstd²·x̂/C.
					shift := -rstd*sumG/cn + statAt(dmeanT, r)/cn
					if a.RMS {
						shift = 0
					}
					slope := -rstd*sumGX/cn - rstd*rstd*statAt(drstdT, r)/cn
					for j := range out {
						// rstd·(dy·γ), grouped as sumG's terms are: where
						// the row is one element, the mean's part cancels
						// it exactly (a zero gradient, as it must be).
						out[j] = T(rstd*(float64(g[j])*float64(gamma[j])) + shift + slope*xhat[j])
					}
				}
			}
		})
	}
	for j := range n {
		sg, sb := 0.0, 0.0
		for t := range tasks {
			sg += partial[2*t*n+j]
			sb += partial[(2*t+1)*n+j]
		}
		dgamma[j], dbeta[j] = T(sg), T(sb)
	}
}

func init() {
	kernels{f32: layerNormKernel[float32], f64: layerNormKernel[float64]}.register("LayerNorm")
	kernels{f32: layerNormBackpropKernel[float32], f64: layerNormBackpropKernel[float64]}.register("LayerNormBackprop")
}
