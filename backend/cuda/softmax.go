package cuda

import (
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Softmax, LogSoftmax, their gradients, SparseSoftmaxCrossEntropy and its gradient
// (ops/softmax.go): a warp or a block per row of the last dimension; the half
// types read and written as such, computed in float32 and float64.

func init() {
	for _, d := range slices.Concat(kernels.Floats, kernels.Halves) {
		eager.RegisterKernel("Softmax", device.GPU, tensorType(d), rowsKernel("softmax", d))
		eager.RegisterKernel("LogSoftmax", device.GPU, tensorType(d), rowsKernel("log_softmax", d))
		eager.RegisterKernel("SoftmaxGrad", device.GPU, tensorType(d), rowsGradKernel("softmax_grad", d))
		eager.RegisterKernel("LogSoftmaxGrad", device.GPU, tensorType(d), rowsGradKernel("log_softmax_grad", d))
		eager.RegisterKernel("SparseSoftmaxCrossEntropy", device.GPU, tensorType(d), sparseXent(d))
		eager.RegisterKernel("SparseSoftmaxCrossEntropyGrad", device.GPU, tensorType(d), sparseXentGrad(d))
	}
}

// launchRows queues a row kernel of the softmax family over rows rows of
// n elements.
func launchRows(c *eager.Call, name string, rows, n int, args *cu.Args) {
	launchFamilyRows(c, "softmax", name, rows, n, args)
}

// launchFamilyRows queues a row kernel of family (kernels' newRowGroups)
// over rows rows of n elements, args holding its own parameters: a warp
// or a block a row, as kernels.RowGroupShift chooses.
func launchFamilyRows(c *eager.Call, family, name string, rows, n int, args *cu.Args) {
	g := gpu(c)
	shift := kernels.RowGroupShift(rows, n)
	perBlock := kernels.ReduceBlock >> shift
	blocks := (rows + perBlock - 1) / perBlock
	check(c, g.launchBlocks(family, name, min(blocks, max(g.info.SMs, 1)*32), kernels.ReduceBlock, args.U64(uint64(shift))))
}

func rowsKernel(kind string, d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		x, out := c.Inputs[0], outs[0]
		if x.NumElements() == 0 {
			return
		}
		n := x.Dim(-1)
		rows := x.NumElements() / n
		launchRows(c, kernels.Name(kind, string(d)), rows, n, newArgs().Ptr(ptr(out)).Ptr(ptr(x)).U64(uint64(rows)).U64(uint64(n)))
	}
}

// rowsGradKernel runs a softmax's gradient kernel (kind) over the rows of
// its inputs (y, dy).
func rowsGradKernel(kind string, d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		y, dy, out := c.Inputs[0], c.Inputs[1], outs[0]
		if y.NumElements() == 0 {
			return
		}
		n := y.Dim(-1)
		rows := y.NumElements() / n
		launchRows(c, kernels.Name(kind, string(d)), rows, n, newArgs().Ptr(ptr(out)).Ptr(ptr(y)).Ptr(ptr(dy)).U64(uint64(rows)).U64(uint64(n)))
	}
}

// sparseXent queues the kernel, which checks the labels on the device
// (checks.go): a bad label is an error at the next synchronisation.
func sparseXent(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		logits, labels, out := c.Inputs[0], c.Inputs[1], outs[0]
		rows, classes := logits.Dim(0), logits.Dim(1)
		if rows == 0 {
			return
		}
		slot := gpu(c).checkSlot(c, labels, classes, "label %d at row %d is outside [0, %d)")
		name := kernels.Name("sparse_xent", string(d), string(kernelType(labels.DType())))
		launchRows(c, name, rows, classes, newArgs().Ptr(ptr(out)).Ptr(ptr(logits)).Ptr(ptr(labels)).Ptr(slot).U64(uint64(rows)).U64(uint64(classes)))
	}
}

// sparseXentGrad queues the gradient's kernel, which checks the labels as
// sparseXent's does.
func sparseXentGrad(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		logits, labels, dy, out := c.Inputs[0], c.Inputs[1], c.Inputs[2], outs[0]
		rows, classes := logits.Dim(0), logits.Dim(1)
		if rows == 0 {
			return
		}
		slot := gpu(c).checkSlot(c, labels, classes, "label %d at row %d is outside [0, %d)")
		name := kernels.Name("sparse_xent_grad", string(d), string(kernelType(labels.DType())))
		launchRows(c, name, rows, classes, newArgs().Ptr(ptr(out)).Ptr(ptr(logits)).Ptr(ptr(labels)).Ptr(ptr(dy)).Ptr(slot).U64(uint64(rows)).U64(uint64(classes)))
	}
}
