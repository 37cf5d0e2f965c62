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
