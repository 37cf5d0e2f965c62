package eager_test

import (
	"testing"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/nilsweep"
	"github.com/eagerflow/eagerflow/tensor"
)

// Every exported function, given nil arguments, says what was nil.
func TestNilArgumentsAreReported(t *testing.T) {
	identity := eager.Lookup("Identity")
	x := tensor.Zeros(tensor.Float32, 2)
	noop := func(*eager.Call, []*tensor.Tensor) {}
	fns := []nilsweep.Func{
		{Name: "AddObserver", Fn: eager.AddObserver, Registration: true},
		{Name: "Run", Fn: eager.Run, Valid: []any{identity, nil, []*tensor.Tensor{x}}},
		{Name: "RunTo", Fn: eager.RunTo, Valid: []any{[]*tensor.Tensor{nil}, identity, nil, []*tensor.Tensor{x}}},
		{Name: "RunPlaced", Fn: eager.RunPlaced, Valid: []any{identity, nil, []*tensor.Tensor{x}}},
		{Name: "Run1", Fn: eager.Run1, Valid: []any{identity, nil, []*tensor.Tensor{x}}},
		{Name: "Catch", Fn: eager.Catch},
		{Name: "RegisterFuser", Fn: eager.RegisterFuser, Valid: []any{device.Kind(0), nil}, Registration: true},
		{Name: "FuserFor", Fn: eager.FuserFor},
		{Name: "Register", Fn: eager.Register, Registration: true},
		{Name: "Ops", Fn: eager.Ops},
		{Name: "Lookup", Fn: eager.Lookup},
		{Name: "RegisterKernel", Fn: eager.RegisterKernel, Valid: []any{"NilsweepNoSuchOp", device.Kind(0), tensor.Float32, eager.Kernel(noop)}, Registration: true},
		{Name: "RegisterPortable", Fn: eager.RegisterPortable, Valid: []any{"NilsweepNoSuchOp", tensor.Float32, eager.Kernel(noop)}, Registration: true},
		{Name: "RegisterElementwise", Fn: eager.RegisterElementwise, Registration: true},
		{Name: "AttrString", Fn: eager.AttrString},
		{Name: "SetConverter", Fn: eager.SetConverter, Registration: true},
		{Name: "ThroughFloat32", Fn: eager.ThroughFloat32}, // a nil call is false
		{Name: "SetProfileHook", Fn: eager.SetProfileHook}, // nil removes the hook
		{Name: "Profiled", Fn: eager.Profiled, Valid: []any{"Work", device.Host(), []*tensor.Tensor{x}, func() {}}},
	}
	counters := "no argument: counters of the observers"
	nilsweep.Covered(t, ".", fns, map[string]string{"Activate": counters, "Activations": counters, "Deactivate": counters, "Observing": counters, "Profiling": "no argument: whether a hook is set"})
	nilsweep.Sweep(t, fns)
}
