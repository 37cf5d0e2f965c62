package ops

import (
	"slices"

	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Sorting and its relatives along one axis. ArgSort is the primitive;
// Sort and TopK take elements by its permutation with TakeAlongAxis, whose
// adjoint gives their gradients.

// SortAttrs configure ArgSort and ArgMax/ArgMin.
//
// Deprecated: a backend's (package backend/opattr); ops' own calls build it.
type SortAttrs = opattr.SortAttrs

var argSortOp, argTopKOp, argExtremeOp, takeAlongOp, putAlongZerosOp *eager.Op

func init() {
	argSortOp = eager.Register(&eager.Op{
		Name: "ArgSort", Inputs: 1, DTypes: numericTypes, NonDifferentiable: true,
		Infer: func(c *eager.Call) []eager.Out {
			sortAxis(c)
			return c.Out1(tensor.Int64, c.Inputs[0].Shape())
		},
	})
	argTopKOp = eager.Register(&eager.Op{
		Name: "ArgTopK", Inputs: 1, DTypes: numericTypes, NonDifferentiable: true,
		Infer: func(c *eager.Call) []eager.Out {
			x, k := c.Inputs[0], c.Attrs.(opattr.TopKAttrs).K
			if x.Rank() == 0 {
				c.Fail(tensor.ErrRank, "needs rank 1 or more")
			}
			if k < 0 || k > x.Dim(-1) {
				c.Fail(tensor.ErrValue, "k %d is outside [0, last dimension %d]", k, x.Dim(-1))
			}
			shape := slices.Clone([]int(x.Shape()))
			shape[len(shape)-1] = k
			return c.Out1(tensor.Int64, shape)
		},
	})
	argExtremeOp = eager.Register(&eager.Op{
		Name: "ArgMaxMin", Inputs: 1, DTypes: numericTypes, NonDifferentiable: true,
		Infer: func(c *eager.Call) []eager.Out {
			x, axis := c.Inputs[0], sortAxis(c)
			if x.Dim(axis) == 0 {
				c.Fail(tensor.ErrShape, "dimension %d is empty", axis)
			}
			return c.Out1(tensor.Int64, slices.Delete(slices.Clone([]int(x.Shape())), axis, axis+1))
		},
	})
	takeAlongOp = eager.Register(&eager.Op{
		Name: "TakeAlongAxis", Inputs: 2, Infer: inferAlong,
		GradReads: eager.ReadsInputs, GradIgnores: []int{0}, // the indices, and x's shape
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			x, idx := g.Inputs[0], g.Inputs[1]
			axis := g.Attrs.(opattr.AxisAttrs).Axis
			return []*tensor.Tensor{eager.Run1(putAlongZerosOp, opattr.ScatterZerosAttrs{Axis: axis, Size: x.Dim(axis)}, g.OutGrads[0], idx), nil}
		},
	})
	// PutAlongAxisAddZeros is TakeAlongAxis's gradient (so Sort's and
	// TopK's): the updates added at the indices along Axis into zeros the
	// kernel writes. Inputs: updates and indices of one shape; output
	// that shape with Size along Axis.
	putAlongZerosOp = eager.Register(&eager.Op{
		Name: "PutAlongAxisAddZeros", Inputs: 2, DTypes: numericTypes,
		GradReads: eager.ReadsInputs, GradIgnores: []int{0},
		Infer: func(c *eager.Call) []eager.Out {
			upd, idx, a := c.Inputs[0], c.Inputs[1], c.Attrs.(opattr.ScatterZerosAttrs)
			checkIndexTensor(c, 1)
			if !idx.Shape().Equal(upd.Shape()) || a.Axis < 0 || a.Axis >= upd.Rank() || a.Size < 0 {
				c.Fail(tensor.ErrShape, "indices %v and updates %v must match, axis %d within them", idx.Shape(), upd.Shape(), a.Axis)
			}
			shape := slices.Clone([]int(upd.Shape()))
			shape[a.Axis] = a.Size
			return c.Out1(upd.DType(), shape)
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			return []*tensor.Tensor{eager.Run1(takeAlongOp, opattr.AxisAttrs{Axis: g.Attrs.(opattr.ScatterZerosAttrs).Axis}, g.OutGrads[0], g.Inputs[1]), nil}
		},
	})
}

// sortAxis checks that the input has the axis to sort along (normalised
// by the public function) and returns it.
func sortAxis(c *eager.Call) int {
	x := c.Inputs[0]
	if x.Rank() == 0 {
		c.Fail(tensor.ErrRank, "needs rank 1 or more")
	}
	return checkAxis(c, c.Attrs.(opattr.SortAttrs).Axis, x.Rank())
}

func inferAlong(c *eager.Call) []eager.Out {
	x, idx := c.Inputs[0], c.Inputs[1]
	checkIndexTensor(c, 1)
	if x.Rank() == 0 || idx.Rank() != x.Rank() {
		c.Fail(tensor.ErrRank, "indices must have the operand's rank (>= 1)")
	}
	axis := checkAxis(c, c.Attrs.(opattr.AxisAttrs).Axis, x.Rank())
	for d := range x.Shape() {
		if d != axis && idx.Dim(d) != x.Dim(d) {
			c.Fail(tensor.ErrShape, "indices %v and operand %v differ outside axis %d", idx.Shape(), x.Shape(), axis)
		}
	}
	return c.Out1(x.DType(), idx.Shape())
}

// TakeAlongAxis picks x's elements along axis by indices of the same rank
// (NumPy's take_along_axis): out[..., k, ...] = x[..., idx[..., k, ...], ...].
// Outside axis, x and indices broadcast against each other as NumPy's
// do (a dimension of 1 on either side repeats). Indices outside the axis
// panic with a *tensor.Error.
func TakeAlongAxis(x, indices *tensor.Tensor, axis int) *tensor.Tensor {
	attrs := opattr.AxisAttrs{Axis: axisOf(axis, rankOf(x))}
	if x == nil || indices == nil || x.Rank() != indices.Rank() || attrs.Axis < 0 || attrs.Axis >= x.Rank() {
		return eager.Run1(takeAlongOp, attrs, x, indices) // which says what is wrong
	}
	xs, is := slices.Clone(x.Shape()), slices.Clone(indices.Shape())
	xs[attrs.Axis], is[attrs.Axis] = 1, 1
	if xs.Equal(is) {
		return eager.Run1(takeAlongOp, attrs, x, indices)
	}
	defer asOp("TakeAlongAxis")
	common, ok := broadcastAll(xs, is)
	if !ok {
		fail("TakeAlongAxis", tensor.ErrShape, []*tensor.Tensor{x, indices},
			"indices %v and operand %v do not broadcast outside axis %d", indices.Shape(), x.Shape(), attrs.Axis)
	}
	to := func(t *tensor.Tensor) *tensor.Tensor {
		s := slices.Clone(common)
		s[attrs.Axis] = t.Dim(attrs.Axis)
		if t.Shape().Equal(s) {
			return t
		}
		return BroadcastTo(t, s...)
	}
	return eager.Run1(takeAlongOp, attrs, to(x), to(indices))
}

// ArgSort returns the Int64 permutation that sorts x along axis, stably
// (equal elements keep their order; -0 equals +0). NaNs go last, and
// first when descending: the descending order is the ascending one
// reversed but for ties, as NumPy's and PyTorch's.
func ArgSort(x *tensor.Tensor, axis int, descending bool) *tensor.Tensor {
	return eager.Run1(argSortOp, opattr.SortAttrs{Axis: axisOf(axis, rankOf(x)), Descending: descending}, x)
}

// Sort sorts x along axis (stable; NaNs last, first when descending, as
// ArgSort). Differentiable: gradients return to each element's original
// place.
func Sort(x *tensor.Tensor, axis int, descending bool) *tensor.Tensor {
	defer asOp("Sort")
	// The permutation: read again by TakeAlongAxis's gradient where a tape
	// records it (which then releases it with its intermediates), else
	// nobody's once the gather has run.
	perm := ArgSort(x, axis, descending)
	out := TakeAlongAxis(x, scratch(perm), axis)
	releaseTemp(perm)
	return out
}

// SortKeyVal sorts keys along axis and permutes values (same shape) the
// same way, returning the sorted keys, the permuted values and the Int64
// permutation (XLA's key/value Sort).
func SortKeyVal(keys, values *tensor.Tensor, axis int, descending bool) (sortedKeys, sortedValues, perm *tensor.Tensor) {
	needInputs("SortKeyVal", keys, values)
	defer asOp("SortKeyVal")
	if !keys.Shape().Equal(values.Shape()) {
		fail("SortKeyVal", tensor.ErrShape, []*tensor.Tensor{keys, values}, "keys %v and values %v differ", keys.Shape(), values.Shape())
	}
	perm = ArgSort(keys, axis, descending)
	return TakeAlongAxis(keys, perm, axis), TakeAlongAxis(values, perm, axis), perm
}

// TopK returns the k largest elements along the last axis, largest first,
// and their Int64 indices (ties keep their order): the first k of Sort
// descending (found without sorting the rest where k is small beside the
// last dimension), so NaNs rank above every number, as ArgMax takes them
// (and PyTorch's topk). Panics with a *tensor.Error if k is
// outside [0, last dimension].
func TopK(x *tensor.Tensor, k int) (values, indices *tensor.Tensor) {
	needInputs("TopK", x)
	defer asOp("TopK")
	if x.Rank() == 0 || k < 0 || k > x.Dim(-1) {
		fail("TopK", tensor.ErrValue, []*tensor.Tensor{x}, "k %d is outside [0, last dimension]", k)
	}
	indices = eager.Run1(argTopKOp, opattr.TopKAttrs{K: k}, x)
	return TakeAlongAxis(x, indices, -1), indices
}

// ArgMax returns the Int64 index of the first maximum along axis (a NaN
// counts as the maximum). The axis is removed.
func ArgMax(x *tensor.Tensor, axis int) *tensor.Tensor {
	return eager.Run1(argExtremeOp, opattr.SortAttrs{Axis: axisOf(axis, rankOf(x)), Descending: true}, x)
}

// ArgMin returns the Int64 index of the first minimum along axis.
func ArgMin(x *tensor.Tensor, axis int) *tensor.Tensor {
	return eager.Run1(argExtremeOp, opattr.SortAttrs{Axis: axisOf(axis, rankOf(x))}, x)
}
