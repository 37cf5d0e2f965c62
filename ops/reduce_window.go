package ops

import (
	"fmt"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// ReduceWindowAttrs are ReduceWindow's reduction and window.
type ReduceWindowAttrs struct {
	Kind ReduceKind // ReduceSum, ReduceMax or ReduceMin
	Window
	// IdentityInit says init is the reduction's identity (0 for Sum, -Inf
	// for Max, +Inf for Min, or the integer bounds), so that it never wins
	// a window: the gradient of Max and Min then goes to the operand
	// alone, without comparing each result with init, and a device may
	// skip a Sum's padding taps. ReduceWindow sets it for a Max or Min
	// init whose value it knows (a constant on the host), MaxPool2D and
	// the gradient of a window sum always.
	IdentityInit bool
}

func (a ReduceWindowAttrs) String() string {
	if a.IdentityInit {
		return fmt.Sprintf("reduce=%s %v identity-init", reduceNames[a.Kind], a.Window)
	}
	return fmt.Sprintf("reduce=%s %v", reduceNames[a.Kind], a.Window)
}

// SelectKind picks one element of each window in SelectAndScatter: the
// first largest (SelectGE, max pooling) or the first smallest (SelectLE).
// Its values are SelectGE (the zero value) and SelectLE.
type SelectKind uint8

// The selections.
const (
	SelectGE SelectKind = iota
	SelectLE
)

// SelectAttrs are SelectAndScatter's selection and window.
type SelectAttrs struct {
	Select SelectKind
	Window
}

func (a SelectAttrs) String() string { return fmt.Sprintf("select=%d %v", a.Select, a.Window) }

var reduceWindowOp, selectAndScatterOp, selectAndGatherOp *eager.Op

func init() {
	reduceWindowOp = eager.Register(&eager.Op{
		Name: "ReduceWindow", Inputs: 2, DTypes: numericTypes, SameDTypes: true,
		Infer: func(c *eager.Call) []eager.Out {
			x, a := c.Inputs[0], c.Attrs.(ReduceWindowAttrs)
			if c.Inputs[1].Rank() != 0 {
				c.Fail(tensor.ErrRank, "init must be a scalar")
			}
			if a.Kind != ReduceSum && a.Kind != ReduceMax && a.Kind != ReduceMin {
				c.Fail(tensor.ErrAttr, "ReduceWindow supports Sum, Max and Min; use ReduceWindowWith for others")
			}
			a.Window.check(c, x.Shape())
			return c.Out1(x.DType(), a.Window.OutShape(x.Shape()))
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			x, init, dy, a := g.Inputs[0], g.Inputs[1], g.OutGrads[0], g.Attrs.(ReduceWindowAttrs)
			if a.Kind == ReduceSum {
				// Every tap receives its window's gradient.
				dx := spreadWindows(dy, x.Shape(), a.Window)
				// init enters each window once, plus once per padding tap:
				// the count is the window's sum over zeros with init 1.
				return []*tensor.Tensor{dx, when(g.Needs[1], func() *tensor.Tensor {
					if !a.pads() {
						return Sum(dy)
					}
					return padGradient(dy, true, func(zeros, one *tensor.Tensor) *tensor.Tensor {
						return eager.Run1(reduceWindowOp, a, zeros, one)
					}, x.Shape())
				})}
			}
			sel := SelectGE
			if a.Kind == ReduceMin {
				sel = SelectLE
			}
			// The chosen element takes the gradient, or init where it won
			// the window (its result equals init: a tie goes to init too).
			zero := ZerosLike(init)
			defer releaseTemp(zero)
			if a.IdentityInit {
				return []*tensor.Tensor{SelectAndScatter(x, dy, zero, sel, a.Window), nil}
			}
			won := Eq(g.Outputs[0], init)
			dx := SelectAndScatter(x, Where(won, zero, dy), zero, sel, a.Window)
			return []*tensor.Tensor{dx, when(g.Needs[1], func() *tensor.Tensor { return Sum(Where(won, dy, zero)) })}
		},
	})

	selectAndScatterOp = eager.Register(&eager.Op{
		Name: "SelectAndScatter", Inputs: 3, DTypes: numericTypes, SameDTypes: true,
		Infer: func(c *eager.Call) []eager.Out {
			x, src, a := c.Inputs[0], c.Inputs[1], c.Attrs.(SelectAttrs)
			if c.Inputs[2].Rank() != 0 {
				c.Fail(tensor.ErrRank, "init must be a scalar")
			}
			a.Window.check(c, x.Shape())
			if out := a.Window.OutShape(x.Shape()); !out.Equal(src.Shape()) {
				c.Fail(tensor.ErrShape, "source has shape %v, the window gives %v", src.Shape(), out)
			}
			return c.Out1(x.DType(), x.Shape())
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			x, dy := g.Inputs[0], g.OutGrads[0]
			var dsrc, dinit *tensor.Tensor
			if g.Needs[1] {
				dsrc = eager.Run1(selectAndGatherOp, g.Attrs, x, dy)
			}
			if g.Needs[2] {
				dinit = Sum(dy)
			}
			return []*tensor.Tensor{nil, dsrc, dinit}
		},
	})

	selectAndGatherOp = eager.Register(&eager.Op{
		Name: "SelectAndGather", Inputs: 2, DTypes: numericTypes, SameDTypes: true,
		Infer: func(c *eager.Call) []eager.Out {
			x, a := c.Inputs[0], c.Attrs.(SelectAttrs)
			if !c.Inputs[1].Shape().Equal(x.Shape()) {
				c.Fail(tensor.ErrShape, "gradient has shape %v, operand %v", c.Inputs[1].Shape(), x.Shape())
			}
			a.Window.check(c, x.Shape())
			return c.Out1(x.DType(), a.Window.OutShape(x.Shape()))
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			x, dy := g.Inputs[0], g.OutGrads[0]
			return []*tensor.Tensor{nil, when(g.Needs[1], func() *tensor.Tensor {
				return eager.Run1(selectAndScatterOp, g.Attrs, x, dy, ScalarLike(dy, 0))
			})}
		},
	})
}

// spreadWindows is the gradient of a window sum in its operand: each
// operand element of shape the sum of dy over the windows w that hold it.
// It is a window sum itself, as XLA transposes a reduce-window
// (transposedWindow): no patch matrix is made, and the backends run a 2-D
// pooling's as pooling kernels (the GPU's pool2d_spread, the CPU's
// spreadSums), each element summing the windows over it. On the CPU,
// windows side by side (average pooling's usual: a stride of the window)
// copy each window's gradient over its block instead (tiledSpread, some
// 20% faster there), and windows of other shapes keep ScatterPatches of dy
// broadcast over the window (its ReduceWindow has no fast path for a base
// dilation: 2.3x slower). SpreadOf recognises the 2-D poolings' (low
// padding less than the window) in the backends.
func spreadWindows(dy *tensor.Tensor, operand tensor.Shape, w Window) *tensor.Tensor {
	empty := operand.NumElements() == 0 || dy.NumElements() == 0
	cpu := dy.Device().Kind() == device.CPU
	if !empty && cpu && tiledWindows(w) {
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

// AsPooling2D describes w (its defaults filled) over an operand of shape
// as a 2-D pooling: rank 4, NHWC or NCHW (the batch and the channels left
// alone), no dilation, no negative padding; ok is false otherwise. The
// backends' pooling kernels take it.
func (w Window) AsPooling2D(shape tensor.Shape) (p Pooling2D, ok bool) {
	if len(shape) != 4 || len(w.Dims) != 4 {
		return p, false
	}
	for d := range 4 {
		if w.BaseDilation[d] != 1 || w.WindowDilation[d] != 1 || w.Padding[d][0] < 0 || w.Padding[d][1] < 0 {
			return p, false
		}
	}
	hd, wd, cd, nhwc, ok := poolAxes(func(d int) bool { return w.Dims[d] == 1 && w.Strides[d] == 1 && w.Padding[d] == [2]int{} })
	if !ok {
		return p, false
	}
	out := w.OutShape(shape)
	return Pooling2D{N: shape[0], C: shape[cd], H: shape[hd], W: shape[wd], OH: out[hd], OW: out[wd],
		KH: w.Dims[hd], KW: w.Dims[wd], SH: w.Strides[hd], SW: w.Strides[wd], PH: w.Padding[hd][0], PW: w.Padding[wd][0], NHWC: nhwc}, true
}

// poolAxes finds a 4-D pooling window's dimensions of height, width and
// channels: NHWC where the batch and the channels are plain (plain(d): the
// window leaves dimension d alone), else NCHW where the batch and
// dimension 1 are; ok is false for neither.
func poolAxes(plain func(d int) bool) (h, w, c int, nhwc, ok bool) {
	switch {
	case plain(0) && plain(3):
		return 1, 2, 3, true, true
	case plain(0) && plain(1):
		return 2, 3, 1, false, true
	}
	return 0, 0, 0, false, false
}

// Pooling2D is a 2-D pooling: N images of C channels, H x W, in OH x OW
// windows of KH x KW at strides SH and SW, padded by PH rows above and PW
// columns to the left; NHWC for channels last, else NCHW.
type Pooling2D struct {
	N, C, H, W, OH, OW     int
	KH, KW, SH, SW, PH, PW int
	NHWC                   bool
}

// SpreadOf reports whether a's window sums over dy (of shape dy) into out
// are the gradient of a 2-D pooling's window sums, as the gradient of
// ReduceWindow's Sum asks for them (a window of the pooling's size over dy
// dilated by its strides, a stride of 1, a low padding of the window less
// one less the pooling's, zero for init: IdentityInit), and returns that
// pooling, whose windows the backends walk instead (each element summing
// the windows over it).
func (a ReduceWindowAttrs) SpreadOf(dy, out tensor.Shape) (Pooling2D, bool) {
	w := a.Window
	if a.Kind != ReduceSum || !a.IdentityInit || len(dy) != 4 || len(out) != 4 || len(w.Dims) != 4 {
		return Pooling2D{}, false
	}
	hd, wd, cd, nhwc, ok := poolAxes(func(d int) bool {
		return w.Dims[d] == 1 && w.Strides[d] == 1 && w.BaseDilation[d] == 1 && w.WindowDilation[d] == 1 && w.Padding[d] == [2]int{}
	})
	if !ok {
		return Pooling2D{}, false
	}
	for _, d := range []int{hd, wd} {
		if lo := w.Padding[d][0]; w.Strides[d] != 1 || w.WindowDilation[d] != 1 || lo < 0 || lo >= w.Dims[d] {
			return Pooling2D{}, false
		}
	}
	return Pooling2D{N: out[0], C: out[cd], H: out[hd], W: out[wd], OH: dy[hd], OW: dy[wd],
		KH: w.Dims[hd], KW: w.Dims[wd], SH: w.BaseDilation[hd], SW: w.BaseDilation[wd],
		PH: w.Dims[hd] - 1 - w.Padding[hd][0], PW: w.Dims[wd] - 1 - w.Padding[wd][0], NHWC: nhwc}, true
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

// ReduceWindow is XLA's ReduceWindow with a built-in reduction (ReduceSum,
// ReduceMax or ReduceMin): x: [n...] -> [out...], each output the reduction
// of init and its window's taps (padding taps count as init). The gradient
// of Max and Min goes through SelectAndScatter.
func ReduceWindow(x, init *tensor.Tensor, kind ReduceKind, w Window) *tensor.Tensor {
	return reduceWindow(x, init, ReduceWindowAttrs{Kind: kind, Window: w.withDefaults(rankOf(x)), IdentityInit: isIdentity(init, kind)})
}

func reduceWindow(x, init *tensor.Tensor, a ReduceWindowAttrs) *tensor.Tensor {
	return eager.Run1(reduceWindowOp, a, x, init)
}

// isIdentity reports whether init is known to hold the identity of a Max
// or Min reduction (what reducing nothing gives: -Inf or +Inf, the
// integer bounds): a scalar constant on the host that no tape or trace
// follows.
func isIdentity(init *tensor.Tensor, kind ReduceKind) bool {
	if init == nil || (kind != ReduceMax && kind != ReduceMin) || init.Rank() != 0 || init.Device().Kind() != device.CPU ||
		init.Autodiff() != nil || init.Traced() != nil || init.IsVariable() || init.ValuesDropped() {
		return false
	}
	identity := Reduce(tensor.Zeros(init.DType(), 0), Reduction{Kind: kind})
	return tensor.ToSlice[bool](Eq(init, identity))[0]
}

// ReduceWindowWith is ReduceWindow with a user reduction f (associative,
// commutative, elementwise; see ReduceWith), computed over ExtractPatches.
func ReduceWindowWith(x, init *tensor.Tensor, f func(a, b *tensor.Tensor) *tensor.Tensor, w Window) *tensor.Tensor {
	p := ExtractPatches(x, init, w)
	dims := make([]int, x.Rank())
	for i := range dims {
		dims[i] = x.Rank() + i
	}
	return ReduceWith(p, init, f, dims...)
}

// SelectAndScatter is XLA's SelectAndScatter with Add as the scatter: the
// output has operand's shape, filled with init, and each window of operand
// adds its source value (source has the window-positions shape) at the
// element sel chooses in it. It is max pooling's gradient. Padding is never
// chosen.
func SelectAndScatter(operand, source, init *tensor.Tensor, sel SelectKind, w Window) *tensor.Tensor {
	return eager.Run1(selectAndScatterOp, SelectAttrs{Select: sel, Window: w.withDefaults(rankOf(operand))}, operand, source, init)
}
