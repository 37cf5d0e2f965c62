package nn

import (
	"fmt"
	"slices"

	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Dropout in a traced step. A mask drawn in Go while tracing would be
// frozen into the graph; instead the step's graph takes, as its last
// argument, a vector of where each RNG of the model's dropout layers
// stands (tensor.RNG.Reserve of no words), and each layer draws its mask
// with ops.DropoutAt from its RNG's element, past the blocks the layers
// before it drew from that RNG in the same call. After the call the step
// moves each RNG on by the blocks the call took (known per batch shape
// from the run of the step's function that traced it), so the masks are
// bit for bit those TrainStep's layers draw from the same RNGs, and every
// call, and every replay of a recording, draws afresh.

// traceDraws is where a traced step's dropout layers draw.
type traceDraws struct {
	rngs []*tensor.RNG // the model's dropout RNGs, in the order of its walk
	// While the step's function runs: the starts argument and the blocks
	// drawn so far from each RNG.
	starts *tensor.Tensor
	offset []uint64
	// blocks is, per batch signature, the blocks a call draws from each
	// RNG.
	blocks map[string][]uint64
}

// eachDropout calls fn with each dropout layer of m (through Containers):
// where its traceDraws is kept, and its RNG.
func eachDropout(m Module, fn func(draws **traceDraws, rng *tensor.RNG)) {
	switch l := m.(type) {
	case *Dropout:
		fn(&l.draws, l.rng)
	case *MultiHeadAttention:
		fn(&l.draws, l.rng)
	case Container:
		for _, inner := range l.Modules() {
			eachDropout(inner, fn)
		}
	}
}

// newTraceDraws returns the draws of m's dropout layers: their RNGs, each
// once, in the order of m's walk.
func newTraceDraws(m Module) *traceDraws {
	d := &traceDraws{}
	eachDropout(m, func(_ **traceDraws, rng *tensor.RNG) {
		if rng != nil && !slices.Contains(d.rngs, rng) {
			d.rngs = append(d.rngs, rng)
		}
	})
	return d
}

// attach makes m's dropout layers draw through d (nil: as in eager
// training).
func attach(m Module, d *traceDraws) {
	eachDropout(m, func(draws **traceDraws, _ *tensor.RNG) { *draws = d })
}

// begin starts a run of the step's function on the starts argument.
func (d *traceDraws) begin(starts *tensor.Tensor) {
	d.starts, d.offset = starts, make([]uint64, len(d.rngs))
}

// end closes the run, keeping its blocks for calls of signature sig.
func (d *traceDraws) end(sig string) {
	if d.blocks == nil {
		d.blocks = map[string][]uint64{}
	}
	d.blocks[sig] = d.offset
	d.starts, d.offset = nil, nil
}

// startsOn is the starts argument of a call, on dev: where each RNG
// stands now.
func (d *traceDraws) startsOn(dev device.Device) *tensor.Tensor {
	at := make([]int64, len(d.rngs))
	for i, r := range d.rngs {
		at[i] = int64(r.Reserve(0))
	}
	t, err := tensor.FromSlice(at, len(at)).To(dev)
	if err != nil {
		panic(err)
	}
	return t
}

// advance moves each RNG on by the blocks a call of signature sig drew.
func (d *traceDraws) advance(sig string) {
	for i, b := range d.blocks[sig] {
		d.rngs[i].Reserve(int(4 * b))
	}
}

// drop is ops.Dropout of x at rate, its mask drawn where rng's element of
// the starts argument says, past what the call drew from rng before.
func (d *traceDraws) drop(op string, x *tensor.Tensor, rate float64, rng *tensor.RNG) *tensor.Tensor {
	slot, off := d.place(op, x, x.NumElements(), rng)
	return ops.DropoutAt(x, rate, d.starts, slot, off, rng.Key())
}

// place is where in the starts argument's slot of rng (slot, offset)
// a Bernoulli draw of n values (x's, for errors) begins, past what the
// call drew from rng before, and draws them.
func (d *traceDraws) place(op string, x *tensor.Tensor, n int, rng *tensor.RNG) (slot int, off uint64) {
	slot = slices.Index(d.rngs, rng)
	if slot < 0 {
		panic(tensor.NewError("nn", op, tensor.ErrValue, []*tensor.Tensor{x}, "",
			"its RNG is not one the traced step found in the model when it was made"))
	}
	off = d.offset[slot]
	d.offset[slot] += uint64(2*n+3) / 4 // a Bernoulli draw's blocks: two words a value
	return slot, off
}

// dropout is ops.Dropout for layer op: drawn through draws inside a
// traced step (draws set and running), refused inside a trace of one's
// own (its mask would be frozen into the graph).
func dropout(op string, x *tensor.Tensor, rate float64, rng *tensor.RNG, draws *traceDraws) *tensor.Tensor {
	if draws != nil && draws.starts != nil {
		return draws.drop(op, x, rate, rng)
	}
	refuseFrozenDraw(op, x)
	return ops.Dropout(x, rate, rng)
}

// refuseFrozenDraw panics where x is traced by a trace no traced step
// made: a draw made in Go would be frozen into its graph.
func refuseFrozenDraw(op string, x *tensor.Tensor) {
	if trace.Recording(x) {
		panic(tensor.NewError("nn", op, tensor.ErrValue, []*tensor.Tensor{x}, "",
			"dropout in training mode inside a trace its step did not make: its mask, drawn in Go, would be frozen into the graph; train with TrainStep, TracedTrainStep or RecordedTrainStep, or SetTraining(false)"))
	}
}

// attentionDropout is ops.AttentionDropout for layer op: the weights of
// q against k dropped as dropout would drop them (the same draws, from rng
// or through draws), in one op (a GPU's flash kernels draw the mask
// themselves).
func attentionDropout(op string, q, k, v, mask *tensor.Tensor, causal bool, rate float64, rng *tensor.RNG, draws *traceDraws) *tensor.Tensor {
	n := q.NumElements() / max(q.Dim(-1), 1) * k.Dim(-2) // the weights' elements
	if draws != nil && draws.starts != nil {
		slot, off := draws.place(op, q, n, rng)
		return ops.AttentionDropout(q, k, v, mask, causal, 0, rate, draws.starts, slot, off, rng.Key())
	}
	refuseFrozenDraw(op, q)
	return ops.AttentionDropout(q, k, v, mask, causal, 0, rate, nil, 0, rng.Reserve(2*n), rng.Key())
}

// batchSignature names a batch's dtypes and shapes.
func batchSignature(b []*tensor.Tensor) string {
	s := ""
	for _, t := range b {
		s += fmt.Sprintf("%v%v;", t.DType(), t.Shape())
	}
	return s
}
