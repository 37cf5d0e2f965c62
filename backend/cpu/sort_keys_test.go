package cpu_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// ArgSort's packed keys (float32, int32, uint8) give the permutation the
// comparison sort gives the same values as float64 or int64: stable among
// ties (values drawn from a few), NaN last (first descending), -0 tied with +0,
// the extremes of each type in place, ascending and descending, along
// each axis.
func TestPackedSortKeysSortAsTheComparisonSort(t *testing.T) {
	r := tensor.NewRNG(59)
	draw := func(specials []float64, shape ...int) []float64 {
		u := tensor.ToSlice[float64](tensor.RandUniform(r, tensor.Float64, 0, 1, shape...))
		for i, p := range u {
			u[i] = specials[int(p*float64(len(specials)))]
		}
		return u
	}
	cases := []struct {
		dt, wide tensor.DType
		specials []float64
	}{
		{tensor.Float32, tensor.Float64, []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1, -1, 2.5, -3e38, 3e38, 1e-45, -1e-45}},
		{tensor.Int32, tensor.Int64, []float64{math.MinInt32, math.MaxInt32, 0, -1, 1, 7, -7}},
		{tensor.Uint8, tensor.Int64, []float64{0, 255, 1, 128, 127}},
	}
	for _, c := range cases {
		// Lines of 256 or more go by the keys' bytes (a radix sort), along
		// the last axis and others; dense values besides the specials.
		for _, shape := range [][]int{{300}, {7, 40}, {40, 7, 3}, {2, 300, 3}, {1000}, {3, 700}} {
			u := draw(c.specials, shape...)
			if len(u) >= 2000 && c.dt == tensor.Float32 {
				u = tensor.ToSlice[float64](tensor.RandNormal(r, tensor.Float64, shape...))
				u[3], u[7], u[11] = u[5], math.NaN(), math.Copysign(0, -1)
			}
			x := ops.Cast(tensor.FromSlice(u, shape...), c.dt)
			wide := ops.Cast(x, c.wide)
			for axis := range shape {
				for _, desc := range []bool{false, true} {
					got := tensor.ToSlice[int64](ops.ArgSort(x, axis, desc))
					want := tensor.ToSlice[int64](ops.ArgSort(wide, axis, desc))
					if !slices.Equal(got, want) {
						t.Errorf("%v %v along %d, descending %v: %s", c.dt, shape, axis, desc, firstDiff(got, want))
					}
				}
			}
		}
	}
}

func firstDiff(got, want []int64) string {
	for i := range got {
		if got[i] != want[i] {
			return fmt.Sprintf("place %d: %d, the comparison sort %d", i, got[i], want[i])
		}
	}
	return "lengths differ"
}
