package cuda

import (
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/backend/move"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Reduce (ops/reduce.go): the reduced dimensions made one block (a
// permuted copy when they are not), then the rows kernel where they are
// the last ones and the columns kernels otherwise: the block kernel for
// folds of 17 to ReduceColBlockRows, after passes of the thread kernel
// for longer ones.

var reduceKindNames = map[ops.ReduceKind]string{ops.ReduceSum: "sum", ops.ReduceMean: "mean",
	ops.ReduceMax: "max", ops.ReduceMin: "min", ops.ReduceProd: "prod"}

func init() {
	for _, d := range slices.Concat(kernels.Numeric, kernels.Halves) {
		eager.RegisterKernel("Reduce", device.GPU, tensorType(d), reduce(d))
	}
}

func reduce(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		r := c.Attrs.(ops.Reduction)
		reduceInto(c, d, c.Inputs[0], r.Dims, r.Kind, outs[0])
	}
}

// reduceInto reduces x over dims (sorted, non-negative) by kind into out,
// of x's dtype or, for a half x, float32 (its float32 sums not rounded).
func reduceInto(c *eager.Call, d kernels.DType, x *tensor.Tensor, dims []int, kind ops.ReduceKind, out *tensor.Tensor) {
	reduceCounting(c, d, x, dims, kind, out, 1)
}

// reduceCounting is reduceInto whose mean divides by scale times the
// elements it folds (the second stage of a fold in two).
func reduceCounting(c *eager.Call, d kernels.DType, x *tensor.Tensor, dims []int, kind ops.ReduceKind, out *tensor.Tensor, scale int) {
	lo, hi := 0, 0
	if len(dims) > 0 {
		lo, hi = dims[0], dims[len(dims)-1]+1
	}
	if hi-lo != len(dims) && reduceEnds(c, d, x, dims, kind, out) {
		return
	}
	if hi-lo != len(dims) {
		var kept []int
		for a := range x.Rank() {
			if !slices.Contains(dims, a) {
				kept = append(kept, a)
			}
		}
		x = move.Permuted(c, x, append(kept, dims...))
		defer x.Release()
		lo, hi = len(kept), x.Rank()
	}
	shape := x.Shape()
	outer, mid, inner := tensor.Shape(shape[:lo]).NumElements(), tensor.Shape(shape[lo:hi]).NumElements(), tensor.Shape(shape[hi:]).NumElements()
	n := outer * inner
	if n == 0 {
		return
	}
	g, name := gpu(c), reduceKindNames[kind]
	// Long folds go in passes: each folds parts of at most limit elements
	// into [outer, parts, inner] partials (a sum's for a mean), the next
	// folds those, until one part is left. Columns: a block folds up to
	// ReduceColBlockRows at once; a longer fold is cut into parts of at
	// least ReduceColChunk, for about ReduceColThreads threads.
	// The half types' partials are float32: they are rounded once, at
	// the end.
	// The limits are of 4-byte values: a float64 fold takes half as many
	// a thread, so that a launch has a thread for every 64 bytes it reads.
	partial, from := d.Compute(), d
	// The last pass writes out's dtype: d's, or float32 for a half d (a
	// sum kept in float32: a mixed-precision norm's offset gradient).
	final := d
	if d.Half() && out.DType() == tensor.Float32 {
		final = kernels.F32
	}
	src, count := x, mid*scale
	wide := max(d.Compute().Size()/4, 1)
	colChunk, blockRows, rowChunk := kernels.ReduceColChunk/wide, kernels.ReduceColBlockRows/wide, kernels.ReduceRowChunk/wide
	for {
		if inner > 1 && mid > colChunk && mid <= blockRows {
			g.reduceColsBlock(c, kernels.ReduceIO(from, final), name, out, src, outer, mid, inner, count)
			if src != x {
				src.Release()
			}
			return
		}
		limit := rowChunk
		if inner > 1 {
			parts := max(1, kernels.ReduceColThreads/(outer*inner))
			limit = max(colChunk, (mid+parts-1)/parts)
		}
		chunk, parts := kernels.ReduceParts(mid, limit)
		dst, pass, to := out, name, final
		if parts > 1 {
			var err error
			if dst, err = tensor.Empty(c.Device, tensorType(partial), tensor.Shape{outer, parts, inner}); err != nil {
				c.Fail(err, "the partial %s of %v", name, x.Shape())
			}
			if kind == ops.ReduceMean {
				pass = "sum"
			}
			to = partial
		}
		g.reducePass(c, kernels.ReduceIO(from, to), pass, dst, src, outer, mid, inner, chunk, parts, count)
		from = to
		if src != x {
			src.Release()
		}
		if parts == 1 {
			return
		}
		src, mid = dst, parts
	}
}

// reduceEnds folds dims that are a block at each end of x's shape
// (NCHW's bias gradient: dimensions 0, 2 and 3) in two stages, the last
// block as rows into a temporary, then the first as columns, instead of
// a permuted copy of x folded once: it reads x once. It reports false,
// having done nothing, for other dims and for the half types (whose
// temporary would round twice).
func reduceEnds(c *eager.Call, d kernels.DType, x *tensor.Tensor, dims []int, kind ops.ReduceKind, out *tensor.Tensor) bool {
	p := 0 // dims[:p] = 0, 1, ..., p-1
	for p < len(dims) && dims[p] == p {
		p++
	}
	q := x.Rank() - (len(dims) - p) // dims[p:] = q, ..., rank-1
	if d.Half() || p == 0 || p == len(dims) || dims[p] != q || dims[len(dims)-1] != x.Rank()-1 {
		return false
	}
	shape := x.Shape()
	stage := kind
	if kind == ops.ReduceMean {
		stage = ops.ReduceSum // the mean divides once, at the end
	}
	mid, err := tensor.Empty(c.Device, x.DType(), shape[:q].Clone())
	if err != nil {
		c.Fail(err, "the partial %s of %v", reduceKindNames[kind], shape)
	}
	defer mid.Release()
	reduceInto(c, d, x, dims[p:], stage, mid)
	prefix := make([]int, p)
	for i := range prefix {
		prefix[i] = i
	}
	reduceCounting(c, d, mid, prefix, kind, out, tensor.Shape(shape[q:]).NumElements())
	return true
}

// reduceColsBlock queues reduce_colsb over src viewed as [outer, mid,
// inner] into dst [outer, inner], a mean dividing by count.
func (g *Device) reduceColsBlock(c *eager.Call, io, kind string, dst, src *tensor.Tensor, outer, mid, inner, count int) {
	perOuter := (inner + 31) / 32
	groups := outer * perOuter
	args := divisorArg(newArgs().Ptr(ptr(dst)).Ptr(ptr(src)).U64(uint64(groups)).U64(uint64(mid)).U64(uint64(inner)), perOuter, groups).U64(uint64(count))
	blocks := min(groups, max(g.info.SMs, 1)*32)
	check(c, g.launchBlocks("reduce", kernels.Name("reduce_colsb", kind, io), blocks, kernels.ReduceBlock, args))
}

// reducePass queues one pass of reduceInto: src viewed as [outer, mid,
// inner] folded by kind in parts of chunk elements into dst [outer,
// parts, inner], a mean dividing by count, by the kernels of dtypes io
// (kernels.ReduceIO).
func (g *Device) reducePass(c *eager.Call, io, kind string, dst, src *tensor.Tensor, outer, mid, inner, chunk, parts, count int) {
	n := outer * parts * inner
	if inner == 1 {
		blocks := min(n, max(g.info.SMs, 1)*32)
		args := divisorArg(newArgs().Ptr(ptr(dst)).Ptr(ptr(src)).U64(uint64(n)).U64(uint64(mid)).U64(uint64(chunk)), parts, n).U64(uint64(count))
		check(c, g.launchBlocks("reduce", kernels.Name("reduce_rows", kind, io), blocks, kernels.ReduceBlock, args))
		return
	}
	args := divisorArg(divisorArg(newArgs().Ptr(ptr(dst)).Ptr(ptr(src)).U64(uint64(n)).U64(uint64(mid)).U64(uint64(chunk)), parts, n), inner, n).U64(uint64(count))
	check(c, g.launch("reduce", kernels.Name("reduce_cols", kind, io), n, args))
}
