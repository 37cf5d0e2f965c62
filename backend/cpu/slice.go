package cpu

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernels of Slice, Pad and Concatenate (ops/slice.go).

func init() {
	anyDType("Slice", sliceKernel)
	anyDType("Pad", padKernel)
	anyDType("Concatenate", concatenateKernel)
}

func sliceKernel(c *eager.Call, outs []*tensor.Tensor) {
	x, a, out := c.Inputs[0], c.Attrs.(ops.SliceAttrs), outs[0]
	xs := tensor.Strides(x.Shape(), nil)
	off, st := 0, make([]int, x.Rank())
	for d := range st {
		off += a.Start[d] * xs[d]
		st[d] = xs[d] * a.Stride(d)
	}
	tensor.MoveElems(x.DType(), out.HostBytes(), 0, tensor.Strides(out.Shape(), nil), x.HostBytes(), off, st, out.Shape())
}

func padKernel(c *eager.Call, outs []*tensor.Tensor) {
	x, cfg, out := c.Inputs[0], c.Attrs.(ops.PadAttrs).Dims, outs[0]
	tensor.FillElems(x.DType(), out.HostBytes(), c.Inputs[1].HostBytes())
	os, xs := tensor.Strides(out.Shape(), nil), tensor.Strides(x.Shape(), nil)
	box := make([]int, x.Rank())
	dSt, dOff, sOff := make([]int, x.Rank()), 0, 0
	for d, p := range cfg {
		step := p.Interior + 1
		// First and one-past-last input index whose position lands inside.
		first := 0
		if p.Low < 0 {
			first = (-p.Low + step - 1) / step
		}
		last := x.Dim(d)
		for last > first && p.Low+(last-1)*step >= out.Dim(d) {
			last--
		}
		box[d] = max(last-first, 0)
		dSt[d] = os[d] * step
		dOff += (p.Low + first*step) * os[d]
		sOff += first * xs[d]
	}
	tensor.MoveElems(x.DType(), out.HostBytes(), dOff, dSt, x.HostBytes(), sOff, xs, box)
}

func concatenateKernel(c *eager.Call, outs []*tensor.Tensor) {
	out := outs[0]
	axis := c.Attrs.(ops.AxisAttrs).Axis
	os := tensor.Strides(out.Shape(), nil)
	at := 0
	for _, x := range c.Inputs {
		tensor.MoveElems(x.DType(), out.HostBytes(), at*os[axis], os, x.HostBytes(), 0, tensor.Strides(x.Shape(), nil), x.Shape())
		at += x.Dim(axis)
	}
}
