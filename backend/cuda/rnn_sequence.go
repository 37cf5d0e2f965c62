package cuda

import (
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// LSTMSequence, GRUSequence and their backward ops (ops/rnn_sequence.go):
// one launch each way for the whole sequence, a block for every
// kernels.SeqRows batch rows (kernels/rnn_sequence.go); the half types'
// kernels compute as the float32 ones between the dispatch's casts would,
// to the bit, reading and writing the half values themselves.

func init() {
	for _, d := range slices.Concat(kernels.Floats, kernels.Halves) {
		eager.RegisterKernel("LSTMSequence", device.GPU, tensorType(d), sequence(d, "lstm_seq", 0))
		eager.RegisterKernel("LSTMSequenceBackprop", device.GPU, tensorType(d), sequence(d, "lstm_seq_grad", 2))
		eager.RegisterKernel("GRUSequence", device.GPU, tensorType(d), sequence(d, "gru_seq", 0))
		eager.RegisterKernel("GRUSequenceBackprop", device.GPU, tensorType(d), sequence(d, "gru_seq_grad", 3))
	}
}

// RunsLSTMSequence reports whether d's sequence kernels take an LSTM of
// recurrent kernel u [h 4h] (ops.LSTMSequenceFused): states of up to
// kernels.SeqMaxWidth, float dtypes (the half types through float32).
func (d *Device) RunsLSTMSequence(xz, u *tensor.Tensor) bool { return runsSequence(xz, u) }

// RunsGRUSequence reports whether d's sequence kernels take a GRU of
// recurrent kernel u [h 3h] (ops.GRUSequenceFused), as RunsLSTMSequence.
func (d *Device) RunsGRUSequence(xp, u *tensor.Tensor) bool { return runsSequence(xp, u) }

func runsSequence(x, u *tensor.Tensor) bool {
	return x != nil && u != nil && u.Rank() == 2 && u.Dim(0) >= 1 && u.Dim(0) <= kernels.SeqMaxWidth && x.DType().IsFloat()
}

// sequence launches kernel name of dtype d: outputs then inputs, then
// (n, t, w) read from the call's input seq ([n t ·]: the input's terms
// forward, with u [w ·] the second input; the incoming cells or states
// [n t w] backward); a block of 4·w threads for every kernels.SeqRows
// rows.
func sequence(d kernels.DType, name string, seq int) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		x := c.Inputs[seq]
		n, t, w := x.Dim(0), x.Dim(1), c.Inputs[1].Dim(0) // u [w 4w] forward
		if seq != 0 {
			w = x.Dim(2) // cp [n t w] backward
		}
		if w > kernels.SeqMaxWidth {
			c.Fail(tensor.ErrShape, "the GPU's sequence kernels take states of up to %d, got %d (ops.LSTMSequenceFused says which)", kernels.SeqMaxWidth, w)
		}
		if n == 0 || w == 0 {
			return
		}
		args := newArgs()
		for _, t := range append(append([]*tensor.Tensor{}, outs...), c.Inputs...) {
			args = args.Ptr(ptr(t))
		}
		args = args.U64(uint64(n)).U64(uint64(t)).U64(uint64(w))
		grid := (n + kernels.SeqRows - 1) / kernels.SeqRows
		check(c, gpu(c).launchBlocks("rnn", kernels.Name(name, string(d)), grid, 4*w, args))
	}
}
