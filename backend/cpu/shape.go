package cpu

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernels of the ops that move elements (ops/shape.go).

func init() {
	anyDType("Reshape", copyKernel)
	anyDType("Transpose", transposeKernel)
	anyDType("BroadcastTo", broadcastToKernel)
}

func transposeKernel(c *eager.Call, outs []*tensor.Tensor) {
	x, perm := c.Inputs[0].Contiguous(), c.Attrs.(ops.PermAttrs).Perm
	xs := tensor.Strides(x.Shape(), nil)
	st := make([]int, len(perm))
	for i, p := range perm {
		st[i] = xs[p]
	}
	out := outs[0]
	tensor.MoveElems(x.DType(), out.HostBytes(), 0, tensor.Strides(out.Shape(), nil), x.HostBytes(), 0, st, out.Shape())
}

func broadcastToKernel(c *eager.Call, outs []*tensor.Tensor) {
	x, out := c.Inputs[0], outs[0]
	rank := out.Rank()
	st := make([]int, rank)
	xs := tensor.Strides(x.Shape(), nil)
	off := rank - x.Rank()
	for d := off; d < rank; d++ {
		if x.Dim(d-off) != 1 {
			st[d] = xs[d-off]
		}
	}
	tensor.MoveElems(x.DType(), out.HostBytes(), 0, tensor.Strides(out.Shape(), nil), x.HostBytes(), 0, st, out.Shape())
}

// permuted returns x (row-major) with its dimensions in the order perm, as
// a new row-major tensor: dimension i of the result is dimension perm[i]
// of x.
func permuted(x *tensor.Tensor, perm []int) *tensor.Tensor {
	r := len(perm)
	shape, inv := make(tensor.Shape, r), make([]int, r)
	for i, p := range perm {
		shape[i], inv[p] = x.Dim(p), i
	}
	// x's dimensions, minor to major, named by their place in the result.
	layout := make(tensor.Layout, r)
	for i := range layout {
		layout[i] = inv[r-1-i]
	}
	return x.View(shape, layout).Contiguous()
}
