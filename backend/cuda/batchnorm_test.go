package cuda

import (
	"fmt"
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// BatchNorm on the GPU agrees with the CPU's in its three results and in
// the gradients of x, the scale and the offset through all three: features
// last (a column fold, in passes where the batch is long), in the middle
// (rows, then columns), first (no dimension before them), with and
// without an offset, an empty batch, and the half types through float32.
func TestBatchNormOnGPU(t *testing.T) {
	d := testGPU(t)
	r := tensor.NewRNG(5)
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64, tensor.BFloat16} {
		tol := map[tensor.DType]float64{tensor.Float32: 2e-5, tensor.Float64: 1e-11, tensor.BFloat16: 1e-2}[dt]
		for _, c := range []struct {
			shape []int
			axis  int
		}{{[]int{4, 5, 5, 8}, -1}, {[]int{300, 6}, 1}, {[]int{3, 4, 7, 9}, 1}, {[]int{2, 3, 40, 40}, 1}, {[]int{6, 50}, 0}, {[]int{0, 3}, 1}} {
			for _, offset := range []bool{true, false} {
				what := fmt.Sprintf("%v %v axis %d offset %v", dt, c.shape, c.axis, offset)
				axis := (c.axis + len(c.shape)) % len(c.shape)
				x := ops.Cast(ops.Add(tensor.RandNormal(r, tensor.Float64, c.shape...), tensor.Scalar(2.0)), dt)
				gamma := ops.Cast(tensor.RandNormal(r, tensor.Float64, c.shape[axis]), dt)
				var beta *tensor.Tensor
				if offset {
					beta = ops.Cast(tensor.RandNormal(r, tensor.Float64, c.shape[axis]), dt)
				}
				wy := ops.Cast(tensor.RandUniform(r, tensor.Float64, -1, 1, c.shape...), dt)
				wm := tensor.RandUniform(r, tensor.Float32, -1, 1, c.shape[axis])
				if dt == tensor.Float64 {
					wm = ops.Cast(wm, dt)
				}
				run := func(x, gamma, beta, wy, wm *tensor.Tensor) []*tensor.Tensor {
					watched := []*tensor.Tensor{x, gamma}
					if beta != nil {
						watched = append(watched, beta)
					}
					tp := tape.New()
					tp.Watch(watched...)
					y, m, v := ops.BatchNorm(x, gamma, beta, c.axis, 1e-3)
					loss := ops.Add(ops.Cast(ops.Sum(ops.Mul(y, wy)), wm.DType()), ops.Sum(ops.Mul(ops.Add(m, v), wm)))
					return append([]*tensor.Tensor{y, m, v}, tp.Gradient(loss, watched...)...)
				}
				g := func(t2 *tensor.Tensor) *tensor.Tensor {
					if t2 == nil {
						return nil
					}
					return onGPU(t, d, t2)
				}
				want := run(x, gamma, beta, wy, wm)
				got := run(g(x), g(gamma), g(beta), g(wy), g(wm))
				for i, name := range []string{"y", "mean", "variance", "dx", "dgamma", "dbeta"}[:len(want)] {
					agreeWithin(t, what+" "+name, got[i], want[i], tol)
				}
			}
		}
	}
}

// The GPU takes the statistics in one pass about each feature's first
// element: a large mean, and a first element far out, still give the
// CPU's two-pass mean and variance.
func TestBatchNormOnePassStatistics(t *testing.T) {
	d := testGPU(t)
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for _, axis := range []int{1, -1} {
			x := ops.Add(tensor.RandNormal(tensor.NewRNG(3), tensor.Float64, 64, 6, 10), tensor.Scalar(1e3))
			v := tensor.ToSlice[float64](x)
			v[0], v[1] = 1e5, -3e4 // the first elements of features 0 and 1 (or of feature 0's planes)
			x = ops.Cast(tensor.FromSlice(v, 64, 6, 10), dt)
			g := ops.Cast(tensor.Ones(tensor.Float64, x.Dim(axis)), dt)
			_, m, s := ops.BatchNorm(x, g, nil, axis, 1e-3)
			_, gm, gs := ops.BatchNorm(onGPU(t, d, x), onGPU(t, d, g), nil, axis, 1e-3)
			tol := map[tensor.DType]float64{tensor.Float32: 1e-5, tensor.Float64: 1e-12}[dt]
			agreeWithin(t, fmt.Sprint(dt, " axis ", axis, " mean"), gm, m, tol)
			agreeWithin(t, fmt.Sprint(dt, " axis ", axis, " variance"), gs, s, tol)
		}
	}
}

// A half-precision layer norm's scale gradient on the GPU is the float32
// sum of dy·x̂ rounded once, as the CPU's: the products were rounded to
// the half type before they were summed, so many rows drifted (the
// conformance table's float16 sample failed by 5 units in the last place
// once its inputs changed). Within one unit in the last place of the
// CPU's, over 256 rows, for RMSNorm too.
func TestHalfNormScaleGradientsRoundOnceOnGPU(t *testing.T) {
	d := testGPU(t)
	r := tensor.NewRNG(53)
	for _, dt := range []tensor.DType{tensor.Float16, tensor.BFloat16} {
		h := func(x *tensor.Tensor) *tensor.Tensor { return ops.Cast(x, dt) }
		x, gamma, beta := h(tensor.RandUniform(r, tensor.Float32, -1, 1, 256, 6)), h(tensor.RandUniform(r, tensor.Float32, -1, 1, 6)), h(tensor.RandUniform(r, tensor.Float32, -1, 1, 6))
		seed := h(tensor.RandUniform(r, tensor.Float32, -1, 1, 256, 6))
		for _, rms := range []bool{false, true} {
			grads := func(x, gamma, beta, seed *tensor.Tensor) *tensor.Tensor {
				tp := tape.New()
				tp.Watch(gamma)
				y := ops.RMSNorm(x, gamma, 1e-5)
				if !rms {
					y = ops.LayerNorm(x, gamma, beta, 1e-5)
				}
				return tp.GradientSeeded(y, seed, gamma)[0]
			}
			got := grads(onGPU(t, d, x), onGPU(t, d, gamma), onGPU(t, d, beta), onGPU(t, d, seed))
			want := grads(x, gamma, beta, seed)
			g := tensor.ToSlice[float32](ops.Cast(onHost(t, got), tensor.Float32))
			w := tensor.ToSlice[float32](ops.Cast(want, tensor.Float32))
			for i := range w {
				ulp := math.Abs(float64(w[i])) * math.Pow(2, -10) // float16's; bfloat16's is 8 times this
				if dt == tensor.BFloat16 {
					ulp *= 8
				}
				if math.Abs(float64(g[i]-w[i])) > ulp {
					t.Errorf("%v rms %v: d/dgamma[%d] = %v on the GPU, %v on the CPU", dt, rms, i, g[i], w[i])
				}
			}
		}
	}
}
