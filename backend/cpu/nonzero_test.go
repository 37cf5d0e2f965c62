package cpu_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Nonzero's CPU kernel (chunks counted over the workers, positions
// compacted without a branch) gives the row-major positions an element
// walk gives: every dtype, masks dense, sparse, empty and full, across
// its chunks (65536) and runs (4096), rank 1 and 3; NaN counts, -0 not.
func TestNonzeroFollowsTheElementWalk(t *testing.T) {
	r := tensor.NewRNG(73)
	for _, shape := range [][]int{{0}, {1}, {4097}, {70000}, {3, 5, 7}, {2, 300, 250}} {
		n := tensor.Shape(shape).NumElements()
		u := tensor.ToSlice[float64](tensor.RandUniform(r, tensor.Float64, 0, 1, n))
		for _, density := range []float64{0, 0.01, 0.5, 1} {
			v := make([]float64, n)
			for i, p := range u {
				if p < density {
					v[i] = []float64{1, -2, math.NaN(), 0.5}[i%4]
				} else if i%3 == 0 {
					v[i] = math.Copysign(0, -1)
				}
			}
			multi := make([]int, len(shape))
			// positions walks v, keeping the elements keep says.
			positions := func(keep func(x float64) bool) []int64 {
				var out []int64
				for i, x := range v {
					if keep(x) {
						for _, m := range tensor.MultiIndex(shape, nil, i, multi) {
							out = append(out, int64(m))
						}
					}
				}
				return out
			}
			want := positions(func(x float64) bool { return x != 0 })
			for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Bool} {
				x := tensor.FromSlice(v, shape...)
				if dt == tensor.Bool {
					x = ops.Ne(x, tensor.Scalar(0.0))
				} else if !dt.IsFloat() {
					x = ops.Cast(ops.Where(ops.Ne(x, x), tensor.Scalar(1.0), ops.Abs(x)), dt) // NaN as 1, 0.5 as 0
				} else {
					x = ops.Cast(x, dt)
				}
				w := want
				if !dt.IsFloat() && dt != tensor.Bool {
					w = positions(func(x float64) bool { return x != 0 && x != 0.5 })
				}
				got := tensor.ToSlice[int64](ops.Nonzero(x))
				if !slices.Equal(got, w) {
					t.Errorf("%v %v density %v: %d positions, want %d; %s", dt, shape, density, len(got), len(w), fmt.Sprint(got[:min(len(got), 6)]))
				}
			}
		}
	}
}
