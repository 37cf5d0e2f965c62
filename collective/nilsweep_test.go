package collective

import (
	"testing"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/nilsweep"
	"github.com/eagerflow/eagerflow/tensor"
)

// Every exported function, given nil arguments, says what was nil.
func TestNilArgumentsAreReported(t *testing.T) {
	x := tensor.Zeros(tensor.Float32, 2)
	fns := []nilsweep.Func{
		{Name: "DeviceOf", Fn: DeviceOf},
		{Name: "CheckUntraced", Fn: CheckUntraced, Valid: []any{"AllReduce", []*tensor.Tensor{x, x}}},
		{Name: "NewRendezvous", Fn: NewRendezvous},
		{Name: "Single", Fn: Single},
		{Name: "Loopback", Fn: Loopback},
		{Name: "RankCPU", Fn: RankCPU, Valid: []any{1}},
		{Name: "RankOf", Fn: RankOf, Valid: []any{RankCPU(1)}},
		{Name: "AssignRank", Fn: AssignRank, Valid: []any{device.NewHostDevice("sweep:0", device.CPU), 1}},
		// Single's communicator, as every Comm must: a nil tensor is an
		// error.
		{Name: "Single AllReduce", Fn: func(t *tensor.Tensor) error { _, err := Single().AllReduce(t, Sum); return err }},
		{Name: "Single Broadcast", Fn: func(t *tensor.Tensor) error { _, err := Single().Broadcast(t, 0); return err }},
		{Name: "Single AllGather", Fn: func(t *tensor.Tensor) error { _, err := Single().AllGather(t); return err }},
		{Name: "Single ReduceScatter", Fn: func(t *tensor.Tensor) error { _, err := Single().ReduceScatter(t, Sum); return err }},
		{Name: "Single Send", Fn: func(t *tensor.Tensor) error { return Single().Send(t, 0, 0) }},
		{Name: "Single Recv", Fn: func(t *tensor.Tensor) error { _, err := Single().Recv(t, 0, 0); return err }},
	}
	nilsweep.Covered(t, ".", fns, nil)
	nilsweep.Sweep(t, fns)
}
