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

// Gather, Scatter, ScatterAdd and ScatterAddZeros (ops/gather.go). The indices are checked
// on the host first, as the CPU does (a failed call names the first index
// out of range and writes nothing; the read waits for the indices).

func init() {
	registerMoves("Gather", gather)
	registerMoves("Scatter", scatter("scatter"))
	for _, d := range kernels.Numeric {
		eager.RegisterKernel("ScatterAdd", device.GPU, tensorType(d), scatter("scatter_add"))
		eager.RegisterKernel("ScatterAddZeros", device.GPU, tensorType(d), scatterAddZeros)
	}
}

// width names the kernels that move elements of dt without looking at them.
func width(dt tensor.DType) string {
	switch dt.Size() {
	case 1:
		return "b8"
	case 2:
		return "b16"
	case 4:
		return "b32"
	}
	return "b64"
}

func gather(c *eager.Call, outs []*tensor.Tensor) {
	p, idx, out := c.Inputs[0], c.Inputs[1], outs[0]
	axis := c.Attrs.(opattr.AxisAttrs).Axis
	outer, n, inner := move.Split(p.Shape(), axis)
	if out.NumElements() == 0 {
		return
	}
	name := kernels.Name("gather", width(p.DType()), string(kernelType(idx.DType())))
	total := out.NumElements()
	slot := gpu(c).checkSlot(c, idx, n, indexMessage)
	args := divisorArg(newArgs().Ptr(ptr(out)).Ptr(ptr(p)).Ptr(ptr(idx)).Ptr(slot).
		U64(uint64(outer)).U64(uint64(n)).U64(uint64(idx.NumElements())), inner, total)
	check(c, gpu(c).launch("index", name, total, divisorArg(args, idx.NumElements()*inner, total)))
}

func scatter(kind string) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		base, idx, upd, out := c.Inputs[0], c.Inputs[1], c.Inputs[2], outs[0]
		if out.NumElements() == 0 {
			return
		}
		check(c, gpu(c).Copy(out.Buffer(), 0, []int{1}, base.Buffer(), 0, []int{1}, []int{base.NumElements()}, base.DType().Size()))
		scatterInto(c, kind, out, idx, upd, c.Attrs.(opattr.AxisAttrs).Axis)
	}
}

// scatterAddZeros is ScatterAddZeros' kernel: the output zeroed, then
// ScatterAdd's kernels.
func scatterAddZeros(c *eager.Call, outs []*tensor.Tensor) {
	upd, idx, out := c.Inputs[0], c.Inputs[1], outs[0]
	if out.NumElements() == 0 {
		return
	}
	check(c, gpu(c).Fill(out.Buffer(), 0, out.NumElements()*out.DType().Size(), []byte{0}))
	scatterInto(c, "scatter_add", out, idx, upd, c.Attrs.(opattr.ScatterZerosAttrs).Axis)
}

// scatterInto runs the kernel kind (scatter or scatter_add) that puts or
// adds upd's slices into out's at idx along axis.
func scatterInto(c *eager.Call, kind string, out, idx, upd *tensor.Tensor, axis int) {
	if upd.NumElements() == 0 {
		return
	}
	outer, n, inner := move.Split(out.Shape(), axis)
	elem := width(out.DType())
	if kind == "scatter_add" {
		elem = string(kernelType(out.DType()))
	}
	id, j := kernelType(idx.DType()), idx.NumElements()
	slot := gpu(c).checkSlot(c, idx, n, indexMessage)
	if kind == "scatter_add" && fewLongColumns(outer*inner, j) {
		scatterAddSorted(c, elem, id, out, idx, upd, slot, outer, n, inner)
		return
	}
	args := divisorArg(newArgs().Ptr(ptr(out)).Ptr(ptr(idx)).Ptr(ptr(upd)).Ptr(slot).
		U64(uint64(outer)).U64(uint64(n)).U64(uint64(j)), inner, outer*inner)
	check(c, gpu(c).launch("index", kernels.Name(kind, elem, string(id)), outer*inner, args))
}

// scatterAddSorted is ScatterAdd where its columns are few and long (an
// embedding's gradient, whose thread a column would walk every index):
// idx sorted (stably), a thread per (outer, index, inner) sums a run of
// equal indices' updates (scatter_add_sorted), the same sums in the same
// order as the column's walk.
func scatterAddSorted(c *eager.Call, elem string, id kernels.DType, out, idx, upd *tensor.Tensor, slot cu.Ptr, outer, n, inner int) {
	j := idx.NumElements()
	perm := temporary(c, tensor.Int64, tensor.Shape{j}, "the indices' sorting permutation")
	defer perm.Release()
	argsortInto(c, id, idx, 1, j, 1, false, perm)
	total := outer * j * inner
	args := divisorArg(newArgs().Ptr(ptr(out)).Ptr(ptr(perm)).Ptr(ptr(idx)).Ptr(ptr(upd)).Ptr(slot).
		U64(uint64(outer)).U64(uint64(n)).U64(uint64(j)), inner, total)
	check(c, gpu(c).launch("index", kernels.Name("scatter_add_sorted", elem, string(id)), total, divisorArg(args, j*inner, total)))
}

// indexMessage is the error of a bad index found by a kernel: the index,
// its position, the bound (as move.CheckIndexRange words it).
const indexMessage = "index %d at position %d is outside [0, %d)"
