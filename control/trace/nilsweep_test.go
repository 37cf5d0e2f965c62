package trace_test

import (
	"testing"

	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/internal/nilsweep"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Every exported function and a Function's methods, given nil arguments,
// say what was nil.
func TestNilArgumentsAreReported(t *testing.T) {
	x := tensor.FromSlice([]float64{1, 2})
	fn := func(a []T) []T { return []T{ops.Square(a[0])} }
	fns := []nilsweep.Func{
		{Name: "NewFunction", Fn: func(f func([]T) []T) error { _, err := trace.NewFunction(f).Call(x); return err }},
		{Name: "NewFunctionWithSignature", Fn: func(f func([]T) []T, sig ...trace.InputSpec) error {
			_, err := trace.NewFunctionWithSignature(f, sig...).Call(x)
			return err
		}, Valid: []any{fn, []trace.InputSpec{{DType: tensor.Float64, Shape: []int{-1}}}}},
		{Name: "Function.Call", Fn: func(args ...T) error { _, err := trace.NewFunction(fn).Call(args...); return err }},
		{Name: "Function.CallOwned", Fn: func(args ...T) error { _, _, err := trace.NewFunction(fn).CallOwned(args...); return err }},
		{Name: "Function.Graph", Fn: func(args ...T) { trace.NewFunction(fn).Graph(args...) }},
		{Name: "Function.RecordError", Fn: func(args ...T) { _ = trace.NewFunction(fn).RecordError(args...) }},
	}
	nilsweep.Covered(t, ".", fns, map[string]string{
		"Function.Traces": "no argument",
		"Recording":       "a question: nil values are no trace's (false)",
	}, "Function")
	nilsweep.Sweep(t, fns)
}
