package cuda

import (
	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/raw"
	"github.com/eagerflow/eagerflow/device"
)

// The handles package nccl queues its collectives with.
func init() {
	raw.Of = func(dev device.Device) (raw.Device, bool) {
		d, ok := dev.(*Device)
		if !ok {
			return raw.Device{}, false
		}
		return raw.Device{Driver: d.drv, Ctx: d.ctx, Stream: d.s, Sync: d.Synchronize,
			Ptr: func(b device.Buffer) (cu.Ptr, error) {
				gb, err := bufOf(b, d, "buffer")
				if err != nil {
					return 0, err
				}
				return gb.ptr, nil
			}}, true
	}
}
