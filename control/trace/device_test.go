package trace_test

import (
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// A traced function that moves a value to another device with To copies
// each call's value: the move is recorded (ops.ToDevice), not captured
// as a constant of the first call (which it was: every later call
// returned the first call's result). A variable moved inside the trace
// is read at each call too.
func TestTracedToCopiesEachCall(t *testing.T) {
	other := device.SecondCPU()
	v := tape.NewVariable("v", tensor.FromSlice([]float32{1, 1}))
	f := trace.NewFunction(func(a []T) []T {
		y, err := ops.Mul(a[0], tensor.Scalar(float32(2))).To(other)
		if err != nil {
			panic(err)
		}
		w, err := v.Value().To(other)
		if err != nil {
			panic(err)
		}
		return []T{ops.Add(y, w)}
	})
	for i, c := range []struct{ in, v, want []float32 }{
		{[]float32{1, 2}, []float32{1, 1}, []float32{3, 5}},
		{[]float32{5, 6}, []float32{1, 1}, []float32{11, 13}},
		{[]float32{5, 6}, []float32{-1, 0}, []float32{9, 12}},
	} {
		v.Assign(tensor.FromSlice(c.v))
		got, err := f.Call(tensor.FromSlice(c.in))
		if err != nil {
			t.Fatal(err)
		}
		if got[0].Device() != other || !slices.Equal(tensor.ToSlice[float32](got[0]), c.want) {
			t.Errorf("call %d: %v on %s, want %v on %s", i, tensor.ToSlice[float32](got[0]), got[0].Device().Name(), c.want, other.Name())
		}
	}
	if f.Traces() != 1 {
		t.Errorf("%d traces", f.Traces())
	}
}
