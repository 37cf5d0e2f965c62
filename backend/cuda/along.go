package cuda

import (
	"math"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/backend/move"
	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// TakeAlongAxis, PutAlongAxisAddZeros, ArgMaxMin, ArgSort and ArgTopK (ops/sort.go;
// ArgSort's and ArgTopK's kernels in argsort.go), Cumsum and Cumprod (ops/cumulative.go).

func init() {
	registerMoves("TakeAlongAxis", takeAlong)
	for _, d := range kernels.Numeric {
		eager.RegisterKernel("PutAlongAxisAddZeros", device.GPU, tensorType(d), putAlongZeros(d))
		eager.RegisterKernel("ArgMaxMin", device.GPU, tensorType(d), argExtreme(d))
		eager.RegisterKernel("Cumsum", device.GPU, tensorType(d), cumulative(d, "cumsum"))
		eager.RegisterKernel("Cumprod", device.GPU, tensorType(d), cumulative(d, "cumprod"))
		eager.RegisterKernel("ArgSort", device.GPU, tensorType(d), argsort(d))
		eager.RegisterKernel("ArgTopK", device.GPU, tensorType(d), argTopK(d))
	}
}

// alongArgs are (outer, n, K, inner) of x split at axis, K the indices'
// size there, for a kernel over total elements.
func alongArgs(args *cu.Args, x, idx *tensor.Tensor, axis, total int) *cu.Args {
	outer, n, inner := move.Split(x.Shape(), axis)
	return divisorArg(args.U64(uint64(outer)).U64(uint64(n)).U64(uint64(idx.Dim(axis))), inner, total)
}

// divisorArg appends a divisor parameter of value v to args, for a kernel
// whose dividends are below limit (kernels.Divisor).
func divisorArg(args *cu.Args, v, limit int) *cu.Args {
	magic, shift := kernels.Divisor(v, limit)
	return args.U64(uint64(v)).U32(magic).U32(shift)
}

func takeAlong(c *eager.Call, outs []*tensor.Tensor) {
	x, idx, out := c.Inputs[0], c.Inputs[1], outs[0]
	axis := c.Attrs.(opattr.AxisAttrs).Axis
	if out.NumElements() == 0 {
		return
	}
	name := kernels.Name("take_along", width(x.DType()), string(kernelType(idx.DType())))
	total := out.NumElements()
	_, _, inner := move.Split(x.Shape(), axis)
	slot := gpu(c).checkSlot(c, idx, x.Dim(axis), indexMessage)
	args := alongArgs(newArgs().Ptr(ptr(out)).Ptr(ptr(x)).Ptr(ptr(idx)).Ptr(slot), x, idx, axis, total)
	check(c, gpu(c).launch("along", name, total, divisorArg(args, idx.Dim(axis)*inner, total)))
}

// putAlongZeros is PutAlongAxisAddZeros' kernel: the output zeroed, then
// put_along_add.
func putAlongZeros(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		upd, idx, out := c.Inputs[0], c.Inputs[1], outs[0]
		if out.NumElements() == 0 {
			return
		}
		check(c, gpu(c).Fill(out.Buffer(), 0, out.NumElements()*out.DType().Size(), []byte{0}))
		putAlongInto(c, d, out, idx, upd, c.Attrs.(opattr.ScatterZerosAttrs).Axis)
	}
}

// putAlongInto adds upd into out at idx along axis (put_along_add).
func putAlongInto(c *eager.Call, d kernels.DType, out, idx, upd *tensor.Tensor, axis int) {
	if upd.NumElements() == 0 {
		return
	}
	outer, _, inner := move.Split(out.Shape(), axis)
	name := kernels.Name("put_along_add", string(d), string(kernelType(idx.DType())))
	slot := gpu(c).checkSlot(c, idx, out.Dim(axis), indexMessage)
	check(c, gpu(c).launch("along", name, outer*inner, alongArgs(newArgs().Ptr(ptr(out)).Ptr(ptr(idx)).Ptr(ptr(upd)).Ptr(slot), out, idx, axis, outer*inner)))
}

// argExtreme runs arg_max_<d> or arg_min_<d>: a thread per column, or
// where the columns are few and long (fewLongColumns), about √n chunks'
// choices, then a thread per column choosing among them in order.
func argExtreme(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		x, a, out := c.Inputs[0], c.Attrs.(opattr.SortAttrs), outs[0]
		if out.NumElements() == 0 {
			return
		}
		g := gpu(c)
		outer, n, inner := move.Split(x.Shape(), a.Axis)
		name := kernels.Name("arg_min", string(d))
		if a.Descending {
			name = kernels.Name("arg_max", string(d))
		}
		// run chooses in chunks of chunk of steps steps along columns of n
		// (cand: the steps' elements along n, or 0 for step s's s).
		run := func(out, cand cu.Ptr, steps, chunk, chunks int) {
			runs := outer * chunks * inner
			args := newArgs().Ptr(out).Ptr(ptr(x)).Ptr(cand).U64(uint64(outer)).U64(uint64(n)).U64(uint64(steps)).U64(uint64(chunk))
			check(c, g.launch("along", name, runs, divisorArg(divisorArg(args, chunks, outer*chunks), inner, runs)))
		}
		if !fewLongColumns(outer*inner, n) {
			run(ptr(out), 0, n, n, 1)
			return
		}
		chunk, chunks := rootChunks(n)
		choices := temporary(c, tensor.Int64, tensor.Shape{outer, chunks, inner}, "the chunks' choices")
		defer choices.Release()
		run(ptr(choices), 0, n, chunk, chunks)
		run(ptr(out), ptr(choices), chunks, chunks, 1)
	}
}

// cumulative runs the kernel cumsum_<d> or cumprod_<d> (name). A thread
// walks a column; where the columns are few and long (fewLongColumns),
// each is cut into about √n chunks of √n steps: the chunks' results, an
// exclusive scan of them along the column, then each chunk walked again
// from its start (results rounded in that order, not the CPU's).
func cumulative(d kernels.DType, name string) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		x, a, out := c.Inputs[0], c.Attrs.(opattr.CumsumAttrs), outs[0]
		if out.NumElements() == 0 {
			return
		}
		g, kernel := gpu(c), kernels.Name(name, string(d))
		outer, n, inner := move.Split(x.Shape(), a.Axis)
		// run launches the kernel over outer·chunks·inner chunks of chunk
		// steps of columns of n (start: 0 for none).
		run := func(out, x, start cu.Ptr, n, chunk, chunks int, total, reverse, exclusive bool) {
			runs := outer * chunks * inner
			args := newArgs().Ptr(out).Ptr(x).Ptr(start).U64(uint64(outer)).U64(uint64(n)).U64(uint64(chunk)).U64(flag(total))
			args = divisorArg(divisorArg(args, chunks, outer*chunks), inner, runs).U64(flag(reverse)).U64(flag(exclusive))
			check(c, g.launch("along", kernel, runs, args))
		}
		if !fewLongColumns(outer*inner, n) {
			run(ptr(out), ptr(x), 0, n, n, 1, false, a.Reverse, a.Exclusive)
			return
		}
		chunk, chunks := rootChunks(n)
		shape := tensor.Shape{outer, chunks, inner}
		totals := temporary(c, x.DType(), shape, "the chunks' results")
		offsets := temporary(c, x.DType(), shape, "the chunks' starts")
		defer totals.Release()
		defer offsets.Release()
		run(ptr(totals), ptr(x), 0, n, chunk, chunks, true, a.Reverse, false)
		run(ptr(offsets), ptr(totals), 0, chunks, chunks, 1, false, false, true) // the chunks are in walking order
		run(ptr(out), ptr(x), ptr(offsets), n, chunk, chunks, false, a.Reverse, a.Exclusive)
	}
}

// rootChunks cuts n steps into chunks of about √n: the chunk's length
// and their count.
func rootChunks(n int) (chunk, chunks int) {
	chunk = int(math.Ceil(math.Sqrt(float64(n))))
	return chunk, (n + chunk - 1) / chunk
}

// fewLongColumns reports whether a thread per column of n steps would
// leave most of the GPU's threads idle while each walks far: fewer than
// 16384 columns, of 64 steps or more. The kernels along an axis then cut
// the columns (chunks for Cumsum, Cumprod, ArgMax and ArgMin; merge
// passes for ArgSort).
func fewLongColumns(columns, n int) bool {
	const fullColumns, shortest = 1 << 14, 64
	return columns < fullColumns && n >= shortest
}
