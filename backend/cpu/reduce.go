package cpu

import (
	"math"
	"slices"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernel of Reduce (ops/reduce.go).

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
			if x32, ok := any(x).([]float32); ok && len(x) > 0 {
				if haveVecKernels {
					return acc + any(ssum(&x32[0], len(x32))).(T)
				}
				return acc + any(float32(sum64(x32))).(T)
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

// sum64 is the sum of float32 values in four float64 sums (where there
// are no vector kernels: as accurate as the vector kernel's 32 float32
// partial sums, or more).
func sum64(x []float32) float64 {
	var s [4]float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s[0] += float64(x[i])
		s[1] += float64(x[i+1])
		s[2] += float64(x[i+2])
		s[3] += float64(x[i+3])
	}
	for ; i < len(x); i++ {
		s[0] += float64(x[i])
	}
	return (s[0] + s[1]) + (s[2] + s[3])
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
func reduceKernel[T tensor.Num](mk func(ops.ReduceKind) reducer[T]) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		x, r := c.Inputs[0], c.Attrs.(ops.Reduction)
		dims := r.Dims // sorted and non-negative
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
			if kl, kh := kept[0], kept[len(kept)-1]+1; kh-kl == len(kept) {
				// The kept dims are one block between reduced ones (a bias
				// gradient in NCHW: [N, C, H, W] over N, H and W): no copy.
				reduceAround(c, red, r.Kind, data[T](x), data[T](outs[0]), x.Shape(), kl, kh)
				return
			}
			// The reduced dims move together, before the kept dims after
			// the last of them, which stay where they are: the copy moves
			// whole rows of those (an upsampling's gradient: [N H 2 W 2 C]
			// over its 2s as [N H W 2 2 C]), and the fold is a column
			// fold over them.
			last := dims[len(dims)-1]
			split := len(kept)
			for split > 0 && kept[split-1] > last {
				split--
			}
			x = permuted(x, slices.Concat(kept[:split], dims, kept[split:]))
			defer x.Release() // the permuted copy is the kernel's own
			lo, hi = split, split+len(dims)
		}
		shape := x.Shape()
		outer := tensor.Shape(shape[:lo]).NumElements()
		mid := tensor.Shape(shape[lo:hi]).NumElements()
		inner := tensor.Shape(shape[hi:]).NumElements()
		xv, ov := data[T](x), data[T](outs[0])
		if inner > 1 && inner <= periodTile/4 && outer < deviceOf(c).Workers() && mid*inner >= 2*reduceChunk {
			reduceShortRows(c, red, xv, ov, outer, mid, inner)
		} else if inner == 1 && outer < deviceOf(c).Workers() && mid >= 2*reduceChunk {
			// Few long rows: each row's fixed-size chunks in parallel, then
			// their partial results (in chunk order, so the result does not
			// depend on the number of workers).
			partials := make([]T, (mid+reduceChunk-1)/reduceChunk)
			for o := 0; o < outer; o++ {
				row := xv[o*mid : (o+1)*mid]
				deviceOf(c).Parallel(len(partials), reduceChunk, func(a, b int) {
					for p := a; p < b; p++ {
						partials[p] = red.row(red.init, row[p*reduceChunk:min((p+1)*reduceChunk, mid)])
					}
				})
				ov[o] = red.row(red.init, partials)
			}
		} else {
			deviceOf(c).Parallel(outer, float64(mid*inner), func(a, b int) {
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
		if r.Kind == ops.ReduceMean && mid > 0 {
			n := T(mid)
			for i := range ov {
				ov[i] /= n
			}
		} else if r.Kind == ops.ReduceMean {
			for i := range ov {
				ov[i] = T(math.NaN())
			}
		}
	}
}

// reduceShortRows reduces each of outer blocks [mid, inner] over mid when
// the rows are short (a bias gradient over NHWC: [N*H*W, C]): k rows at a
// time as one long row of k*inner into a tile accumulator, in fixed pieces
// of shortPiece elements run in parallel, each piece's tile folded to
// inner values, and the pieces folded in order into the result (so it does
// not depend on the number of workers).
func reduceShortRows[T tensor.Num](c *eager.Call, red reducer[T], xv, ov []T, outer, mid, inner int) {
	k := max(1, periodTile/inner)
	tile := k * inner
	total := mid * inner
	per := max(1, shortPiece/tile) * tile // elements per piece, whole tiles
	pieces := (total + per - 1) / per
	partials := make([]T, pieces*inner)
	for o := range outer {
		block := xv[o*total : (o+1)*total]
		deviceOf(c).Parallel(pieces, float64(per), func(a, b int) {
			acc, buf := gemmScratch[T](tile)
			defer putGemmScratch(buf)
			for p := a; p < b; p++ {
				for i := range acc {
					acc[i] = red.init
				}
				end := min(total, (p+1)*per)
				for lo := p * per; lo < end; lo += tile {
					hi := min(end, lo+tile)
					red.vec(acc[:hi-lo], block[lo:hi])
				}
				part := partials[p*inner : (p+1)*inner]
				copy(part, acc[:inner])
				for r := inner; r < tile; r += inner {
					red.vec(part, acc[r:r+inner])
				}
			}
		})
		res := ov[o*inner : (o+1)*inner]
		copy(res, partials[:inner])
		for r := inner; r < len(partials); r += inner {
			red.vec(res, partials[r:r+inner])
		}
	}
}

// shortPiece is the number of elements reduceShortRows gives each piece.
const shortPiece = 1 << 16

// reduceAround reduces x over every dim but the block [kl, kh), which has
// reduced dims on both sides: x viewed as [P, K, S], out[k] reduces x[p, k,
// s] over p and then the rows of s, in that order (so the result does not
// depend on the number of workers).
func reduceAround[T tensor.Num](c *eager.Call, red reducer[T], kind ops.ReduceKind, xv, ov []T, shape tensor.Shape, kl, kh int) {
	p := tensor.Shape(shape[:kl]).NumElements()
	k := tensor.Shape(shape[kl:kh]).NumElements()
	s := tensor.Shape(shape[kh:]).NumElements()
	deviceOf(c).Parallel(k, float64(p*s), func(a, b int) {
		for j := a; j < b; j++ {
			acc := red.init
			for i := range p {
				acc = red.row(acc, xv[(i*k+j)*s:][:s])
			}
			ov[j] = acc
		}
	})
	if kind == ops.ReduceMean {
		for i := range ov {
			if p*s == 0 {
				ov[i] = T(math.NaN()) // the mean of nothing
			} else {
				ov[i] /= T(p * s)
			}
		}
	}
}

func reducers[T tensor.Num]() func(ops.ReduceKind) reducer[T] {
	return func(k ops.ReduceKind) reducer[T] {
		switch k {
		case ops.ReduceMax:
			return extremeReducer(lowest[T](), maxOf[T])
		case ops.ReduceMin:
			return extremeReducer(highest[T](), minOf[T])
		case ops.ReduceProd:
			return prodReducer[T]()
		}
		return sumReducer[T]()
	}
}

func init() {
	kernels{
		f32: reduceKernel(reducers[float32]()), f64: reduceKernel(reducers[float64]()),
		i32: reduceKernel(reducers[int32]()), i64: reduceKernel(reducers[int64]()), u8: reduceKernel(reducers[uint8]()),
	}.register("Reduce")
}
