package cpu

import (
	"github.com/eagerflow/eagerflow/backend"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// RngBernoulliAt on the host: the draw tensor.RandBernoulliAt makes from
// the block the starts vector names.
func init() {
	kernels{i64: func(c *eager.Call, outs []*tensor.Tensor) {
		a := c.Attrs.(ops.RngBernoulliAtAttrs)
		base := uint64(backend.HostData[int64](c.Inputs[0])[a.Slot]) + a.Offset
		drawn := tensor.RandBernoulliAt(device.Host(), a.Key, base, a.DType, a.P, a.Shape...)
		copy(outs[0].HostBytes(), drawn.HostBytes())
	}}.register("RngBernoulliAt")
}
