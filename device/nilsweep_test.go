package device_test

import (
	"testing"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/nilsweep"
)

// Every exported function, given nil arguments, says what was nil.
func TestNilArgumentsAreReported(t *testing.T) {
	fns := []nilsweep.Func{
		{Name: "NewHostDevice", Fn: device.NewHostDevice},
		{Name: "With", Fn: device.With, Valid: []any{device.SecondCPU(), func() {}}},
		{Name: "WithSoft", Fn: device.WithSoft, Valid: []any{device.SecondCPU(), func() {}}},
		{Name: "Scope", Fn: device.Scope},
		{Name: "RegisterKind", Fn: func(name string) { device.RegisterKind(name) }, Valid: []any{"nilsweep"}},
		{Name: "CheckAlloc", Fn: device.CheckAlloc},
		{Name: "Register", Fn: device.Register, Registration: true},
		{Name: "Lookup", Fn: device.Lookup},
		{Name: "Devices", Fn: device.Devices},
		{Name: "Host", Fn: device.Host},
		{Name: "SecondCPU", Fn: device.SecondCPU},
		{Name: "Default", Fn: device.Default},
		{Name: "SetDefault", Fn: func(d device.Device) { device.SetDefault(d)() }},
	}
	elems := "element arithmetic on buffers the caller sizes"
	nilsweep.Covered(t, ".", fns, map[string]string{"View32": elems, "View64": elems, "MoveElems": elems, "FillElems": elems})
	nilsweep.Sweep(t, fns)
}
