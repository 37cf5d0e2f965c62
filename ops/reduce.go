package ops

import (
	"fmt"
	"math"
	"slices"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// ReduceKind is a built-in reduction.
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

// Reduction describes a reduction: which, over which dimensions (none means
// all), and whether reduced dimensions stay as size 1.
type Reduction struct {
	Kind     ReduceKind
	Dims     []int
	KeepDims bool
}

func (r Reduction) String() string { return fmt.Sprintf("dims=%v keepdims=%v", r.Dims, r.KeepDims) }

// reduceDims returns the sorted, deduplicated, non-negative dims.
func reduceDims(c *eager.Call, dims []int, rank int) []int {
	if len(dims) == 0 {
		all := make([]int, rank)
		for i := range all {
			all[i] = i
		}
		return all
	}
	out := make([]int, 0, len(dims))
	for _, d := range dims {
		out = append(out, normAxis(c, d, rank))
	}
	slices.Sort(out)
	if len(slices.Compact(slices.Clone(out))) != len(out) {
		c.Fail(tensor.ErrAxis, "dimension repeated in %v", dims)
	}
	return out
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

// reducer holds a reduction's identity and its combining loops.
type reducer[T tensor.Num] struct {
	init T
	// row folds a contiguous run into acc.
	row func(acc T, x []T) T
	// vec combines x into acc elementwise.
	vec func(acc, x []T)
}

func sumReducer[T tensor.Num]() reducer[T] {
	return reducer[T]{init: 0,
		row: func(acc T, x []T) T {
			if x32, ok := any(x).([]float32); ok && haveVecKernels && len(x) > 0 {
				return acc + any(ssum(&x32[0], len(x32))).(T)
			}
			var s [4]T
			i := 0
			for ; i+4 <= len(x); i += 4 {
				s[0] += x[i]
				s[1] += x[i+1]
				s[2] += x[i+2]
				s[3] += x[i+3]
			}
			for ; i < len(x); i++ {
				s[0] += x[i]
			}
			return acc + (s[0] + s[1]) + (s[2] + s[3])
		},
		vec: addInto[T]}
}

func prodReducer[T tensor.Num]() reducer[T] {
	return reducer[T]{init: 1,
		row: func(acc T, x []T) T {
			for _, v := range x {
				acc *= v
			}
			return acc
		},
		vec: func(acc, x []T) {
			x = x[:len(acc)]
			for i := range acc {
				acc[i] *= x[i]
			}
		}}
}

func lowest[T tensor.Num]() T {
	var z T
	switch any(z).(type) {
	case float32:
		return T(math.Inf(-1))
	case float64:
		return T(math.Inf(-1))
	case int32:
		v := int64(math.MinInt32)
		return T(v)
	case int64:
		v := int64(math.MinInt64)
		return T(v)
	}
	return 0
}

func highest[T tensor.Num]() T {
	var z T
	switch any(z).(type) {
	case float32:
		return T(math.Inf(1))
	case float64:
		return T(math.Inf(1))
	case int32:
		v := int64(math.MaxInt32)
		return T(v)
	case int64:
		v := int64(math.MaxInt64)
		return T(v)
	}
	var u uint8 = math.MaxUint8
	return T(u)
}

func extremeReducer[T tensor.Num](init T, pick func(a, b T) T) reducer[T] {
	return reducer[T]{init: init,
		row: func(acc T, x []T) T {
			for _, v := range x {
				acc = pick(acc, v)
			}
			return acc
		},
		vec: func(acc, x []T) {
			x = x[:len(acc)]
			for i := range acc {
				acc[i] = pick(acc[i], x[i])
			}
		}}
}

// reduceChunk is the length of the pieces a long row is reduced in when
// there are fewer rows than workers.
const reduceChunk = 16384

// reduceKernel reduces after collapsing neighbouring dims of one kind into
// the pattern [outer kept, reduced, inner kept], transposing first when the
// reduced dims are not one block.
func reduceKernel[T tensor.Num](mk func(ReduceKind) reducer[T]) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		x, r := c.Inputs[0], c.Attrs.(Reduction)
		dims := reduceDims(c, r.Dims, x.Rank())
		red := mk(r.Kind)
		// Is the reduced set one contiguous block [lo, hi)?
		lo, hi := 0, 0 // a scalar reduces over no dims
		if len(dims) > 0 {
			lo, hi = dims[0], dims[len(dims)-1]+1
		}
		if hi-lo != len(dims) {
			kept := make([]int, 0, x.Rank())
			for d := 0; d < x.Rank(); d++ {
				if !slices.Contains(dims, d) {
					kept = append(kept, d)
				}
			}
			x = Transpose(x, append(kept, dims...)...).Contiguous()
			lo, hi = len(kept), x.Rank()
		}
		shape := x.Shape()
		outer := tensor.Shape(shape[:lo]).NumElements()
		mid := tensor.Shape(shape[lo:hi]).NumElements()
		inner := tensor.Shape(shape[hi:]).NumElements()
		xv, ov := data[T](x), data[T](outs[0])
		if inner == 1 && outer < cpu(c).Workers() && mid >= 2*reduceChunk {
			// Few long rows: each row's fixed-size chunks in parallel, then
			// their partial results (in chunk order, so the result does not
			// depend on the number of workers).
			partials := make([]T, (mid+reduceChunk-1)/reduceChunk)
			for o := 0; o < outer; o++ {
				row := xv[o*mid : (o+1)*mid]
				cpu(c).Parallel(len(partials), reduceChunk, func(a, b int) {
					for p := a; p < b; p++ {
						partials[p] = red.row(red.init, row[p*reduceChunk:min((p+1)*reduceChunk, mid)])
					}
				})
				ov[o] = red.row(red.init, partials)
			}
		} else {
			cpu(c).Parallel(outer, float64(mid*inner), func(a, b int) {
				for o := a; o < b; o++ {
					base := o * mid * inner
					if inner == 1 {
						ov[o] = red.row(red.init, xv[base:base+mid])
						continue
					}
					acc := ov[o*inner : (o+1)*inner]
					for i := range acc {
						acc[i] = red.init
					}
					for m := 0; m < mid; m++ {
						red.vec(acc, xv[base+m*inner:base+(m+1)*inner])
					}
				}
			})
		}
		if r.Kind == ReduceMean && mid > 0 {
			n := T(mid)
			for i := range ov {
				ov[i] /= n
			}
		} else if r.Kind == ReduceMean {
			for i := range ov {
				ov[i] = T(math.NaN())
			}
		}
	}
}

func reducers[T tensor.Num]() func(ReduceKind) reducer[T] {
	return func(k ReduceKind) reducer[T] {
		switch k {
		case ReduceMax:
			return extremeReducer(lowest[T](), maxOf[T])
		case ReduceMin:
			return extremeReducer(highest[T](), minOf[T])
		case ReduceProd:
			return prodReducer[T]()
		}
		return sumReducer[T]()
	}
}

var reduceOp *eager.Op

func init() {
	reduceOp = eager.Register(cpuKernels{
		f32: reduceKernel(reducers[float32]()), f64: reduceKernel(reducers[float64]()),
		i32: reduceKernel(reducers[int32]()), i64: reduceKernel(reducers[int64]()), u8: reduceKernel(reducers[uint8]()),
	}.register(&eager.Op{
		Name: "Reduce", Inputs: 1, DTypes: numericTypes,
		Infer: func(c *eager.Call) []eager.Out {
			x, r := c.Inputs[0], c.Attrs.(Reduction)
			if r.Kind > ReduceProd {
				c.Fail(tensor.ErrAttr, "unknown reduction %d", r.Kind)
			}
			if r.Kind == ReduceMean && !x.DType().IsFloat() {
				c.Fail(tensor.ErrDType, "Mean needs a float dtype, got %v", x.DType())
			}
			out, keep := keptShape(x.Shape(), reduceDims(c, r.Dims, x.Rank()))
			if r.KeepDims {
				out = keep
			}
			return c.Out1(x.DType(), out)
		},
		Grad: reduceGrad,
	}))
}

func reduceGrad(g *eager.Grad) []*tensor.Tensor {
	x, y, r := g.Inputs[0], g.Outputs[0], g.Attrs.(Reduction)
	if !x.DType().IsFloat() {
		return []*tensor.Tensor{nil}
	}
	dims := slices.Clone(r.Dims)
	if len(dims) == 0 {
		dims = make([]int, x.Rank())
		for i := range dims {
			dims[i] = i
		}
	}
	for i, d := range dims {
		if d < 0 {
			dims[i] = d + x.Rank()
		}
	}
	_, keep := keptShape(x.Shape(), dims)
	dy := Reshape(g.OutGrads[0], keep...)
	yk := Reshape(y, keep...)
	count := float64(x.NumElements()) / float64(max(keep.NumElements(), 1))
	switch r.Kind {
	case ReduceSum:
		return []*tensor.Tensor{BroadcastTo(dy, x.Shape()...)}
	case ReduceMean:
		return []*tensor.Tensor{BroadcastTo(Div(dy, ScalarLike(dy, count)), x.Shape()...)}
	case ReduceMax, ReduceMin:
		// Ties share the gradient equally, as TensorFlow does.
		mask := Cast(Eq(x, yk), x.DType())
		ties := Reduce(mask, Reduction{Kind: ReduceSum, Dims: dims, KeepDims: true})
		return []*tensor.Tensor{Mul(mask, Div(dy, ties))}
	default: // ReduceProd: the product of the other elements, zeros included.
		zero := Eq(x, ScalarLike(x, 0))
		zeros := Reduce(Cast(zero, x.DType()), Reduction{Kind: ReduceSum, Dims: dims, KeepDims: true})
		nonzero := Reduce(Select(zero, OnesLike(x), x), Reduction{Kind: ReduceProd, Dims: dims, KeepDims: true})
		safeX := Select(zero, OnesLike(x), x)
		one := ScalarLike(x, 1)
		others := Select(zero,
			Select(Eq(zeros, one), BroadcastTo(nonzero, x.Shape()...), ZerosLike(x)),
			Select(Eq(zeros, ScalarLike(x, 0)), Div(BroadcastTo(yk, x.Shape()...), safeX), ZerosLike(x)))
		return []*tensor.Tensor{Mul(dy, others)}
	}
}

// Reduce applies a built-in reduction. x: numeric (Mean: float). The
// result drops the reduced dimensions (or keeps them as 1 with KeepDims).
// Reducing zero elements gives the identity: 0 for Sum, 1 for Prod, -Inf
// (or the lowest integer) for Max, +Inf (or the highest) for Min, NaN for
// Mean. Panics with a *tensor.Error for a bad or repeated dimension.
func Reduce(x *tensor.Tensor, r Reduction) *tensor.Tensor { return eager.Run1(reduceOp, r, x) }

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

// ReduceMaxOf is the maximum over dims (all when none are given); the
// gradient is shared among tied maxima.
func ReduceMaxOf(x *tensor.Tensor, dims ...int) *tensor.Tensor {
	defer asOp("ReduceMaxOf")
	return Reduce(x, Reduction{Kind: ReduceMax, Dims: dims})
}

// ReduceMinOf is the minimum over dims (all when none are given).
func ReduceMinOf(x *tensor.Tensor, dims ...int) *tensor.Tensor {
	defer asOp("ReduceMinOf")
	return Reduce(x, Reduction{Kind: ReduceMin, Dims: dims})
}

// Prod multiplies over dims (all when none are given).
func Prod(x *tensor.Tensor, dims ...int) *tensor.Tensor {
	defer asOp("Prod")
	return Reduce(x, Reduction{Kind: ReduceProd, Dims: dims})
}
