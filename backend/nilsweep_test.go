package backend_test

import (
	"testing"

	"github.com/eagerflow/eagerflow/backend"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/nilsweep"
	"github.com/eagerflow/eagerflow/tensor"
)

// Every exported function, given nil arguments, says what was nil.
func TestNilArgumentsAreReported(t *testing.T) {
	buf, err := device.Host().Alloc(8)
	if err != nil {
		t.Fatal(err)
	}
	fns := []nilsweep.Func{
		{Name: "MustEmptyHost", Fn: backend.MustEmptyHost, Valid: []any{tensor.Float32, tensor.Shape{2}}},
		{Name: "FromBuffer", Fn: backend.FromBuffer, Valid: []any{buf, tensor.Float32, tensor.Shape{2}}},
		{Name: "OnHost", Fn: backend.OnHost, Valid: []any{tensor.Zeros(tensor.Float32, 2)}},
	}
	movers := "element movers over buffers the caller sizes"
	nilsweep.Covered(t, ".", fns, map[string]string{"MoveElems": movers, "FillElems": movers, "View32": movers, "View64": movers})
	nilsweep.Sweep(t, fns)
}
