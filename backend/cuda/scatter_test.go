package cuda

import (
	"fmt"
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// ScatterAdd over few long columns (an embedding's gradient: 3 columns,
// 600 indices with repeats) sums each index's run of updates after a
// stable sort, in the indices' order: bit for bit the CPU's sums, for
// every numeric dtype and both index dtypes, an outer dimension too, and
// through Gather's gradient.
func TestScatterAddSortedOnGPU(t *testing.T) {
	d := testGPU(t)
	launched := recordLaunches(t, d)
	r := tensor.NewRNG(17)
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Uint8} {
		for _, it := range []tensor.DType{tensor.Int32, tensor.Int64} {
			for _, c := range []struct {
				base []int
				axis int
			}{{[]int{50, 3}, 0}, {[]int{2, 40, 3}, 1}} {
				what := fmt.Sprintf("%v base %v, %v indices", dt, c.base, it)
				idx := ops.Cast(ops.Floor(tensor.RandUniform(r, tensor.Float64, 0, float64(c.base[c.axis]), 20, 30)), it)
				ushape := slices.Concat(c.base[:c.axis], []int{20, 30}, c.base[c.axis+1:])
				base := ops.Cast(ops.Round(tensor.RandUniform(r, tensor.Float64, -40, 40, c.base...)), dt)
				upd := ops.Cast(tensor.RandUniform(r, tensor.Float64, -3, 3, ushape...), dt)
				if !dt.IsFloat() {
					upd = ops.Cast(ops.Round(tensor.RandUniform(r, tensor.Float64, 0, 9, ushape...)), dt)
				}
				want := ops.ScatterAdd(base, idx, upd, c.axis)
				*launched = (*launched)[:0]
				got := onHost(t, ops.ScatterAdd(onGPU(t, d, base), onGPU(t, d, idx), onGPU(t, d, upd), c.axis))
				if !slices.Equal(tensor.ToSlice[float64](ops.Cast(got, tensor.Float64)), tensor.ToSlice[float64](ops.Cast(want, tensor.Float64))) {
					t.Errorf("%s: not the CPU's sums bit for bit", what)
				}
				mustHaveRun(t, d, launched, "scatter_add_sorted_"+string(kernelType(dt))+"_"+string(kernelType(it)))
			}
		}
	}
	// An embedding's gradient: Gather's adjoint.
	table := tensor.RandNormal(r, tensor.Float32, 65, 8)
	ids := ops.Cast(ops.Floor(tensor.RandUniform(r, tensor.Float64, 0, 65, 16, 33)), tensor.Int32)
	grad := func(table, ids *tensor.Tensor) *tensor.Tensor {
		tp := tape.New()
		tp.Watch(table)
		return tp.Gradient(ops.Sum(ops.Sin(ops.Gather(table, ids, 0))), table)[0]
	}
	want := grad(table, ids)
	*launched = (*launched)[:0]
	agree(t, "an embedding's gradient", grad(onGPU(t, d, table), onGPU(t, d, ids)), want)
	mustHaveRun(t, d, launched, "scatter_add_sorted_f32_s32")
}
