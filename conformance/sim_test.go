package conformance

import (
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// simKind is a device kind that no backend ships. This file does what a
// new backend does, and nothing else: it registers kernels for its kind
// (here the CPU's, as a stand-in) and a device of that kind. The table
// then runs every op on that device as well and compares it with cpu:0
// within each dtype's tolerance.
var simKind = device.RegisterKind("sim")

func init() {
	for _, op := range eager.Ops() {
		for dt := range tensor.DType(tensor.NumDTypes) {
			if k := op.Kernel(device.CPU, dt); k != nil {
				eager.RegisterKernel(op.Name, simKind, dt, k)
			}
		}
	}
	device.Register(device.NewHostDevice("sim:0", simKind))
}
