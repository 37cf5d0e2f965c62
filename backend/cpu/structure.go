package cpu

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernel of Rev (ops/structure.go).

func init() {
	anyDType("Rev", revKernel)
}

func revKernel(c *eager.Call, outs []*tensor.Tensor) {
	x := c.Inputs[0]
	st := tensor.Strides(x.Shape(), nil)
	off := 0
	for _, d := range c.Attrs.(ops.RevAttrs).Dims {
		if x.Dim(d) > 0 {
			off += (x.Dim(d) - 1) * st[d]
		}
		st[d] = -st[d]
	}
	tensor.MoveElems(x.DType(), outs[0].HostBytes(), 0, tensor.Strides(x.Shape(), nil), x.HostBytes(), off, st, x.Shape())
}
