package ops

import (
	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/plumb"
	"github.com/eagerflow/eagerflow/tensor"
)

// Boolean masks, as NumPy and PyTorch use them: the positions of the
// nonzero elements (Nonzero), the elements a mask selects (MaskedSelect,
// and Index with a bool tensor), and functional assignment through a mask
// (MaskedFill, MaskedScatter). Their result's size depends on the mask's
// values: the count is read on the host (the host waits for the mask's
// device), and in a traced function a guard checks that each later call
// finds the same count; a call that does not runs eagerly.

var nonzeroOp *eager.Op

func init() {
	nonzeroOp = eager.Register(&eager.Op{
		Name: "Nonzero", Inputs: 1, NonDifferentiable: true,
		Infer: func(c *eager.Call) []eager.Out {
			x, s := c.Inputs[0], c.Attrs.(opattr.ShapeAttrs).Shape
			if len(s) != 2 || s[1] != x.Rank() || s[0] < 0 || s[0] > x.NumElements() {
				c.Fail(tensor.ErrAttr, "shape %v: want [count, %d] with count in [0, %d]", s, x.Rank(), x.NumElements())
			}
			return c.Out1(tensor.Int64, s)
		},
	})
}

// Nonzero returns the indices of x's nonzero elements (true, for Bool; NaN
// counts as nonzero, -0 as zero) in row-major order: any dtype, shape
// [d...] -> int64 [n, rank] (PyTorch's nonzero, NumPy's argwhere). No
// gradient.
func Nonzero(x *tensor.Tensor) *tensor.Tensor {
	needInputs("Nonzero", x)
	defer asOp("Nonzero")
	n := countNonzero("Nonzero", x)
	return eager.Run1(nonzeroOp, opattr.ShapeAttrs{Shape: tensor.Shape{n, x.Rank()}}, x)
}

// countNonzero is how many of x's elements are nonzero, read on the host;
// a trace guards it (see the top of the file).
func countNonzero(construct string, x *tensor.Tensor) int {
	flags := x
	if x.DType() != tensor.Bool {
		flags = Ne(x, ScalarLike(x, 0))
		defer releaseUntraced(flags)
	}
	ints := Cast(flags, tensor.Int64)
	defer releaseUntraced(ints)
	count := Sum(ints)
	if plumb.GuardValue != nil {
		plumb.GuardValue(construct, count)
	}
	return int(plumb.Tensor.Item(count).(int64)) // guarded above
}

// flatPositions returns the row-major positions of mask's true elements,
// int64 [n], mask broadcast to shape first (mask: Bool).
func flatPositions(construct string, mask *tensor.Tensor, shape tensor.Shape) *tensor.Tensor {
	if mask.DType() != tensor.Bool {
		fail(construct, tensor.ErrDType, []*tensor.Tensor{mask}, "the mask must be bool, got %v", mask.DType())
	}
	if !mask.Shape().Equal(shape) {
		mask = BroadcastTo(mask, shape...)
	}
	flat := Reshape(mask, -1)
	return Reshape(eager.Run1(nonzeroOp, opattr.ShapeAttrs{Shape: tensor.Shape{countNonzero(construct, flat), 1}}, flat), -1)
}

// MaskedSelect returns the elements of x where mask is true, in row-major
// order: x: [d...], mask: bool, broadcastable to x -> [n] (PyTorch's
// masked_select, NumPy's x[mask]). Differentiable in x: the gradient
// returns to the selected positions.
func MaskedSelect(x, mask *tensor.Tensor) *tensor.Tensor {
	needInputs("MaskedSelect", x, mask)
	defer asOp("MaskedSelect")
	return Gather(Reshape(x, -1), flatPositions("MaskedSelect", mask, x.Shape()), 0)
}

// MaskedFill returns x with value where mask is true (PyTorch's
// masked_fill; NumPy's x[mask] = v on a copy): mask: bool, value: x's
// dtype (a scalar, or any shape), both broadcastable to x -> x's shape.
// Differentiable in x (where mask is false) and value (where it is true).
func MaskedFill(x, mask, value *tensor.Tensor) *tensor.Tensor {
	needInputs("MaskedFill", x, mask, value)
	defer asOp("MaskedFill")
	if !value.Shape().Equal(x.Shape()) {
		value = BroadcastTo(value, x.Shape()...)
	}
	return Where(mask, value, x)
}

// MaskedScatter returns x with the positions where mask is true filled,
// in row-major order, by source's first elements (PyTorch's
// masked_scatter; NumPy's x[mask] = values on a copy): mask: bool,
// broadcastable to x; source: x's dtype, at least as many elements as the
// mask has true ones -> x's shape. Differentiable in x and source.
func MaskedScatter(x, mask, source *tensor.Tensor) *tensor.Tensor {
	needInputs("MaskedScatter", x, mask, source)
	defer asOp("MaskedScatter")
	pos := flatPositions("MaskedScatter", mask, x.Shape())
	n := pos.Dim(0)
	if source.NumElements() < n {
		fail("MaskedScatter", tensor.ErrShape, []*tensor.Tensor{x, mask, source},
			"the mask selects %d elements, source has %d", n, source.NumElements())
	}
	upd := Slice(Reshape(source, -1), []int{0}, []int{n}, nil)
	return Reshape(Scatter(Reshape(x, -1), pos, upd, 0), x.Shape()...)
}

// maskToIndex rewrites Index's items for a bool mask at items[i] over
// dims [d, d+k) of x: x with those dims merged into one, and the mask as
// the int64 positions of its true elements there (NumPy's boolean index
// is the same as its nonzero positions).
func maskToIndex(x *tensor.Tensor, items []any, i int, mask *tensor.Tensor) (*tensor.Tensor, []any) {
	k := mask.Rank()
	if k == 0 {
		fail("Index", tensor.ErrAttr, []*tensor.Tensor{x, mask}, "item %d: a boolean mask needs rank 1 or more", i)
	}
	consumes := func(it any) int {
		switch v := it.(type) {
		case int, Range:
			return 1
		case string:
			if p, err := parseSliceText(v); err == nil {
				if p == Ellipsis {
					return -1
				}
				return 1
			}
		case *tensor.Tensor:
			if v != nil && v.DType() == tensor.Bool {
				return v.Rank()
			}
			return 1
		case marker:
			if v == Ellipsis {
				return -1
			}
		}
		return 0
	}
	before, after, ellipsisBefore := 0, 0, false
	for j, it := range items {
		c := consumes(it)
		switch {
		case c < 0 && j < i:
			ellipsisBefore = true
		case c < 0 || j == i:
		case j < i:
			before += c
		default:
			after += c
		}
	}
	d := before
	if ellipsisBefore {
		d = x.Rank() - k - after
	}
	if d < 0 || d+k > x.Rank() || !tensor.Shape(x.Shape()[d:d+k]).Equal(mask.Shape()) {
		fail("Index", tensor.ErrIndex, []*tensor.Tensor{x, mask}, "item %d: a boolean mask of shape %v does not match dimensions %d to %d of shape %v",
			i, mask.Shape(), d, d+k-1, x.Shape())
	}
	merged := append(append(append([]int{}, x.Shape()[:d]...), mask.NumElements()), x.Shape()[d+k:]...)
	out := append([]any{}, items...)
	out[i] = flatPositions("Index", mask, mask.Shape())
	return Reshape(x, merged...), out
}
