package cpu_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Cumsum and Cumprod follow the running result element by element in
// the axis's order, bit for bit, whichever way the kernel splits the work:
// rows four at a time and the rest (row counts 1 to 9), columns an outer
// index at a time or, with one, in stretches (2500 columns), exclusive
// and reversed, over the workers.
func TestCumulativeKernelsFollowTheRunningResult(t *testing.T) {
	r := tensor.NewRNG(67)
	shapes := [][]int{{1, 7}, {3, 300}, {4, 5}, {5, 1}, {9, 257}, {2, 0}, {1, 6, 2500}, {3, 40, 7}, {8, 3, 2}}
	for _, shape := range shapes {
		x := tensor.RandUniform(r, tensor.Float64, 0.5, 1.5, shape...)
		for axis := range shape {
			for _, product := range []bool{false, true} {
				for _, flags := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
					name := fmt.Sprintf("%v axis %d product %v exclusive %v reverse %v", shape, axis, product, flags[0], flags[1])
					want := running(tensor.ToSlice[float64](x), shape, axis, product, flags[0], flags[1])
					fn := ops.Cumsum
					if product {
						fn = ops.Cumprod
					}
					if got := tensor.ToSlice[float64](fn(x, axis, flags[0], flags[1])); !slices.Equal(got, want) {
						t.Errorf("%s: %v, want %v", name, head(got), head(want))
					}
				}
			}
		}
	}
}

// running is the reference: each line of x along axis, its running sum
// or product in order.
func running(x []float64, shape []int, axis int, product, exclusive, reverse bool) []float64 {
	outer, n, inner := 1, shape[axis], 1
	for _, d := range shape[:axis] {
		outer *= d
	}
	for _, d := range shape[axis+1:] {
		inner *= d
	}
	out := make([]float64, len(x))
	for o := range outer {
		for i := range inner {
			acc := 0.0
			if product {
				acc = 1
			}
			for k := range n {
				j := k
				if reverse {
					j = n - 1 - k
				}
				at := (o*n+j)*inner + i
				next := acc + x[at]
				if product {
					next = acc * x[at]
				}
				out[at] = next
				if exclusive {
					out[at] = acc
				}
				acc = next
			}
		}
	}
	return out
}

func head(v []float64) []float64 { return v[:min(len(v), 6)] }
