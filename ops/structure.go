package ops

import (
	"slices"

	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/checked"
	"github.com/eagerflow/eagerflow/tensor"
)

// Ops that rearrange dimensions, built from the primitives (so their
// gradients, and every device, come with them), plus Rev.

// Collapse is XLA's Collapse: it merges consecutive dimensions of x into
// one whose size is their product; the elements keep their order.
//
// Dimension numbers follow the XLA document's worked examples, which count
// from the minor end: for x of shape [4 2 3], Collapse(x, 0, 1) merges the
// last two dimensions into [4 6] and Collapse(x, 1, 2) the first two into
// [8 3]. dims must be increasing and consecutive; Collapse panics with a
// *tensor.Error otherwise.
func Collapse(x *tensor.Tensor, dims ...int) *tensor.Tensor {
	needInputs("Collapse", x)
	defer asOp("Collapse")
	in := []*tensor.Tensor{x}
	if len(dims) == 0 {
		fail("Collapse", tensor.ErrAxis, in, "needs at least one dimension")
	}
	for i, d := range dims {
		if d < 0 || d >= x.Rank() || (i > 0 && d != dims[i-1]+1) {
			fail("Collapse", tensor.ErrAxis, in, "dimensions %v are not a consecutive, increasing subset of 0..%d", dims, x.Rank()-1)
		}
	}
	// Minor-first numbers to axes: dimension d is axis rank-1-d.
	first, last := x.Rank()-1-dims[len(dims)-1], x.Rank()-1-dims[0]
	shape := slices.Clone([]int(x.Shape()[:first]))
	shape = append(shape, tensor.Shape(x.Shape()[first:last+1]).NumElements())
	shape = append(shape, x.Shape()[last+1:]...)
	return Reshape(x, shape...)
}

// ExpandDims inserts a dimension of size 1 at axis (in [-rank-1, rank]).
func ExpandDims(x *tensor.Tensor, axis int) *tensor.Tensor {
	needInputs("ExpandDims", x)
	defer asOp("ExpandDims")
	r := x.Rank()
	if axis < -r-1 || axis > r {
		fail("ExpandDims", tensor.ErrAxis, []*tensor.Tensor{x}, "axis %d is out of range for rank %d", axis, r)
	}
	if axis < 0 {
		axis += r + 1
	}
	shape := slices.Insert(slices.Clone([]int(x.Shape())), axis, 1)
	return Reshape(x, shape...)
}

// Squeeze removes the given size-1 dimensions (every size-1 dimension when
// none are given). Panics with a *tensor.Error if a given one is not 1.
func Squeeze(x *tensor.Tensor, axes ...int) *tensor.Tensor {
	needInputs("Squeeze", x)
	defer asOp("Squeeze")
	drop := make([]bool, x.Rank())
	for _, a := range axes {
		if a < -x.Rank() || a >= x.Rank() {
			fail("Squeeze", tensor.ErrAxis, []*tensor.Tensor{x}, "axis %d is out of range for rank %d", a, x.Rank())
		}
		if a < 0 {
			a += x.Rank()
		}
		if x.Dim(a) != 1 {
			fail("Squeeze", tensor.ErrShape, []*tensor.Tensor{x}, "dimension %d has size %d, not 1", a, x.Dim(a))
		}
		drop[a] = true
	}
	var shape []int
	for d, n := range x.Shape() {
		if (len(axes) == 0 && n == 1) || drop[d] {
			continue
		}
		shape = append(shape, n)
	}
	return Reshape(x, shape...)
}

// Stack joins same-shaped tensors along a new dimension at axis.
func Stack(axis int, xs ...*tensor.Tensor) *tensor.Tensor {
	needInputs("Stack", xs...)
	defer asOp("Stack")
	if len(xs) == 0 {
		fail("Stack", tensor.ErrArity, nil, "needs at least one tensor")
	}
	if r := xs[0].Rank(); axis < -r-1 || axis > r {
		fail("Stack", tensor.ErrAxis, xs, "axis %d is out of range for stacking rank-%d tensors (in [%d, %d])", axis, r, -r-1, r)
	}
	parts := make([]*tensor.Tensor, len(xs))
	for i, x := range xs {
		if x == nil {
			fail("Stack", tensor.ErrArity, nil, "input %d is nil", i)
		}
		if !x.Shape().Equal(xs[0].Shape()) {
			fail("Stack", tensor.ErrShape, xs, "input %d has shape %v, input 0 has %v", i, x.Shape(), xs[0].Shape())
		}
		parts[i] = ExpandDims(x, axis)
	}
	return Concatenate(axis, parts...)
}

// Unstack splits x along axis into x.Dim(axis) tensors without that axis.
func Unstack(x *tensor.Tensor, axis int) []*tensor.Tensor {
	needInputs("Unstack", x)
	defer asOp("Unstack")
	if axis < -x.Rank() || axis >= x.Rank() {
		fail("Unstack", tensor.ErrAxis, []*tensor.Tensor{x}, "axis %d is out of range for rank %d", axis, x.Rank())
	}
	if axis < 0 {
		axis += x.Rank()
	}
	out := Split(x, axis, nil)
	for i, p := range out {
		out[i] = Squeeze(p, axis)
		if out[i] != p && p.Autodiff() == nil && p.Traced() == nil {
			p.Release() // no tape recorded it: the view holds its buffer
		}
	}
	return out
}

// Split cuts x along axis into pieces of the given sizes (which must add up
// to x.Dim(axis)); nil sizes means pieces of size 1.
func Split(x *tensor.Tensor, axis int, sizes []int) []*tensor.Tensor {
	needInputs("Split", x)
	defer asOp("Split")
	in := []*tensor.Tensor{x}
	if axis < -x.Rank() || axis >= x.Rank() {
		fail("Split", tensor.ErrAxis, in, "axis %d is out of range for rank %d", axis, x.Rank())
	}
	if axis < 0 {
		axis += x.Rank()
	}
	if sizes == nil {
		sizes = make([]int, x.Dim(axis))
		for i := range sizes {
			sizes[i] = 1
		}
	}
	total := 0
	for _, s := range sizes {
		if s < 0 {
			fail("Split", tensor.ErrShape, in, "negative size in %v", sizes)
		}
		total += s
	}
	if total != x.Dim(axis) {
		fail("Split", tensor.ErrShape, in, "sizes %v add up to %d, dimension %d has %d", sizes, total, axis, x.Dim(axis))
	}
	return eager.Run(splitOp, opattr.SplitAttrs{Axis: axis, Sizes: slices.Clone(sizes)}, x)
}

// splitOp cuts x along an axis into pieces in one call; its gradient
// concatenates the pieces' gradients (one pass, where a slice's each
// padded its own to x's size).
var splitOp = eager.Register(&eager.Op{
	Name: "Split", Inputs: 1,
	Infer: func(c *eager.Call) []eager.Out {
		x, a := c.Inputs[0], c.Attrs.(opattr.SplitAttrs)
		if a.Axis < 0 || a.Axis >= x.Rank() {
			c.Fail(tensor.ErrAxis, "axis %d is out of range for rank %d", a.Axis, x.Rank())
		}
		total := 0
		outs := make([]eager.Out, len(a.Sizes))
		for i, s := range a.Sizes {
			if s < 0 {
				c.Fail(tensor.ErrShape, "negative size in %v", a.Sizes)
			}
			total += s
			shape := x.Shape().Clone()
			shape[a.Axis] = s
			outs[i] = eager.Out{DType: x.DType(), Shape: shape}
		}
		if total != x.Dim(a.Axis) {
			c.Fail(tensor.ErrShape, "sizes %v add up to %d, dimension %d has %d", a.Sizes, total, a.Axis, x.Dim(a.Axis))
		}
		return outs
	},
	Grad: func(g *eager.Grad) []*tensor.Tensor {
		return []*tensor.Tensor{Concatenate(g.Attrs.(opattr.SplitAttrs).Axis, g.OutGrads...)}
	},
	GradReads: eager.ReadsNothing,
})

// Tile repeats x reps[d] times along each dimension d (len(reps) = rank).
func Tile(x *tensor.Tensor, reps ...int) *tensor.Tensor {
	needInputs("Tile", x)
	defer asOp("Tile")
	if len(reps) != x.Rank() {
		fail("Tile", tensor.ErrRank, []*tensor.Tensor{x}, "%d repetitions for rank %d", len(reps), x.Rank())
	}
	// [a, b] with reps [r, s] -> broadcast [r, a, s, b] -> reshape [r*a, s*b].
	var inter, bshape, out []int
	for d, n := range x.Shape() {
		if reps[d] < 0 {
			fail("Tile", tensor.ErrValue, []*tensor.Tensor{x}, "negative repetition %d", reps[d])
		}
		size, ok := checked.Mul(reps[d], n)
		if !ok {
			fail("Tile", tensor.ErrShape, []*tensor.Tensor{x}, "%d repetitions of dimension %d (size %d) are more elements than an int can count", reps[d], d, n)
		}
		inter = append(inter, 1, n)
		bshape = append(bshape, reps[d], n)
		out = append(out, size)
	}
	if _, ok := tensor.ByteSize(x.DType(), out); !ok {
		fail("Tile", tensor.ErrShape, []*tensor.Tensor{x}, "repetitions %v give %v, more elements than an int can count", reps, out)
	}
	return Reshape(BroadcastTo(Reshape(x, inter...), bshape...), out...)
}

// Iota returns a tensor of dtype dt and the given shape whose values count
// 0, 1, 2... along dimension dim (XLA's Iota), on the default device.
func Iota(dt tensor.DType, shape []int, dim int) *tensor.Tensor {
	defer asOp("Iota")
	if dim < 0 || dim >= len(shape) {
		fail("Iota", tensor.ErrAxis, nil, "dimension %d is out of range for shape %v", dim, shape)
	}
	if !dt.Valid() {
		fail("Iota", tensor.ErrDType, nil, "invalid dtype %v", dt)
	}
	if _, ok := tensor.Shape(shape).Size(); !ok {
		fail("Iota", tensor.ErrShape, nil, "shape %v has a negative dimension or more elements than an int can count", shape)
	}
	nbytes, ok := tensor.ByteSize(dt, shape)
	if !ok {
		fail("Iota", device.ErrOutOfMemory, nil, "%v%v has more bytes than an int can count", dt, shape)
	}
	if err := device.CheckAlloc(device.Default(), nbytes); err != nil {
		fail("Iota", device.ErrOutOfMemory, nil, "%v%v does not fit: %v", dt, shape, err)
	}
	line := make([]int, len(shape))
	for i := range line {
		line[i] = 1
	}
	line[dim] = shape[dim]
	r := Reshape(tensor.Arange[int64](0, int64(shape[dim]), 1), line...)
	if dt != tensor.Int64 {
		r = Cast(r, dt)
	}
	return BroadcastTo(r, shape...)
}

// RevAttrs lists the dimensions Rev reverses.
//
// Deprecated: a backend's (package backend/opattr); ops' own calls build it.
type RevAttrs = opattr.RevAttrs

var revOp *eager.Op

func init() {
	revOp = eager.Register(&eager.Op{
		Name: "Rev", Inputs: 1,
		Infer: func(c *eager.Call) []eager.Out {
			x := c.Inputs[0]
			seen := make([]bool, x.Rank())
			for _, d := range c.Attrs.(opattr.RevAttrs).Dims {
				if d < 0 || d >= x.Rank() || seen[d] {
					c.Fail(tensor.ErrAxis, "dimension %d is out of range or repeated", d)
				}
				seen[d] = true
			}
			return c.Out1(x.DType(), x.Shape())
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			return []*tensor.Tensor{Rev(g.OutGrads[0], g.Attrs.(opattr.RevAttrs).Dims...)}
		},
	})
}

// Rev reverses the order of elements along dims (XLA's Rev).
func Rev(x *tensor.Tensor, dims ...int) *tensor.Tensor {
	return eager.Run1(revOp, opattr.RevAttrs{Dims: dims}, x)
}

// Roll shifts x's elements along axis by shift places, those pushed past
// the end coming back at the start (torch.roll, np.roll): element i moves
// to (i + shift) mod n; a negative shift moves them the other way, and a
// negative axis counts from the end. Any dtype and shape (rank at least
// 1); its gradient rolls dy back. Panics with a *tensor.Error for an axis
// out of range.
func Roll(x *tensor.Tensor, shift, axis int) *tensor.Tensor {
	needInputs("Roll", x)
	defer asOp("Roll")
	r := x.Rank()
	if axis < -r || axis >= r {
		fail("Roll", tensor.ErrAxis, []*tensor.Tensor{x}, "axis %d is out of range for rank %d", axis, r)
	}
	axis = axisOf(axis, r)
	n := x.Dim(axis)
	if n == 0 || shift%n == 0 {
		return Identity(x)
	}
	s := (shift%n + n) % n
	part := func(from, to int) *tensor.Tensor {
		start, limit := make([]int, r), slices.Clone([]int(x.Shape()))
		start[axis], limit[axis] = from, to
		return Slice(x, start, limit, nil)
	}
	return Concatenate(axis, part(n-s, n), part(0, n-s))
}

// Tuple is XLA's tuple: an ordered list of tensors of any shapes.
type Tuple []*tensor.Tensor

// GetTupleElement returns element i of t, panicking with a *tensor.Error
// when i is out of range.
func GetTupleElement(t Tuple, i int) *tensor.Tensor {
	if i < 0 || i >= len(t) {
		fail("GetTupleElement", tensor.ErrIndex, t, "index %d is outside a tuple of %d", i, len(t))
	}
	return t[i]
}

// Call is XLA's Call: it applies a computation (any Go function of
// tensors) to args. Ops inside run, and are recorded, as usual.
func Call(computation func(args ...*tensor.Tensor) Tuple, args ...*tensor.Tensor) Tuple {
	needFunc("Call", "computation", computation == nil)
	return computation(args...)
}

// Map is XLA's Map: it applies f elementwise over operands of one shape.
// f is given the whole operands and must be built from elementwise ops (it
// then computes every element at once, with gradients); a result of
// another shape panics with a *tensor.Error.
func Map(f func(xs ...*tensor.Tensor) *tensor.Tensor, operands ...*tensor.Tensor) *tensor.Tensor {
	needFunc("Map", "f", f == nil)
	if len(operands) == 0 {
		fail("Map", tensor.ErrArity, nil, "needs at least one operand")
	}
	for i, x := range operands {
		if !x.Shape().Equal(operands[0].Shape()) {
			fail("Map", tensor.ErrShape, operands, "operand %d has shape %v, operand 0 has %v", i, x.Shape(), operands[0].Shape())
		}
	}
	y := f(operands...)
	if !y.Shape().Equal(operands[0].Shape()) {
		fail("Map", tensor.ErrShape, operands, "the function returned shape %v; it must be elementwise", y.Shape())
	}
	return y
}

// Clip limits x to [lo, hi] elementwise (lo, hi broadcast against x).
// The gradient passes where x is inside the range.
func Clip(x, lo, hi *tensor.Tensor) *tensor.Tensor {
	defer asOp("Clip")
	return Minimum(Maximum(x, lo), hi)
}
