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
}

func (a ReduceWindowAttrs) String() string {
	return fmt.Sprintf("reduce=%s %v", reduceNames[a.Kind], a.Window)
}

func reduceWindowKernel[T tensor.Num](c *eager.Call, outs []*tensor.Tensor) {
	x, a := c.Inputs[0], c.Attrs.(ReduceWindowAttrs)
	xv, ov, init := data[T](x), data[T](outs[0]), data[T](c.Inputs[1])[0]
	if p, ok := planeOf(x.Shape(), a.Window); ok {
		planeReduce(cpu(c), p, xv, ov, init, a.Kind)
		return
	}
	g := kernelGeometry(x.Shape(), a.Window)
	ro := g.offs[g.rowDim]
	g.rows(cpu(c), true, func(i0 int, o []int, outer int, kb []int) {
		if outer >= 0 && g.rowInside {
			reduceRow(ov[i0:i0+g.out[g.rowDim]], xv[outer+ro[0]:], g.woff, g.rowStep, init, a.Kind)
			return
		}
		for r := range g.out[g.rowDim] {
			acc := init
			if outer >= 0 && ro[r] >= 0 {
				taps := xv[outer+ro[r]:]
				switch a.Kind {
				case ReduceMax:
					for _, off := range g.woff {
						acc = max(acc, taps[off])
					}
				case ReduceMin:
					for _, off := range g.woff {
						acc = min(acc, taps[off])
					}
				default:
					for _, off := range g.woff {
						acc += taps[off]
					}
				}
			} else {
				o[g.rowDim] = r
				g.borderTaps(o, kb, func(off int) {
					v := init
					if off >= 0 {
						v = xv[off]
					}
					switch a.Kind {
					case ReduceMax:
						acc = max(acc, v)
					case ReduceMin:
						acc = min(acc, v)
					default:
						acc += v
					}
				})
			}
			ov[i0+r] = acc
		}
	})
}

// reduceRow reduces a row of windows that all lie inside the operand, one
// tap at a time across the row (a tight strided loop per tap): window r's
// taps are x[r*step + woff[j]].
func reduceRow[T tensor.Num](out, x []T, woff []int, step int, init T, kind ReduceKind) {
	for r := range out {
		out[r] = init
	}
	for _, off := range woff {
		src := x[off:]
		switch kind {
		case ReduceMax:
			for r := range out {
				out[r] = max(out[r], src[r*step])
			}
		case ReduceMin:
			for r := range out {
				out[r] = min(out[r], src[r*step])
			}
		default:
			for r := range out {
				out[r] += src[r*step]
			}
		}
	}
}

// SelectKind picks one element of each window in SelectAndScatter: the
// first largest (SelectGE, max pooling) or the first smallest (SelectLE).
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

// selected calls fn(window index, operand offset of its chosen element) for
// each window with at least one element inside the operand. Ties go to the
// first element in row-major window order; a NaN wins over numbers; padding
// is never chosen. disjoint is passed to rows.
func selected[T tensor.Num](dev *device.CPUDevice, g *geometry, disjoint bool, x []T, kind SelectKind, fn func(i, at int)) {
	ge := kind == SelectGE
	ro := g.offs[g.rowDim]
	g.rows(dev, disjoint, func(i0 int, o []int, outer int, kb []int) {
		for r := range g.out[g.rowDim] {
			at := -1
			if outer >= 0 && ro[r] >= 0 {
				at = firstExtreme(x[outer+ro[r]:], g.woff, ge) + outer + ro[r]
			} else {
				o[g.rowDim] = r
				g.borderTaps(o, kb, func(off int) {
					if off < 0 {
						return
					}
					if at < 0 {
						at = off
						return
					}
					v, best := x[off], x[at]
					if beats(v, best, ge) {
						at = off
					}
				})
			}
			if at >= 0 {
				fn(i0+r, at)
			}
		}
	})
}

// beats reports whether tap value v displaces best as the window's
// selection, taps taken in order: strictly larger (ge) or smaller, or the
// first NaN.
func beats[T tensor.Num](v, best T, ge bool) bool {
	return (ge && v > best) || (!ge && v < best) || (v != v && best == best)
}

// firstExtreme returns the offset (one of woff) of the first largest (ge)
// or smallest element of taps, NaN counting as the extreme. Random data
// makes "which tap wins" unpredictable, so the common path avoids branches:
// the extreme by max/min, then its first position by conditional moves.
func firstExtreme[T tensor.Num](taps []T, woff []int, ge bool) int {
	best := taps[woff[0]]
	if ge {
		for _, off := range woff[1:] {
			best = max(best, taps[off])
		}
	} else {
		for _, off := range woff[1:] {
			best = min(best, taps[off])
		}
	}
	if best != best { // a NaN: the first one wins
		for _, off := range woff {
			if v := taps[off]; v != v {
				return off
			}
		}
	}
	at := woff[len(woff)-1]
	for j := len(woff) - 2; j >= 0; j-- {
		off := woff[j]
		if taps[off] == best {
			at = off
		}
	}
	return at
}

func selectAndScatterKernel[T tensor.Num](c *eager.Call, outs []*tensor.Tensor) {
	x, src, a := c.Inputs[0], data[T](c.Inputs[1]), c.Attrs.(SelectAttrs)
	ov, init := data[T](outs[0]), data[T](c.Inputs[2])[0]
	for i := range ov {
		ov[i] = init
	}
	if p, ok := planeOf(x.Shape(), a.Window); ok && p.sh >= p.kh && p.sw >= p.kw {
		planeScatter(cpu(c), p, data[T](x), src, ov, a.Select == SelectGE)
		return
	}
	g := kernelGeometry(x.Shape(), a.Window)
	selected(cpu(c), g, g.separableRows(a.Window), data[T](x), a.Select, func(i, at int) { ov[at] += src[i] })
}

func selectAndGatherKernel[T tensor.Num](c *eager.Call, outs []*tensor.Tensor) {
	x, dy, a := c.Inputs[0], data[T](c.Inputs[1]), c.Attrs.(SelectAttrs)
	ov := data[T](outs[0])
	clear(ov)
	selected(cpu(c), kernelGeometry(x.Shape(), a.Window), true, data[T](x), a.Select, func(i, at int) { ov[i] = dy[at] })
}

func numKernelSet(f32, f64, i32, i64, u8 eager.Kernel) cpuKernels {
	return cpuKernels{f32: f32, f64: f64, i32: i32, i64: i64, u8: u8}
}

var reduceWindowOp, selectAndScatterOp, selectAndGatherOp *eager.Op

func init() {
	reduceWindowOp = eager.Register(numKernelSet(reduceWindowKernel[float32], reduceWindowKernel[float64],
		reduceWindowKernel[int32], reduceWindowKernel[int64], reduceWindowKernel[uint8]).register(&eager.Op{
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
			return c.Out1(x.DType(), newGeometry(x.Shape(), a.Window).out)
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			x, init, dy, a := g.Inputs[0], g.Inputs[1], g.OutGrads[0], g.Attrs.(ReduceWindowAttrs)
			if a.Kind == ReduceSum {
				// Every tap receives its window's gradient.
				spread := BroadcastTo(Reshape(dy, append(dy.Shape().Clone(), ones(x.Rank())...)...),
					append(dy.Shape().Clone(), a.Dims...)...)
				dx := ScatterPatches(spread, x.Shape(), a.Window)
				var dinit *tensor.Tensor
				if g.Needs[1] {
					// init enters each window once, plus once per padding tap:
					// sum(dy) * (1 + taps) - what reached the operand.
					taps := float64(tensor.Shape(a.Dims).NumElements())
					dinit = Sub(Mul(Sum(dy), ScalarLike(dy, 1+taps)), Sum(dx))
				}
				return []*tensor.Tensor{dx, dinit}
			}
			sel := SelectGE
			if a.Kind == ReduceMin {
				sel = SelectLE
			}
			// The chosen element takes the gradient; init (the identity of
			// the reduction in any sensible use) takes none.
			return []*tensor.Tensor{SelectAndScatter(x, dy, ZerosLike(init), sel, a.Window), nil}
		},
	}))

	selectAndScatterOp = eager.Register(numKernelSet(selectAndScatterKernel[float32], selectAndScatterKernel[float64],
		selectAndScatterKernel[int32], selectAndScatterKernel[int64], selectAndScatterKernel[uint8]).register(&eager.Op{
		Name: "SelectAndScatter", Inputs: 3, DTypes: numericTypes, SameDTypes: true,
		Infer: func(c *eager.Call) []eager.Out {
			x, src, a := c.Inputs[0], c.Inputs[1], c.Attrs.(SelectAttrs)
			if c.Inputs[2].Rank() != 0 {
				c.Fail(tensor.ErrRank, "init must be a scalar")
			}
			a.Window.check(c, x.Shape())
			if out := newGeometry(x.Shape(), a.Window).out; !out.Equal(src.Shape()) {
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
	}))

	selectAndGatherOp = eager.Register(numKernelSet(selectAndGatherKernel[float32], selectAndGatherKernel[float64],
		selectAndGatherKernel[int32], selectAndGatherKernel[int64], selectAndGatherKernel[uint8]).register(&eager.Op{
		Name: "SelectAndGather", Inputs: 2, DTypes: numericTypes, SameDTypes: true,
		Infer: func(c *eager.Call) []eager.Out {
			x, a := c.Inputs[0], c.Attrs.(SelectAttrs)
			if !c.Inputs[1].Shape().Equal(x.Shape()) {
				c.Fail(tensor.ErrShape, "gradient has shape %v, operand %v", c.Inputs[1].Shape(), x.Shape())
			}
			a.Window.check(c, x.Shape())
			return c.Out1(x.DType(), newGeometry(x.Shape(), a.Window).out)
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			x, dy := g.Inputs[0], g.OutGrads[0]
			return []*tensor.Tensor{nil, when(g.Needs[1], func() *tensor.Tensor {
				return eager.Run1(selectAndScatterOp, g.Attrs, x, dy, ScalarLike(dy, 0))
			})}
		},
	}))
}

// ReduceWindow is XLA's ReduceWindow with a built-in reduction (ReduceSum,
// ReduceMax or ReduceMin): x: [n...] -> [out...], each output the reduction
// of init and its window's taps (padding taps count as init). The gradient
// of Max and Min goes through SelectAndScatter.
func ReduceWindow(x, init *tensor.Tensor, kind ReduceKind, w Window) *tensor.Tensor {
	return eager.Run1(reduceWindowOp, ReduceWindowAttrs{Kind: kind, Window: w.withDefaults(rankOf(x))}, x, init)
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
