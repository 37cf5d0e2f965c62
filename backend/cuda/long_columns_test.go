package cuda

import (
	"fmt"
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Running sums and products along columns too few to fill the GPU and
// long enough to cut into chunks (fewLongColumns) agree with the CPU's to the
// bit: sums of small integers and products of ±1, 2 and ½ are exact in
// any order, and integers wrap alike. The shapes cut one column, a few,
// columns of inner stride 3 and 300, and a last chunk shorter than the
// others (70 steps in chunks of 9).
func TestLongColumnsRunInChunksOnGPU(t *testing.T) {
	d := testGPU(t)
	r := tensor.NewRNG(43)
	factors := func(shape ...int) *tensor.Tensor { // mostly ±1, a tenth 2 or ½
		u := tensor.ToSlice[float64](tensor.RandUniform(r, tensor.Float64, 0, 1, shape...))
		for i, v := range u {
			switch {
			case v < 0.05:
				u[i] = 2
			case v < 0.1:
				u[i] = 0.5
			case v < 0.55:
				u[i] = -1
			default:
				u[i] = 1
			}
		}
		return tensor.FromSlice(u, shape...)
	}
	for _, c := range []struct {
		shape []int
		axis  int
	}{{[]int{3000}, 0}, {[]int{2, 1000, 3}, 1}, {[]int{100, 64}, 1}, {[]int{70, 300}, 0}} {
		if !fewLongColumns(tensor.Shape(c.shape).NumElements()/c.shape[c.axis], c.shape[c.axis]) {
			t.Fatalf("%v along %d is not cut into chunks", c.shape, c.axis)
		}
		small := tensor.RandUniform(r, tensor.Float64, 0, 4, c.shape...)
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Uint8} {
			sums, products := ops.Cast(ops.Floor(small), dt), ops.Cast(factors(c.shape...), dt)
			if !dt.IsFloat() {
				products = ops.Cast(small, dt) // wrapping products of 0-3
			}
			for _, flags := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
				what := fmt.Sprintf("%v %v along %d, exclusive, reverse %v", dt, c.shape, c.axis, flags)
				agreeWithin(t, "Cumsum "+what, ops.Cumsum(onGPU(t, d, sums), c.axis, flags[0], flags[1]), ops.Cumsum(sums, c.axis, flags[0], flags[1]), 0)
				agreeWithin(t, "Cumprod "+what, ops.Cumprod(onGPU(t, d, products), c.axis, flags[0], flags[1]), ops.Cumprod(products, c.axis, flags[0], flags[1]), 0)
			}
		}
	}
}

// ArgSort along columns few and long enough for merge passes of their
// own (fewLongColumns) gives the CPU's permutation: stable (values drawn
// from a few, so ties abound), NaN last (first descending), ascending and
// descending, passes odd and even in number (65 and 64 steps), and a
// column ending in a short run. ArgMax and ArgMin, chosen in chunks
// there, give the CPU's first extreme, a NaN counting as one.
func TestLongColumnsSortAndPickOnGPU(t *testing.T) {
	d := testGPU(t)
	r := tensor.NewRNG(47)
	for _, c := range []struct {
		shape []int
		axis  int
	}{{[]int{3000}, 0}, {[]int{2, 700, 3}, 1}, {[]int{100, 64}, 1}, {[]int{65, 10}, 0}} {
		if !fewLongColumns(tensor.Shape(c.shape).NumElements()/c.shape[c.axis], c.shape[c.axis]) {
			t.Fatalf("%v along %d does not sort in merge passes", c.shape, c.axis)
		}
		u := tensor.ToSlice[float64](ops.Floor(tensor.RandUniform(r, tensor.Float64, 0, 9, c.shape...)))
		ints := tensor.FromSlice(u, c.shape...) // 0-8: ties abound
		for i := range u {
			if u[i] == 8 {
				u[i] = math.NaN()
			}
		}
		floats := tensor.FromSlice(u, c.shape...)
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Uint8} {
			v := ops.Cast(ints, dt)
			if dt.IsFloat() {
				v = ops.Cast(floats, dt)
			}
			for _, desc := range []bool{false, true} {
				what := fmt.Sprintf("ArgSort %v %v along %d, descending %v", dt, c.shape, c.axis, desc)
				agreeWithin(t, what, ops.ArgSort(onGPU(t, d, v), c.axis, desc), ops.ArgSort(v, c.axis, desc), 0)
			}
			what := fmt.Sprintf("%v %v along %d", dt, c.shape, c.axis)
			agreeWithin(t, "ArgMax "+what, ops.ArgMax(onGPU(t, d, v), c.axis), ops.ArgMax(v, c.axis), 0)
			agreeWithin(t, "ArgMin "+what, ops.ArgMin(onGPU(t, d, v), c.axis), ops.ArgMin(v, c.axis), 0)
		}
	}
}
