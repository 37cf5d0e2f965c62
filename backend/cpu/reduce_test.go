package cpu

import (
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Reductions whose kept dims sit between reduced ones (reduceAround, the
// NCHW bias gradient's pattern), whose kept dims are split (the permuted
// copy) and whose short kept rows follow many reduced ones
// (reduceShortRows) against a plain loop over every element.
func TestReduceAroundKeptBlock(t *testing.T) {
	rng := tensor.NewRNG(9)
	for _, c := range []struct {
		shape tensor.Shape
		dims  []int
	}{
		{tensor.Shape{3, 4, 5}, []int{0, 2}},
		{tensor.Shape{2, 3, 4, 5}, []int{0, 3}},    // kept block {1, 2}
		{tensor.Shape{2, 3, 4, 5}, []int{0, 2, 3}}, // NCHW bias: kept {1}
		{tensor.Shape{2, 3, 4, 5}, []int{1, 3}},    // kept {0, 2}: permuted
		{tensor.Shape{64, 16, 9, 9}, []int{0, 2, 3}},
		{tensor.Shape{0, 3, 4}, []int{0, 2}}, // nothing to reduce
		// Short kept rows under many reduced ones (reduceShortRows): a bias
		// gradient over NHWC, a period that does not divide the tile, a
		// partial last piece.
		{tensor.Shape{300, 50, 32}, []int{0, 1}},
		{tensor.Shape{20011, 3}, []int{0}},
		{tensor.Shape{9000, 7}, []int{0}},
	} {
		x := tensor.RandNormal(rng, tensor.Float64, c.shape...)
		xv := tensor.ToSlice[float64](x)
		for _, kind := range []ops.ReduceKind{ops.ReduceSum, ops.ReduceMean, ops.ReduceMax, ops.ReduceMin} {
			got := tensor.ToSlice[float64](ops.Reduce(x, ops.Reduction{Kind: kind, Dims: c.dims}))
			want := naiveReduce(xv, c.shape, c.dims, kind)
			if len(got) != len(want) {
				t.Fatalf("%v over %v, %v: %d outputs, want %d", c.shape, c.dims, kind, len(got), len(want))
			}
			for i := range want {
				if math.Abs(got[i]-want[i]) > 1e-12*max(1, math.Abs(want[i])) && !(math.IsNaN(got[i]) && math.IsNaN(want[i])) {
					t.Errorf("%v over %v, %v: output %d is %v, want %v", c.shape, c.dims, kind, i, got[i], want[i])
				}
			}
		}
	}
}

// naiveReduce reduces x (row-major, shape) over dims element by element.
func naiveReduce(x []float64, shape tensor.Shape, dims []int, kind ops.ReduceKind) []float64 {
	reduced := make([]bool, len(shape))
	for _, d := range dims {
		reduced[d] = true
	}
	n := 1
	for d, s := range shape {
		if !reduced[d] {
			n *= s
		}
	}
	out, count := make([]float64, n), make([]int, n)
	for i := range out {
		switch kind {
		case ops.ReduceMax:
			out[i] = math.Inf(-1)
		case ops.ReduceMin:
			out[i] = math.Inf(1)
		}
	}
	idx := make([]int, len(shape))
	for lin, v := range x {
		rem := lin
		for d := len(shape) - 1; d >= 0; d-- {
			idx[d], rem = rem%shape[d], rem/shape[d]
		}
		o := 0
		for d, s := range shape {
			if !reduced[d] {
				o = o*s + idx[d]
			}
		}
		switch kind {
		case ops.ReduceMax:
			out[o] = max(out[o], v)
		case ops.ReduceMin:
			out[o] = min(out[o], v)
		default:
			out[o] += v
		}
		count[o]++
	}
	if kind == ops.ReduceMean {
		for i := range out {
			out[i] /= float64(count[i]) // 0/0 is NaN, as the mean of nothing
		}
	}
	return out
}
