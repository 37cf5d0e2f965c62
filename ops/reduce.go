package ops

import (
	"fmt"
	"slices"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// ReduceKind is a built-in reduction: ReduceSum (the zero value),
// ReduceMean, ReduceMax, ReduceMin or ReduceProd.
type ReduceKind uint8

// The built-in reductions.
const (
	ReduceSum ReduceKind = iota
	ReduceMean
	ReduceMax
	ReduceMin
	ReduceProd
)

var reduceNames = [...]string{"Sum", "Mean", "ReduceMax", "ReduceMin", "Prod"}

// Reduction describes a reduction: which, over which dimensions, and
// whether reduced dimensions stay as size 1. Reduce and the functions
// built on it take no dimensions to mean all of them and count negative
// ones from the end; the op itself receives Dims sorted, non-negative and
// explicit.
type Reduction struct {
	Kind     ReduceKind
	Dims     []int
	KeepDims bool
}

func (r Reduction) String() string {
	kind := "?"
	if int(r.Kind) < len(reduceKindNames) {
		kind = reduceKindNames[r.Kind]
	}
	return fmt.Sprintf("%s dims=%v keepdims=%v", kind, r.Dims, r.KeepDims)
}

// reduceKindNames are the reductions as a Reduce's attributes show them.
var reduceKindNames = [...]string{"sum", "mean", "max", "min", "prod"}

// reduceDimsOf normalises a reduction's dims for an operand of rank r:
// all of them when none are given, negative ones counted from the end,
// sorted. Out-of-range and repeated dims stay for the shape rule to report.
func reduceDimsOf(dims []int, r int) []int {
	if len(dims) == 0 {
		all := make([]int, r)
		for i := range all {
			all[i] = i
		}
		return all
	}
	out := make([]int, len(dims))
	for i, d := range dims {
		out[i] = axisOf(d, r)
	}
	slices.Sort(out)
	return out
}

// checkReduceDims fails the call unless dims are increasing and in [0, rank).
func checkReduceDims(c *eager.Call, dims []int, rank int) []int {
	for i, d := range dims {
		checkAxis(c, d, rank)
		if i > 0 && d <= dims[i-1] {
			c.Fail(tensor.ErrAxis, "dimension repeated in %v", dims)
		}
	}
	return dims
}

// keptShape returns the output shape and the keepdims shape.
func keptShape(shape tensor.Shape, dims []int) (out, keep tensor.Shape) {
	out = tensor.Shape{}
	keep = slices.Clone(shape)
	for d, n := range shape {
		if slices.Contains(dims, d) {
			keep[d] = 1
		} else {
			out = append(out, n)
		}
	}
	return out, keep
}

var reduceOp *eager.Op

func init() {
	reduceOp = eager.Register(&eager.Op{
		Name: "Reduce", Inputs: 1, DTypes: numericTypes,
		Infer: func(c *eager.Call) []eager.Out {
			x, r := c.Inputs[0], c.Attrs.(Reduction)
			if r.Kind > ReduceProd {
				c.Fail(tensor.ErrAttr, "unknown reduction %d", r.Kind)
			}
			if r.Kind == ReduceMean && !x.DType().IsFloat() {
				c.Fail(tensor.ErrDType, "Mean needs a float dtype, got %v", x.DType())
			}
			out, keep := keptShape(x.Shape(), checkReduceDims(c, r.Dims, x.Rank()))
			if r.KeepDims {
				out = keep
			}
			return c.Out1(x.DType(), out)
		},
		Grad: reduceGrad,
	})
}

func reduceGrad(g *eager.Grad) []*tensor.Tensor {
	x, y, r := g.Inputs[0], g.Outputs[0], g.Attrs.(Reduction)
	if !x.DType().IsFloat() {
		return []*tensor.Tensor{nil}
	}
	dims := r.Dims
	_, keep := keptShape(x.Shape(), dims)
	dy := Reshape(g.OutGrads[0], keep...)
	yk := Reshape(y, keep...)
	dx := reduceGradKept(x, dy, yk, r.Kind, dims, float64(x.NumElements())/float64(max(keep.NumElements(), 1)))
	for _, v := range []*tensor.Tensor{dy, yk} { // views: their holds on dy's and y's buffers
		if v != g.OutGrads[0] && v != y && v != dx {
			releaseTemp(v)
		}
	}
	return []*tensor.Tensor{dx}
}

// reduceGradKept is the reduction's gradient from dy and the result yk
// with the reduced dimensions kept as 1.
func reduceGradKept(x, dy, yk *tensor.Tensor, kind ReduceKind, dims []int, count float64) *tensor.Tensor {
	switch kind {
	case ReduceSum:
		return BroadcastTo(dy, x.Shape()...)
	case ReduceMean:
		n := ScalarLike(dy, count)
		q := Div(dy, n)
		releaseTemp(n)
		dx := BroadcastTo(q, x.Shape()...)
		if dx != q {
			releaseTemp(q)
		}
		return dx
	case ReduceMax, ReduceMin:
		// Ties share the gradient equally, as TensorFlow does.
		var t temps
		defer t.release()
		mask := t.keep(Cast(t.keep(Eq(x, yk)), x.DType()))
		ties := t.keep(Reduce(mask, Reduction{Kind: ReduceSum, Dims: dims, KeepDims: true}))
		return Mul(mask, t.keep(Div(dy, ties)))
	default: // ReduceProd: dy times the product of the other elements.
		others := productOfOthers(x, dims)
		defer releaseTemp(others)
		return Mul(dy, others)
	}
}

// productOfOthers is, for each element of x, the product of the other
// elements of its reduction over dims: the exclusive running products
// from each end of the reduced elements, multiplied. It divides by
// nothing, so it holds where the product underflows or x has zeros and
// tiny elements together (y/x gives 0 or overflows there), and so do its
// derivatives, to every order (Cumprod's).
func productOfOthers(x *tensor.Tensor, dims []int) *tensor.Tensor {
	shape := x.Shape()
	if shape.NumElements() == 0 {
		return ZerosLike(x)
	}
	reduced := make([]bool, len(shape))
	n := 1
	for _, d := range dims {
		reduced[d] = true
		n *= shape[d]
	}
	perm := make([]int, 0, len(shape))
	for _, want := range []bool{false, true} { // the kept dims, then the reduced
		for d := range shape {
			if reduced[d] == want {
				perm = append(perm, d)
			}
		}
	}
	var t temps
	defer t.release()
	moved := t.keep(Transpose(x, perm...))
	rows := t.keep(Reshape(moved, -1, n))
	others := t.keep(Mul(t.keep(Cumprod(rows, 1, true, false)), t.keep(Cumprod(rows, 1, true, true))))
	return Transpose(t.keep(Reshape(others, moved.Shape()...)), inversePerm(perm)...)
}

// Reduce applies a built-in reduction. x: numeric (Mean: float). The
// result drops the reduced dimensions (or keeps them as 1 with KeepDims).
// Reducing zero elements gives the identity: 0 for Sum, 1 for Prod, -Inf
// (or the lowest integer) for Max, +Inf (or the highest) for Min, NaN for
// Mean. Panics with a *tensor.Error for a bad or repeated dimension.
func Reduce(x *tensor.Tensor, r Reduction) *tensor.Tensor {
	r.Dims = reduceDimsOf(r.Dims, rankOf(x))
	return eager.Run1(reduceOp, r, x)
}

// Sum adds over dims (all when none are given).
func Sum(x *tensor.Tensor, dims ...int) *tensor.Tensor {
	defer asOp("Sum")
	return Reduce(x, Reduction{Kind: ReduceSum, Dims: dims})
}

// Mean averages over dims (all when none are given). Floats only.
func Mean(x *tensor.Tensor, dims ...int) *tensor.Tensor {
	defer asOp("Mean")
	return Reduce(x, Reduction{Kind: ReduceMean, Dims: dims})
}

// Amax is the maximum over dims, all when none are given (NumPy's and
// PyTorch's amax); the gradient is shared among tied maxima.
func Amax(x *tensor.Tensor, dims ...int) *tensor.Tensor {
	defer asOp("Amax")
	return Reduce(x, Reduction{Kind: ReduceMax, Dims: dims})
}

// Amin is the minimum over dims, all when none are given (NumPy's and
// PyTorch's amin); the gradient is shared among tied minima.
func Amin(x *tensor.Tensor, dims ...int) *tensor.Tensor {
	defer asOp("Amin")
	return Reduce(x, Reduction{Kind: ReduceMin, Dims: dims})
}

// ReduceMaxOf is Amax.
//
// Deprecated: use Amax; ReduceMaxOf goes in the next release.
func ReduceMaxOf(x *tensor.Tensor, dims ...int) *tensor.Tensor { return Amax(x, dims...) }

// ReduceMinOf is Amin.
//
// Deprecated: use Amin; ReduceMinOf goes in the next release.
func ReduceMinOf(x *tensor.Tensor, dims ...int) *tensor.Tensor { return Amin(x, dims...) }

// Prod multiplies over dims (all when none are given).
func Prod(x *tensor.Tensor, dims ...int) *tensor.Tensor {
	defer asOp("Prod")
	return Reduce(x, Reduction{Kind: ReduceProd, Dims: dims})
}

// Reducer is a reduction that KeepDims applies: one over dims (Sum, Mean,
// Amax, Amin, Prod, Any, All, or a function of one's own of that form) or
// one along an axis (ArgMax, ArgMin).
type Reducer interface {
	func(*tensor.Tensor, ...int) *tensor.Tensor | func(*tensor.Tensor, int) *tensor.Tensor
}

// KeepDims reduces x over dims with reduce and keeps the reduced
// dimensions as size 1 (NumPy's keepdims=True, PyTorch's keepdim=True),
// so that the result broadcasts against x. It is the keepdims form of
// every reduction, one name for all:
//
//	KeepDims(Sum, x, 1)      // x [4 3] -> [4 1]
//	KeepDims(Mean, x)        // all dimensions: [1 1]
//	KeepDims(ArgMax, x, -1)  // [4 1], int64
//
// Dims count from the end when negative; none means all (for a
// reduction over dims). An axis reduction takes exactly one. The result
// is differentiable as reduce is. Panics with a *tensor.Error for what
// reduce refuses, or for an axis reduction given another number of dims.
func KeepDims[R Reducer](reduce R, x *tensor.Tensor, dims ...int) *tensor.Tensor {
	needInputs("KeepDims", x)
	defer asOp("KeepDims")
	var y *tensor.Tensor
	switch f := any(reduce).(type) {
	case func(*tensor.Tensor, ...int) *tensor.Tensor:
		needFunc("KeepDims", "reduce", f == nil)
		y = f(x, dims...)
	case func(*tensor.Tensor, int) *tensor.Tensor:
		needFunc("KeepDims", "reduce", f == nil)
		if len(dims) != 1 {
			fail("KeepDims", tensor.ErrAttr, []*tensor.Tensor{x}, "a reduction along an axis takes one dim, got %v", dims)
		}
		y = f(x, dims[0])
	}
	_, keep := keptShape(x.Shape(), reduceDimsOf(dims, x.Rank()))
	return Reshape(y, keep...)
}
