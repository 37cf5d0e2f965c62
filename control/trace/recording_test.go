package trace_test

import (
	"testing"

	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Recording holds for a trace's values while its function runs, on the
// call that traces only, and never for the values a call hands back or
// for tensors no trace made.
func TestRecording(t *testing.T) {
	var inside []bool
	f := trace.NewFunction(func(a []T) []T {
		y := ops.Tanh(a[0])
		inside = append(inside, trace.Recording(a[0]), trace.Recording(y), trace.Recording(tensor.Scalar(1.0)))
		return []T{y}
	})
	x := tensor.FromSlice([]float64{1, 2})
	for call := range 2 {
		out, err := f.Call(x)
		if err != nil {
			t.Fatal(err)
		}
		if trace.Recording(out[0]) || trace.Recording(x) {
			t.Errorf("call %d: a call's result or argument counts as recorded", call)
		}
	}
	if len(inside) != 3 || !inside[0] || !inside[1] || inside[2] {
		t.Errorf("inside the traced function: %v, want [true true false] once (the second call replays)", inside)
	}
}
