package cpu

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernels of DynamicSlice and DynamicUpdateSlice (ops/dynamic.go).

// clampedStarts reads starts and clamps each into [0, dim-size], as XLA
// does, so a slice never leaves the operand.
func clampedStarts(starts *tensor.Tensor, shape tensor.Shape, sizes []int) []int {
	v := indexValues(starts)
	out := make([]int, len(v))
	for d, s := range v {
		out[d] = int(min(max(s, 0), int64(shape[d]-sizes[d])))
	}
	return out
}

func init() {
	anyDType("DynamicSlice", dynamicSliceKernel)
	anyDType("DynamicUpdateSlice", dynamicUpdateSliceKernel)
}

func dynamicSliceKernel(c *eager.Call, outs []*tensor.Tensor) {
	x, out := c.Inputs[0], outs[0]
	starts := clampedStarts(c.Inputs[1], x.Shape(), c.Attrs.(ops.SizesAttrs).Sizes)
	xs := tensor.Strides(x.Shape(), nil)
	off := 0
	for d, s := range starts {
		off += s * xs[d]
	}
	tensor.MoveElems(x.DType(), out.HostBytes(), 0, tensor.Strides(out.Shape(), nil), x.HostBytes(), off, xs, out.Shape())
}

func dynamicUpdateSliceKernel(c *eager.Call, outs []*tensor.Tensor) {
	x, u, out := c.Inputs[0], c.Inputs[1], outs[0]
	copy(out.HostBytes(), x.HostBytes())
	starts := clampedStarts(c.Inputs[2], x.Shape(), u.Shape())
	os := tensor.Strides(x.Shape(), nil)
	off := 0
	for d, s := range starts {
		off += s * os[d]
	}
	tensor.MoveElems(x.DType(), out.HostBytes(), off, os, u.HostBytes(), 0, tensor.Strides(u.Shape(), nil), u.Shape())
}
