package cuda

import (
	"fmt"
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
