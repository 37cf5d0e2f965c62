package cuda

import (
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// LSTMCell and LSTMCellBackprop (ops/lstm.go): one kernel each way, a
// thread per element of the cell (kernels/lstm.go).

func init() {
	for _, d := range slices.Concat(kernels.Floats, kernels.Halves) {
		eager.RegisterKernel("LSTMCell", device.GPU, tensorType(d), lstmCell(d, "lstm_cell"))
		eager.RegisterKernel("LSTMCellBackprop", device.GPU, tensorType(d), lstmCell(d, "lstm_cell_grad"))
	}
}

// lstmCell launches kernel name over the cell's elements: outputs first,
// then the inputs (z, c and, backward, the output gradients).
func lstmCell(d kernels.DType, name string) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		cell := c.Inputs[1]
		total := cell.NumElements()
		if total == 0 {
			return
		}
		args := newArgs()
		for _, t := range slices.Concat(outs, c.Inputs) {
			args = args.Ptr(ptr(t))
		}
		args = divisorArg(args.U64(uint64(total)), cell.Dim(1), total)
		check(c, gpu(c).launch("lstm", kernels.Name(name, string(d)), total, args))
	}
}
