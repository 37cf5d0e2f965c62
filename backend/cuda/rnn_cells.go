package cuda

import (
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// LSTMCell, GRUCell and their backward ops (ops/rnn_cells.go): one kernel
// each, a thread per element of the state (kernels/rnn_cells.go).

func init() {
	for _, d := range slices.Concat(kernels.Floats, kernels.Halves) {
		for _, c := range []struct {
			op, kernel string
			state      int // the input whose shape is the state's: [n h]
		}{{"LSTMCell", "lstm_cell", 2}, {"LSTMCellBackprop", "lstm_cell_grad", 2}, {"GRUCell", "gru_cell", 2}, {"GRUCellBackprop", "gru_cell_grad", 2}} {
			eager.RegisterKernel(c.op, device.GPU, tensorType(d), rnnCell(d, c.kernel, c.state))
		}
	}
}

// rnnCell launches kernel name over the state's elements (input state's):
// outputs first, then the inputs.
func rnnCell(d kernels.DType, name string, state int) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		s := c.Inputs[state]
		total := s.NumElements()
		if total == 0 {
			return
		}
		args := newArgs()
		for _, t := range slices.Concat(outs, c.Inputs) {
			args = args.Ptr(ptr(t))
		}
		args = divisorArg(args.U64(uint64(total)), s.Dim(1), total)
		check(c, gpu(c).launch("rnn", kernels.Name(name, string(d)), total, args))
	}
}
