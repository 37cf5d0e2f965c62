package cuda

import (
	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/backend/move"
	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// TakeAlongAxis, PutAlongAxisAdd, ArgMaxMin and ArgSort (ops/sort.go), Cumsum
// and Cumprod (ops/cumulative.go).

func init() {
	registerMoves("TakeAlongAxis", takeAlong)
	for _, d := range kernels.Numeric {
		eager.RegisterKernel("PutAlongAxisAdd", device.GPU, tensorType(d), putAlongAdd(d))
		eager.RegisterKernel("ArgMaxMin", device.GPU, tensorType(d), argExtreme(d))
		eager.RegisterKernel("Cumsum", device.GPU, tensorType(d), cumulative(d, "cumsum"))
		eager.RegisterKernel("Cumprod", device.GPU, tensorType(d), cumulative(d, "cumprod"))
		eager.RegisterKernel("ArgSort", device.GPU, tensorType(d), argsort(d))
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

func putAlongAdd(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		base, idx, upd, out := c.Inputs[0], c.Inputs[1], c.Inputs[2], outs[0]
		axis := c.Attrs.(opattr.AxisAttrs).Axis
		if out.NumElements() == 0 {
			return
		}
		check(c, gpu(c).Copy(out.Buffer(), 0, []int{1}, base.Buffer(), 0, []int{1}, []int{base.NumElements()}, base.DType().Size()))
		if upd.NumElements() == 0 {
			return
		}
		outer, _, inner := move.Split(base.Shape(), axis)
		name := kernels.Name("put_along_add", string(d), string(kernelType(idx.DType())))
		slot := gpu(c).checkSlot(c, idx, base.Dim(axis), indexMessage)
		check(c, gpu(c).launch("along", name, outer*inner, alongArgs(newArgs().Ptr(ptr(out)).Ptr(ptr(idx)).Ptr(ptr(upd)).Ptr(slot), base, idx, axis, outer*inner)))
	}
}

func argExtreme(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		x, a, out := c.Inputs[0], c.Attrs.(opattr.SortAttrs), outs[0]
		if out.NumElements() == 0 {
			return
		}
		outer, n, inner := move.Split(x.Shape(), a.Axis)
		name := kernels.Name("arg_min", string(d))
		if a.Descending {
			name = kernels.Name("arg_max", string(d))
		}
		check(c, gpu(c).launch("along", name, outer*inner, divisorArg(newArgs().Ptr(ptr(out)).Ptr(ptr(x)).U64(uint64(outer)).U64(uint64(n)), inner, outer*inner)))
	}
}

// cumulative runs the kernel cumsum_<d> or cumprod_<d> (name).
func cumulative(d kernels.DType, name string) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		x, a, out := c.Inputs[0], c.Attrs.(opattr.CumsumAttrs), outs[0]
		if out.NumElements() == 0 {
			return
		}
		outer, n, inner := move.Split(x.Shape(), a.Axis)
		args := divisorArg(newArgs().Ptr(ptr(out)).Ptr(ptr(x)).U64(uint64(outer)).U64(uint64(n)), inner, outer*inner).
			U64(flag(a.Reverse)).U64(flag(a.Exclusive))
		check(c, gpu(c).launch("along", kernels.Name(name, string(d)), outer*inner, args))
	}
}

func argsort(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		x, a, out := c.Inputs[0], c.Attrs.(opattr.SortAttrs), outs[0]
		if out.NumElements() == 0 {
			return
		}
		tmp, err := tensor.Empty(c.Device, tensor.Int64, out.Shape())
		if err != nil {
			c.Fail(err, "the sort's scratch of %v", out.Shape())
		}
		defer tmp.Release()
		outer, n, inner := move.Split(x.Shape(), a.Axis)
		args := divisorArg(newArgs().Ptr(ptr(out)).Ptr(ptr(tmp)).Ptr(ptr(x)).U64(uint64(outer)).U64(uint64(n)), inner, outer*inner).U64(flag(a.Descending))
		check(c, gpu(c).launch("along", kernels.Name("argsort", string(d)), outer*inner, args))
	}
}
