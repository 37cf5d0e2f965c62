package nn

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/internal/leaktest"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// keeper is a layer that keeps its input (as a layer must not): the test
// reads it afterwards to see whether Sequential released it.
type keeper struct{ seen *tensor.Tensor }

func (k *keeper) Forward(x *tensor.Tensor) *tensor.Tensor { k.seen = x; return ops.Neg(x) }
func (k *keeper) Variables() []*tape.Variable             { return nil }

func TestSequentialReleasesIntermediatesUnobserved(t *testing.T) {
	rng := tensor.NewRNG(1)
	first, second := &keeper{}, &keeper{}
	model := NewSequential(first, NewDense("d", rng, 3, 3, DenseOpts{Activation: ops.Relu}), second, Flatten{})
	x := tensor.RandNormal(rng, tensor.Float32, 2, 3)
	out := model.Forward(x)
	if err := tensor.Catch(func() { ops.Sum(x) }); err != nil {
		t.Fatalf("the model's input was touched: %v", err)
	}
	if err := tensor.Catch(func() { ops.Sum(out) }); err != nil {
		t.Fatalf("the output is unreadable: %v", err)
	}
	if err := tensor.Catch(func() { ops.Sum(second.seen) }); !errors.Is(err, tensor.ErrReleased) {
		t.Errorf("an intermediate between layers was not released: %v", err)
	}
	// The last layer (Flatten) returns a view of second's output: the view
	// keeps the buffer alive through the release.
	want := tensor.ToSlice[float32](ops.Neg(model.Layers[1].Forward(ops.Neg(x))))
	if got := tensor.ToSlice[float32](out); !slices.Equal(got, want) {
		t.Errorf("output %v, want %v", got, want)
	}

	tp := tape.New() // observed: nothing is released, the gradient needs it all
	defer tp.Stop()
	tp.Watch(x)
	y := ops.Sum(model.Forward(x))
	if err := tensor.Catch(func() { ops.Sum(second.seen) }); err != nil {
		t.Errorf("an intermediate was released under a tape: %v", err)
	}
	if g := tp.Gradient(y, x)[0]; !g.Shape().Equal(x.Shape()) {
		t.Errorf("gradient shape %v", g.Shape())
	}
}

// An RNN trains under a tape that releases its intermediates (TrainStep's)
// as under one that keeps them: the loop drops what the backward does not
// read, never the values an iteration hands to the next.
func TestTrainStepOfRNNsReleasesNoLoopValue(t *testing.T) {
	for _, cell := range []string{"lstm", "gru"} {
		t.Run(cell, func(t *testing.T) {
			build := func() (Module, Optimizer) {
				rng := tensor.NewRNG(5)
				var c Cell = NewLSTMCell("cell", rng, 4, 6, tensor.Float32)
				if cell == "gru" {
					c = NewGRUCell("cell", rng, 4, 6, tensor.Float32)
				}
				return NewSequential(&RNN{Cell: c}, NewDense("out", rng, 6, 3, DenseOpts{})), NewAdam(Constant(0.01))
			}
			x := tensor.RandNormal(tensor.NewRNG(6), tensor.Float32, 2, 5, 4)
			y := tensor.FromSlice([]int32{0, 2})
			released, relOpt := build()
			kept, keptOpt := build()
			step := TrainStep(released, SparseSoftmaxCrossEntropy, relOpt)
			for i := range 3 {
				got, _, err := step([]*tensor.Tensor{x, y})
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				tp := tape.New()
				loss := SparseSoftmaxCrossEntropy(kept.Forward(x), y)
				vars := kept.Variables()
				if err := keptOpt.Apply(vars, tp.Gradient(loss, Values(vars)...)); err != nil {
					t.Fatal(err)
				}
				if want := loss.Float(); got != want {
					t.Fatalf("step %d: loss %v under the releasing tape, %v under the keeping one", i, got, want)
				}
			}
		})
	}
}

// A training step, once warm, releases every large intermediate it makes
// (forward values, gradients and what the gradient rules make inside; a
// pipeline stage's micro-batches too):
// none waits for the collector, which would let the heap grow between
// collections and each step fault in fresh memory (a Dense layer's Relu
// mask in its gradient did, 10% of an MLP step).
func TestTrainStepLeavesNothingToTheCollector(t *testing.T) {
	rng := tensor.NewRNG(3)
	relu := DenseOpts{Activation: ops.Relu}
	for _, c := range []struct {
		name  string
		model Module
		x     *tensor.Tensor
		y     *tensor.Tensor
	}{
		{"dense relu", NewSequential(NewDense("a", rng, 256, 256, relu), NewDense("b", rng, 256, 10, DenseOpts{})),
			tensor.RandNormal(rng, tensor.Float32, 64, 256), tensor.FromSlice(make([]int32, 64))},
		{"dense tanh", NewSequential(NewDense("a", rng, 256, 256, DenseOpts{Activation: ops.Tanh}), NewDense("b", rng, 256, 10, DenseOpts{})),
			tensor.RandNormal(rng, tensor.Float32, 64, 256), tensor.FromSlice(make([]int32, 64))},
		{"cnn", NewSequential(NewConv2D("c", rng, 3, 3, 1, 16, Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Padding: ops.Same}, Activation: ops.Relu}),
			MaxPool2D{ops.PoolOpts{Size: [2]int{2, 2}, Strides: [2]int{2, 2}}}, Flatten{}, NewDense("d", rng, 16*8*8, 10, DenseOpts{})),
			tensor.RandNormal(rng, tensor.Float32, 32, 16, 16, 1), tensor.FromSlice(make([]int32, 32))},
		{"transformer block", NewSequential(NewTransformerBlock("t", rng, 64, 4, MultiHeadAttentionOpts{Causal: true}),
			Flatten{}, NewDense("d", rng, 16*64, 10, DenseOpts{})),
			tensor.RandNormal(rng, tensor.Float32, 16, 16, 64), tensor.FromSlice(make([]int32, 16))},
		{"lstm", NewSequential(&RNN{Cell: NewLSTMCell("l", rng, 32, 128, tensor.Float32)}, NewDense("o", rng, 128, 10, DenseOpts{})),
			tensor.RandNormal(rng, tensor.Float32, 64, 12, 32), tensor.FromSlice(make([]int32, 64))},
		{"batch norm, dropout", NewSequential(NewDense("a", rng, 256, 256, DenseOpts{}), NewBatchNorm("bn", 256, tensor.Float32),
			NewDropout(0.25, tensor.NewRNG(9)), NewDense("b", rng, 256, 10, DenseOpts{})),
			tensor.RandNormal(rng, tensor.Float32, 64, 256), tensor.FromSlice(make([]int32, 64))},
		{"mixed bfloat16", mixed(NewSequential(NewDense("a", rng, 256, 256, relu), NewDense("b", rng, 256, 10, DenseOpts{}))),
			tensor.RandNormal(rng, tensor.Float32, 64, 256), tensor.FromSlice(make([]int32, 64))},
		{"gru", NewSequential(&RNN{Cell: NewGRUCell("g", rng, 32, 128, tensor.Float32)}, NewDense("o", rng, 128, 10, DenseOpts{})),
			tensor.RandNormal(rng, tensor.Float32, 64, 12, 32), tensor.FromSlice(make([]int32, 64))},
		// The scan's sequence a recorded value (a layer's output), whose
		// per-step slices' gradients the loop's backward returns: the
		// tape releases them once summed (they were left to the
		// collector, a slice a step). Slices of 64 KB and more: the
		// collector's count sees those.
		{"gru over a dense layer", NewSequential(NewDense("p", rng, 32, 512, DenseOpts{}), &RNN{Cell: NewGRUCell("g", rng, 512, 128, tensor.Float32)}, NewDense("o", rng, 128, 10, DenseOpts{})),
			tensor.RandNormal(rng, tensor.Float32, 64, 12, 32), tensor.FromSlice(make([]int32, 64))},
		{"embedding, layer norm, rms norm", NewSequential(NewEmbedding("e", rng, 50, 128, tensor.Float32), NewLayerNorm("ln", 128, tensor.Float32),
			NewRMSNorm("rms", 128, tensor.Float32), Flatten{}, NewDense("o", rng, 16*128, 10, DenseOpts{Activation: ops.GeluTanh})),
			tensor.FromSlice(make([]int32, 64*16), 64, 16), tensor.FromSlice(make([]int32, 64))},
		{"cnn nchw, average pooling", NewSequential(NewConv2D("c", rng, 3, 3, 4, 16, Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Padding: ops.Same, Format: ops.NCHW}, Activation: ops.Relu}),
			AvgPool2D{ops.PoolOpts{Size: [2]int{2, 2}, Strides: [2]int{2, 2}, Format: ops.NCHW}}, Flatten{}, NewDense("d", rng, 16*8*8, 10, DenseOpts{})),
			tensor.RandNormal(rng, tensor.Float32, 32, 4, 16, 16), tensor.FromSlice(make([]int32, 32))},
		{"dense relu, traced", NewSequential(NewDense("a", rng, 256, 256, relu), NewDense("b", rng, 256, 10, DenseOpts{})),
			tensor.RandNormal(rng, tensor.Float32, 64, 256), tensor.FromSlice(make([]int32, 64))},
		{"regression, batch norm over images", NewSequential(NewConv2D("c", rng, 3, 3, 1, 16, Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Padding: ops.Same}}),
			NewBatchNorm("bn", 16, tensor.Float32), Flatten{}, NewDense("d", rng, 16*16*16, 1, DenseOpts{})),
			tensor.RandNormal(rng, tensor.Float32, 32, 16, 16, 1), tensor.RandNormal(rng, tensor.Float32, 32, 1)},
		{"attention with dropout", NewSequential(NewTransformerBlock("t", rng, 64, 4, MultiHeadAttentionOpts{Causal: true, Dropout: 0.1}),
			Flatten{}, NewDense("d", rng, 16*64, 1, DenseOpts{})),
			tensor.RandNormal(rng, tensor.Float32, 16, 16, 64), tensor.RandUniform(rng, tensor.Float32, 0, 1, 16, 1)},
		{"sgd momentum, sigmoid", NewSequential(NewDense("a", rng, 256, 256, DenseOpts{Activation: ops.Sigmoid}), NewDense("b", rng, 256, 10, DenseOpts{})),
			tensor.RandNormal(rng, tensor.Float32, 64, 256), tensor.FromSlice(make([]int32, 64))},
		{"rmsprop, strided conv", NewSequential(NewConv2D("c", rng, 3, 3, 1, 16, Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Padding: ops.Same, Strides: [2]int{2, 2}}, Activation: ops.Tanh}),
			Flatten{}, NewDense("d", rng, 16*8*8, 10, DenseOpts{})),
			tensor.RandNormal(rng, tensor.Float32, 32, 16, 16, 1), tensor.FromSlice(make([]int32, 32))},
		{"adamw", NewSequential(NewDense("a", rng, 256, 256, relu), NewDense("b", rng, 256, 10, DenseOpts{})),
			tensor.RandNormal(rng, tensor.Float32, 64, 256), tensor.FromSlice(make([]int32, 64))},
		// A pipeline stage's micro-batches: their rows, the values it
		// posts and receives (one stage: in one process, a second
		// stage's recording tape would keep the first's intermediates,
		// as any tape recording does).
		{"dense relu, one pipeline stage", NewSequential(NewDense("a", rng, 256, 256, relu), NewDense("b", rng, 256, 10, DenseOpts{})),
			tensor.RandNormal(rng, tensor.Float32, 256, 256), tensor.FromSlice(make([]int32, 256))},
	} {
		t.Run(c.name, func(t *testing.T) {
			loss, mk := Loss(SparseSoftmaxCrossEntropy), TrainStep
			switch c.name {
			case "dense relu, traced":
				mk = TracedTrainStep
			case "regression, batch norm over images":
				loss = MeanSquaredError
			case "attention with dropout":
				loss = BinaryCrossEntropyWithLogits
			}
			var opt Optimizer = NewAdam(Constant(1e-3))
			switch c.name {
			case "sgd momentum, sigmoid":
				opt = &SGD{LR: Constant(0.01), Momentum: 0.9}
			case "rmsprop, strided conv":
				opt = NewRMSProp(Constant(1e-3))
			case "adamw":
				opt = NewAdamW(Constant(1e-3), 0.01)
			}
			step := mk(c.model, loss, opt)
			if c.name == "dense relu, one pipeline stage" {
				lp, err := NewLocalPipeline(c.model.(*Sequential), SparseSoftmaxCrossEntropy,
					func() Optimizer { return NewAdam(Constant(1e-3)) }, 1, PipelineOptions{MicroBatches: 4, Schedule: OneFOneB})
				if err != nil {
					t.Fatal(err)
				}
				defer lp.Close()
				step = lp.Step
			}
			run := func() {
				if _, _, err := step([]*tensor.Tensor{c.x, c.y}); err != nil {
					t.Fatal(err)
				}
			}
			run()
			run()
			// Up to 8 recycled in a window however many steps ran; a
			// leaking step adds a buffer a step or more.
			if few, more := leaktest.StepsRecycled(run, 2, 18); more-few >= 12 {
				t.Errorf("16 steps more left %d large buffers more to the collector (2 steps: %d, 18: %d)", more-few, few, more)
			}
		})
	}
}

// mixed sets s's policy to mixed bfloat16.
func mixed(s *Sequential) *Sequential {
	s.Policy = MixedBFloat16
	return s
}

// An RNN's zero state is made once and shared between calls: a call of
// no steps returns the caller a view of it, which the caller may release
// without spoiling the next call.
func TestRNNZeroStateIsShared(t *testing.T) {
	rng := tensor.NewRNG(4)
	r := &RNN{Cell: NewGRUCell("g", rng, 3, 5, tensor.Float32), ReturnSequences: true}
	empty := tensor.Zeros(tensor.Float32, 2, 0, 3)
	_, final := r.Run(empty, nil)
	if len(final) != 1 || !slices.Equal(tensor.ToSlice[float32](final[0]), make([]float32, 10)) {
		t.Fatalf("final state of no steps: %v", final)
	}
	final[0].Release()
	x := tensor.RandNormal(rng, tensor.Float32, 2, 4, 3)
	a, _ := r.Run(x, nil)
	b, _ := r.Run(x, []*tensor.Tensor{tensor.Zeros(tensor.Float32, 2, 5)})
	if !slices.Equal(tensor.ToSlice[float32](a), tensor.ToSlice[float32](b)) {
		t.Error("a run from the shared zero state differs from one from fresh zeros")
	}
	// Without ReturnSequences a sequence of no steps has no last output:
	// an error saying so (it was an index out of range).
	last := &RNN{Cell: NewGRUCell("g", rng, 3, 5, tensor.Float32)}
	if err := tensor.Catch(func() { last.Forward(empty) }); err == nil || !strings.Contains(err.Error(), "no steps") {
		t.Errorf("last output of no steps: %v", err)
	}
}
