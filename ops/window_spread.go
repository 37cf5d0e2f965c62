package ops

import (
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// The gradient of a window sum (ReduceWindow's Sum, AvgPool2D) in its
// operand, made without a patch matrix.

// spreadWindows is the gradient of a window sum in its operand: each
// operand element of shape the sum of dy over the windows w that hold it.
// It is a window sum itself, as XLA transposes a reduce-window
// (transposedWindow): no patch matrix is made, and the backends run a 2-D
// pooling's as pooling kernels (the GPU's pool2d_spread, the CPU's
// spreadSums), each element summing the windows over it. On the CPU,
// windows side by side (average pooling's usual: a stride of the window)
// that leave the last dimension alone (NHWC's channels: long runs to copy)
// copy each window's gradient over its block instead (tiledSpread, some
// 20% faster there; over NCHW's columns, a copy an element at a time, 40%
// slower than the spread), and windows of other shapes keep ScatterPatches
// of dy broadcast over the window (its ReduceWindow has no fast path for a
// base dilation: 2.3x slower). The backends find a 2-D pooling's
// transposed window (low padding less than the window) by
// ReduceWindowAttrs.SpreadOf.
func spreadWindows(dy *tensor.Tensor, operand tensor.Shape, w Window) *tensor.Tensor {
	empty := operand.NumElements() == 0 || dy.NumElements() == 0
	cpu := dy.Device().Kind() == device.CPU
	if !empty && cpu && tiledWindows(w) && w.Dims[len(w.Dims)-1] == 1 {
		return tiledSpread(dy, operand, w)
	}
	if p, ok := w.AsPooling2D(operand); !empty && (!cpu || ok && p.PH < p.KH && p.PW < p.KW) {
		zero := ScalarLike(dy, 0)
		defer releaseTemp(zero)
		a := ReduceWindowAttrs{Kind: ReduceSum, Window: transposedWindow(dy.Shape(), operand, w), IdentityInit: true}
		return eager.Run1(reduceWindowOp, a, dy, zero)
	}
	lifted := Reshape(dy, append(dy.Shape().Clone(), ones(len(operand))...)...)
	spread := BroadcastTo(lifted, append(dy.Shape().Clone(), w.Dims...)...)
	defer releaseTemp(lifted) // a view: its hold on dy's buffer
	defer releaseTemp(spread)
	return ScatterPatches(spread, operand, w)
}

// tiledWindows reports whether w's windows stand side by side, no
// dilation, a stride of the window, and one of them holds more than one
// element.
func tiledWindows(w Window) bool {
	wide := false
	for d := range w.Dims {
		if w.Strides[d] != w.Dims[d] || w.BaseDilation[d] != 1 || w.WindowDilation[d] != 1 {
			return false
		}
		wide = wide || w.Dims[d] > 1
	}
	return wide
}

// tiledSpread is spreadWindows of tiledWindows: dy repeated over each
// window's block (a copy of dy broadcast along each dimension), then cut
// or padded with zeros to the operand where the windows begin before it
// or end short of it.
func tiledSpread(dy *tensor.Tensor, operand tensor.Shape, w Window) *tensor.Tensor {
	r := len(operand)
	lifted, wide, flat := make([]int, 0, 2*r), make([]int, 0, 2*r), make([]int, r)
	cfg, cut := make([]PadDim, r), false
	for d := range r {
		n := dy.Dim(d)
		lifted, wide, flat[d] = append(lifted, n), append(wide, n), n*w.Dims[d]
		if w.Dims[d] > 1 { // a dimension to repeat along (none for the others: longer runs to copy)
			lifted, wide = append(lifted, 1), append(wide, w.Dims[d])
		}
		cfg[d] = PadDim{Low: -w.Padding[d][0], High: operand[d] - flat[d] + w.Padding[d][0]}
		cut = cut || cfg[d] != PadDim{}
	}
	up := Reshape(dy, lifted...)
	defer releaseTemp(up) // views: their holds on dy's buffer
	spread := BroadcastTo(up, wide...)
	defer releaseTemp(spread)
	blocks := Reshape(spread, flat...) // a copy: one window holds several elements
	if !cut {
		return blocks
	}
	defer releaseTemp(blocks)
	zero := ScalarLike(dy, 0)
	defer releaseTemp(zero)
	return Pad(blocks, zero, cfg...)
}

// transposedWindow is the window whose sums over dy (the window sums of
// w over operand) give spreadWindows: over dy dilated by w's strides,
// window k reads operand element k's windows (their taps backwards: the
// same, summed), at w's window dilation and a stride of w's base
// dilation, padded so that window 0 starts at operand element 0's first
// window and there are as many as operand elements.
func transposedWindow(dy, operand tensor.Shape, w Window) Window {
	r := len(operand)
	t := Window{Dims: w.Dims, Strides: w.BaseDilation, BaseDilation: w.Strides, WindowDilation: w.WindowDilation, Padding: make([][2]int, r)}
	for d := range r {
		extent := (w.Dims[d]-1)*w.WindowDilation[d] + 1
		lo := extent - 1 - w.Padding[d][0]
		dilated := (dy[d]-1)*w.Strides[d] + 1
		t.Padding[d] = [2]int{lo, (operand[d]-1)*w.BaseDilation[d] + extent - dilated - lo}
	}
	return t
}
