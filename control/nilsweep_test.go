package control_test

import (
	"testing"

	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/internal/nilsweep"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Every exported function, given nil arguments, says what was nil.
func TestNilArgumentsAreReported(t *testing.T) {
	x := tensor.FromSlice([]float64{1, 2})
	yes := tensor.Scalar(true)
	branch := func() []T { return []T{x} }
	lt := func(v []T) T { return ops.Lt(ops.Sum(v[0]), ops.ScalarLike(v[0], 10)) }
	double := func(v []T) []T { return []T{ops.Add(v[0], v[0])} }
	fns := []nilsweep.Func{
		{Name: "Cond", Fn: control.Cond, Valid: []any{yes, branch, branch}},
		{Name: "Case", Fn: control.Case, Valid: []any{tensor.Scalar(int32(0)), []func() []T{branch, branch}}},
		{Name: "While", Fn: control.While, Valid: []any{lt, double, []T{x}, []control.WhileOptions{}}},
		{Name: "Fori", Fn: control.Fori, Valid: []any{0, 2, func(_ T, v []T) []T { return double(v) }, []T{x}, []control.WhileOptions{}}},
		{Name: "Scan", Fn: control.Scan, Valid: []any{func(c, x []T) ([]T, []T) { return c, x }, []T{x}, []T{x}}},
		{Name: "NewFunction", Fn: func(f func([]T) []T) error { _, err := control.NewFunction(f).Call(x); return err }},
		{Name: "NewFunctionWithSignature", Fn: func(f func([]T) []T) error { _, err := control.NewFunctionWithSignature(f).Call(x); return err }},
		{Name: "Execute", Fn: control.Execute},
	}
	nilsweep.Covered(t, ".", fns, nil)
	nilsweep.Sweep(t, fns)
}
