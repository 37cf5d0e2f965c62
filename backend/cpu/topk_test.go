package cpu_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// TopK's selection (ArgTopK) gives the first k places of the stable
// descending sort (ArgSort's) for every dtype, on both sides of the
// selection's threshold (k·16 against the line) and the radix sort's
// (256): ties drawn from a few values, NaNs, -0 beside +0, lines
// ascending (every element beats the heap's worst) and descending.
func TestTopKSelectsAsTheSortDoes(t *testing.T) {
	r := tensor.NewRNG(61)
	specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1, -1, 2.5, 7, 100}
	fill := func(kind string, rows, n int) []float64 {
		u := tensor.ToSlice[float64](tensor.RandUniform(r, tensor.Float64, 0, 1, rows, n))
		for i, p := range u {
			switch kind {
			case "ties":
				u[i] = specials[int(p*float64(len(specials)))]
			case "dense":
				u[i] = math.Floor(p*250) - 120
			case "ascending":
				u[i] = float64(i%n) - 100
			case "descending":
				u[i] = 100 - float64(i%n)
			}
		}
		return u
	}
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Uint8, tensor.BFloat16} {
		for _, n := range []int{1, 5, 17, 100, 300, 1000} {
			for _, kind := range []string{"ties", "dense", "ascending", "descending"} {
				u := fill(kind, 3, n)
				if !dt.IsFloat() {
					for i, v := range u {
						if v != v || math.IsInf(v, 0) || (dt == tensor.Uint8 && v < 0) {
							u[i] = 3
						}
					}
				}
				x := ops.Cast(tensor.FromSlice(u, 3, n), dt)
				order := tensor.ToSlice[int64](ops.ArgSort(x, -1, true))
				for _, k := range []int{0, 1, 2, 5, n/16 - 1, n / 16, n/16 + 1, n} {
					if k < 0 || k > n {
						continue
					}
					values, indices := ops.TopK(x, k)
					got := tensor.ToSlice[int64](indices)
					var want []int64
					for row := range 3 {
						want = append(want, order[row*n:][:k]...)
					}
					name := fmt.Sprintf("%v %s [3 %d] k %d", dt, kind, n, k)
					if !indices.Shape().Equal(tensor.Shape{3, k}) || !slices.Equal(got, want) {
						t.Errorf("%s: indices %v, the sort's first %v", name, got, want)
						continue
					}
					taken := tensor.ToSlice[float64](ops.Cast(ops.TakeAlongAxis(x, indices, -1), tensor.Float64))
					vs := tensor.ToSlice[float64](ops.Cast(values, tensor.Float64))
					if !slices.EqualFunc(vs, taken, func(a, b float64) bool { return a == b || a != a && b != b }) {
						t.Errorf("%s: values %v, at the indices %v", name, vs, taken)
					}
				}
			}
		}
	}
	// Rank 3: the lines are the last axis's.
	x := tensor.RandNormal(r, tensor.Float32, 2, 3, 400)
	_, idx := ops.TopK(x, 7)
	order := ops.Slice(ops.ArgSort(x, -1, true), []int{0, 0, 0}, []int{2, 3, 7}, nil)
	if got, want := tensor.ToSlice[int64](idx), tensor.ToSlice[int64](order); !slices.Equal(got, want) {
		t.Errorf("[2 3 400] k 7: %s", firstDiff(got, want))
	}
}
