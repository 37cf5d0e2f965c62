package ops

import (
	"fmt"
	"slices"

	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/checked"
	"github.com/eagerflow/eagerflow/tensor"
)

// SliceAttrs are Slice's start (inclusive), limit (exclusive) and strides
// per dimension; nil Strides means 1.
//
// Deprecated: a backend's (package backend/opattr); ops' own calls build it.
type SliceAttrs = opattr.SliceAttrs

var sliceOp, padOp, concatOp *eager.Op

func init() {
	sliceOp = eager.Register(&eager.Op{
		Name: "Slice", Inputs: 1,
		Infer: func(c *eager.Call) []eager.Out {
			x, a := c.Inputs[0], c.Attrs.(opattr.SliceAttrs)
			r := x.Rank()
			if len(a.Start) != r || len(a.Limit) != r || (a.Strides != nil && len(a.Strides) != r) {
				c.Fail(tensor.ErrRank, "start, limit and strides need %d entries each", r)
			}
			shape := make(tensor.Shape, r)
			for d := range shape {
				s, l, st := a.Start[d], a.Limit[d], a.Stride(d)
				if s < 0 || l > x.Dim(d) || s > l {
					c.Fail(tensor.ErrIndex, "dimension %d: need 0 <= start %d <= limit %d <= size %d", d, s, l, x.Dim(d))
				}
				if st < 1 {
					c.Fail(tensor.ErrAttr, "dimension %d: stride %d is not positive", d, st)
				}
				if l > s {
					shape[d] = (l-s-1)/st + 1 // (l-s+st-1)/st without overflow
				}
			}
			return c.Out1(x.DType(), shape)
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			x, a, dy := g.Inputs[0], g.Attrs.(opattr.SliceAttrs), g.OutGrads[0]
			cfg := make([]PadDim, x.Rank())
			for d := range cfg {
				n, st := dy.Dim(d), a.Stride(d)
				if n == 0 {
					cfg[d] = PadDim{Low: x.Dim(d)}
					continue
				}
				span := (n-1)*st + 1
				cfg[d] = PadDim{Low: a.Start[d], High: x.Dim(d) - a.Start[d] - span, Interior: st - 1}
			}
			zero := ScalarLike(dy, 0)
			dx := Pad(dy, zero, cfg...)
			releaseTemp(zero)
			return []*tensor.Tensor{dx}
		},
	})
}

// Slice returns the box start <= i < limit of x, taking every strides[d]-th
// element along dimension d (strides may be nil for all 1), as XLA's Slice.
// Panics with a *tensor.Error if a bound is outside x.
func Slice(x *tensor.Tensor, start, limit, strides []int) *tensor.Tensor {
	return eager.Run1(sliceOp, opattr.SliceAttrs{Start: start, Limit: limit, Strides: strides}, x)
}

// PadDim is XLA's PaddingConfigDimension: Low and High elements added at
// each edge (negative values remove elements) and Interior elements added
// between neighbours (applied first).
type PadDim struct{ Low, High, Interior int }

// PadAttrs is Pad's per-dimension configuration.
type PadAttrs struct{ Dims []PadDim }

func (a PadAttrs) String() string { return fmt.Sprintf("padding=%v", a.Dims) }

func init() {
	padOp = eager.Register(&eager.Op{
		Name: "Pad", Inputs: 2, SameDTypes: true,
		Infer: func(c *eager.Call) []eager.Out {
			x, v, cfg := c.Inputs[0], c.Inputs[1], c.Attrs.(PadAttrs).Dims
			if v.Rank() != 0 {
				c.Fail(tensor.ErrRank, "padding value must be a scalar, got shape %v", v.Shape())
			}
			if len(cfg) != x.Rank() {
				c.Fail(tensor.ErrRank, "%d padding entries for rank %d", len(cfg), x.Rank())
			}
			shape := make(tensor.Shape, x.Rank())
			for d, p := range cfg {
				if p.Interior < 0 {
					c.Fail(tensor.ErrAttr, "dimension %d: negative interior padding %d", d, p.Interior)
				}
				n := x.Dim(d)
				inner, ok1 := checked.Mul(max(n-1, 0), p.Interior)
				size, ok2 := checked.Add(p.Low, p.High, n, inner)
				if !ok1 || !ok2 {
					c.Fail(tensor.ErrShape, "dimension %d: padding %+v of size %d gives more elements than an int can count", d, p, n)
				}
				shape[d] = size
				if shape[d] < 0 {
					c.Fail(tensor.ErrShape, "dimension %d: padding %+v of size %d leaves %d elements", d, p, n, shape[d])
				}
			}
			return c.Out1(x.DType(), shape)
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			x, cfg, dy := g.Inputs[0], g.Attrs.(PadAttrs).Dims, g.OutGrads[0]
			dx := unpad(dy, x.Shape(), cfg)
			return []*tensor.Tensor{dx, when(g.Needs[1], func() *tensor.Tensor {
				pads := false
				for _, p := range cfg {
					pads = pads || p.Low > 0 || p.High > 0 || p.Interior > 0
				}
				return padGradient(dy, pads, func(zeros, one *tensor.Tensor) *tensor.Tensor {
					return eager.Run1(padOp, g.Attrs, zeros, one)
				}, x.Shape())
			})}
		},
	})
}

// unpad is the adjoint of Pad for the operand: it puts back (as zeros) what
// negative padding cut, then takes every (interior+1)-th element from where
// the operand's first element landed. dy: the padded shape -> shape.
func unpad(dy *tensor.Tensor, shape tensor.Shape, cfg []PadDim) *tensor.Tensor {
	undo := make([]PadDim, len(cfg))
	start, limit, strides := make([]int, len(cfg)), make([]int, len(cfg)), make([]int, len(cfg))
	for d, p := range cfg {
		undo[d] = PadDim{Low: max(0, -p.Low), High: max(0, -p.High)}
		start[d], strides[d] = max(p.Low, 0), p.Interior+1
		limit[d] = start[d]
		if n := shape[d]; n > 0 {
			limit[d] += (n-1)*strides[d] + 1
		}
	}
	var t temps
	defer t.release()
	return Slice(t.keep(Pad(dy, t.keep(ScalarLike(dy, 0)), undo...)), start, limit, strides)
}

// Pad is XLA's Pad: it surrounds x with value (a scalar of x's dtype) by
// cfg, one PadDim per dimension. Negative edge padding removes elements;
// interior padding inserts value between neighbours. The output size along d
// is Low + High + n + (n-1)*Interior. Panics with a *tensor.Error if a size
// would be negative or cfg does not fit x.
func Pad(x, value *tensor.Tensor, cfg ...PadDim) *tensor.Tensor {
	return eager.Run1(padOp, PadAttrs{Dims: cfg}, x, value)
}

// AxisAttrs names one dimension (Concatenate, LogSoftmax).
//
// Deprecated: a backend's (package backend/opattr); ops' own calls build it.
type AxisAttrs = opattr.AxisAttrs

func init() {
	concatOp = eager.Register(&eager.Op{
		Name: "Concatenate", Inputs: -1, SameDTypes: true,
		Infer: func(c *eager.Call) []eager.Out {
			first := c.Inputs[0]
			if first.Rank() == 0 {
				c.Fail(tensor.ErrRank, "rank-0 values cannot be concatenated")
			}
			axis := checkAxis(c, c.Attrs.(opattr.AxisAttrs).Axis, first.Rank())
			shape := slices.Clone(first.Shape())
			shape[axis] = 0
			for i, x := range c.Inputs {
				if x.Rank() != first.Rank() {
					c.Fail(tensor.ErrRank, "input %d has rank %d, input 0 has rank %d", i, x.Rank(), first.Rank())
				}
				for d := range shape {
					if d != axis && x.Dim(d) != first.Dim(d) {
						c.Fail(tensor.ErrShape, "input %d has shape %v; all but dimension %d must match %v", i, x.Shape(), axis, first.Shape())
					}
				}
				shape[axis] += x.Dim(axis)
			}
			return c.Out1(first.DType(), shape)
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			dy := g.OutGrads[0]
			axis := g.Attrs.(opattr.AxisAttrs).Axis
			grads := make([]*tensor.Tensor, len(g.Inputs))
			// Where most inputs want theirs, one Split cuts them all: one
			// pass (a call where the device copies spans at once), where
			// a slice each would each lay out a dy not in row-major order
			// (a sequence's transposed outputs) whole again.
			if needed := countTrue(g.Needs); needed > 1 && 2*needed >= len(g.Inputs) {
				sizes := make([]int, len(g.Inputs))
				for i, x := range g.Inputs {
					sizes[i] = x.Dim(axis)
				}
				for i, p := range Split(dy, axis, sizes) {
					if g.Needs[i] {
						grads[i] = p
					} else {
						releaseTemp(p) // cut with the others, wanted by none
					}
				}
				return grads
			}
			start := make([]int, dy.Rank())
			limit := slices.Clone([]int(dy.Shape()))
			at := 0
			for i, x := range g.Inputs {
				start[axis], limit[axis] = at, at+x.Dim(axis)
				if g.Needs[i] {
					grads[i] = Slice(dy, slices.Clone(start), slices.Clone(limit), nil)
				}
				at += x.Dim(axis)
			}
			return grads
		},
	})
}

// Concatenate joins xs along axis (negative counts from the end), as XLA's
// ConcatInDim. All inputs share dtype and rank (at least 1) and agree on
// every other dimension; panics with a *tensor.Error otherwise.
func Concatenate(axis int, xs ...*tensor.Tensor) *tensor.Tensor {
	r := 0
	if len(xs) > 0 {
		r = rankOf(xs[0])
	}
	return eager.Run1(concatOp, opattr.AxisAttrs{Axis: axisOf(axis, r)}, xs...)
}

// countTrue is how many of bs are true.
func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}
