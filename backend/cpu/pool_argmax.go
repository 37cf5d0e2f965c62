package cpu

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernels of MaxPool2DWithArgmax, MaxUnpool2D and MaxUnpool2DGather
// (ops/pool_argmax.go): a window at a time, its taps' offsets listed in
// row-major window order. MaxPool2D on the CPU searches its windows again
// in the backward pass (window_plane*.go, window_chan.go) and does not
// call these: they give the ops their values on the CPU (the reference
// the GPU's are checked against) for programs that call them.

// poolTaps calls fn for each window of w (no dilation) over an operand of
// shape, windows in row-major order (i), with the operand offsets of its
// taps in row-major window order, -1 for a tap on padding. offs is reused
// from call to call.
func poolTaps(shape tensor.Shape, w ops.Window, fn func(i int, offs []int)) {
	out, r := w.OutShape(shape), len(shape)
	n := out.NumElements()
	if n == 0 {
		return
	}
	strides, taps := tensor.Strides(shape, nil), 1
	for _, k := range w.Dims {
		taps *= k
	}
	offs, at, tap := make([]int, taps), make([]int, r), make([]int, r)
	next := func(ix, bound []int) { // the row-major successor of index ix
		for d := r - 1; d >= 0; d-- {
			if ix[d]++; ix[d] < bound[d] {
				return
			}
			ix[d] = 0
		}
	}
	for i := range n {
		for t := range offs {
			off := 0
			for d := range r {
				c := at[d]*w.Strides[d] - w.Padding[d][0] + tap[d]
				if c < 0 || c >= shape[d] {
					off = -1
					break
				}
				off += c * strides[d]
			}
			offs[t] = off
			next(tap, w.Dims)
		}
		fn(i, offs)
		next(at, out)
	}
}

func maxPoolArgmaxKernel[T tensor.Num](c *eager.Call, outs []*tensor.Tensor) {
	x, w := data[T](c.Inputs[0]), c.Attrs.(ops.Window)
	y, sel := data[T](outs[0]), data[uint8](outs[1])
	poolTaps(c.Inputs[0].Shape(), w, func(i int, offs []int) {
		at, chosen := -1, ops.PoolNoTap
		for t, off := range offs {
			if off >= 0 && (at < 0 || beats(x[off], x[at], true)) {
				at, chosen = off, t
			}
		}
		y[i], sel[i] = lowest[T](), uint8(chosen)
		if at >= 0 {
			y[i] = x[at]
		}
	})
}

func maxUnpoolKernel[T tensor.Num](c *eager.Call, outs []*tensor.Tensor) {
	v, sel, a := data[T](c.Inputs[0]), data[uint8](c.Inputs[1]), c.Attrs.(ops.PatchesAttrs)
	out := data[T](outs[0])
	clear(out)
	poolTaps(a.Operand, a.Window, func(i int, offs []int) {
		if at := chosenOffset(offs, sel[i]); at >= 0 {
			out[at] += v[i]
		}
	})
}

func maxUnpoolGatherKernel[T tensor.Num](c *eager.Call, outs []*tensor.Tensor) {
	g, sel, a := data[T](c.Inputs[0]), data[uint8](c.Inputs[1]), c.Attrs.(ops.PatchesAttrs)
	out := data[T](outs[0])
	poolTaps(a.Operand, a.Window, func(i int, offs []int) {
		out[i] = 0
		if at := chosenOffset(offs, sel[i]); at >= 0 {
			out[i] = g[at]
		}
	})
}

// chosenOffset is the operand offset of tap t of a window whose taps are
// at offs, or -1 where t names no tap inside the operand (PoolNoTap, a
// number past the window's taps or a tap on padding, which taps of
// another making may hold: such a window chooses nothing, as on the GPU).
func chosenOffset(offs []int, t uint8) int {
	if int(t) >= len(offs) {
		return -1
	}
	return offs[t]
}

func init() {
	numKernelSet(maxPoolArgmaxKernel[float32], maxPoolArgmaxKernel[float64], maxPoolArgmaxKernel[int32], maxPoolArgmaxKernel[int64], maxPoolArgmaxKernel[uint8]).register("MaxPool2DWithArgmax")
	numKernelSet(maxUnpoolKernel[float32], maxUnpoolKernel[float64], maxUnpoolKernel[int32], maxUnpoolKernel[int64], maxUnpoolKernel[uint8]).register("MaxUnpool2D")
	numKernelSet(maxUnpoolGatherKernel[float32], maxUnpoolGatherKernel[float64], maxUnpoolGatherKernel[int32], maxUnpoolGatherKernel[int64], maxUnpoolGatherKernel[uint8]).register("MaxUnpool2DGather")
}
