package nn_test

import (
	"context"
	"fmt"
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/collective/mpi"
	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/internal/mpitest"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Data-parallel training on 2 and 3 processes computes what one process
// computes with the whole batch.
func TestDataParallelUnderMPIRun(t *testing.T) {
	for _, np := range []int{2, 3} {
		t.Run(fmt.Sprint(np), func(t *testing.T) { mpitest.Run(t, np, "TestRankDataParallel") })
	}
}

func dpModel(seed uint64) *nn.Sequential {
	rng := tensor.NewRNG(seed)
	return nn.NewSequential(
		nn.NewDense("hidden", rng, 4, 8, nn.DenseOpts{Activation: ops.Tanh}),
		nn.NewDense("logits", rng, 8, 3, nn.DenseOpts{}))
}

// TestRankDataParallel is one rank: its model starts from a seed of its
// own (Fit broadcasts rank 0's), trains on its shard of every global batch
// of 12, and must end where a single process training on the whole
// batches ends, up to the order of floating-point sums (1e-5), with the
// same per-epoch losses and validation accuracy.
func TestRankDataParallel(t *testing.T) {
	if !mpitest.Rank() {
		t.Skip("runs as a rank under TestDataParallelUnderMPIRun's mpirun")
	}
	comm, err := mpi.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer comm.Close()
	r, n := comm.Rank(), comm.Size()
	rng := tensor.NewRNG(9)
	x := tensor.RandNormal(rng, tensor.Float32, 48, 4)
	y := ops.Cast(ops.Gt(ops.Sum(x, 1), tensor.Scalar(0)), tensor.Int32)
	all, err := data.FromSlices(x, y)
	if err != nil {
		t.Fatal(err)
	}
	metrics := map[string]nn.Metric{"accuracy": nn.Accuracy}
	fit := func(model *nn.Sequential, ds, val *data.Dataset, step func(nn.Optimizer) nn.Step, cfg nn.FitConfig) nn.History {
		opt := &nn.SGD{LR: nn.Constant(0.2), Momentum: 0.5}
		cfg.Epochs, cfg.Validation = 3, val
		cfg.Evaluate = nn.EvalStepOf(model, nn.SparseSoftmaxCrossEntropy, metrics)
		h, err := nn.Fit(context.Background(), ds, nn.AllVariables(model), opt, step(opt), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}

	ref := dpModel(1) // rank 0's start
	hRef := fit(ref, all.Take(36).Batch(12, false), all.Skip(36).Batch(12, false),
		func(o nn.Optimizer) nn.Step { return nn.TrainStep(ref, nn.SparseSoftmaxCrossEntropy, o) }, nn.FitConfig{})

	// One bucket for every gradient after the backward pass, then a
	// bucket per gradient sent while the pass goes on; then traced, the
	// all-reduce in the step's graph, in one bucket and in several.
	for _, opts := range []nn.DistributedOptions{{}, {BucketBytes: 64, Overlap: true}, {Traced: true}, {Traced: true, BucketBytes: 100}} {
		model := dpModel(uint64(1 + 100*r))
		h := fit(model, all.Take(36).Shard(n, r).Batch(12/n, false), all.Skip(36).Shard(n, r).Batch(12, false),
			func(o nn.Optimizer) nn.Step {
				return nn.DistributedTrainStep(comm, model, nn.SparseSoftmaxCrossEntropy, o, opts)
			}, nn.FitConfig{Comm: comm})
		for i, v := range model.Variables() {
			d := ops.Amax(ops.Abs(ops.Sub(v.Value(), ref.Variables()[i].Value()))).Float()
			if d > 1e-5 {
				t.Errorf("rank %d of %d, %+v: %s differs from one process's by %g", r, n, opts, v.Name(), d)
			}
		}
		for e := range hRef.Epochs {
			for _, k := range []string{"loss", "val_loss", "val_accuracy"} {
				if got, want := h.Epochs[e][k], hRef.Epochs[e][k]; math.Abs(got-want) > 1e-5 {
					t.Errorf("rank %d of %d, %+v, epoch %d: %s %v, one process %v", r, n, opts, e+1, k, got, want)
				}
			}
		}
	}

	// Gradient accumulation over two micro-batches: each rank sums its
	// own, the ranks' sums meet once a round (one all-reduce where there
	// were two), and the variables end where one process's do.
	accumulated := func(o nn.Optimizer) nn.Optimizer { return nn.NewAccumulatedOptimizer(o, 2) }
	ref = dpModel(1)
	fitAcc := func(model *nn.Sequential, ds *data.Dataset, step func(nn.Optimizer) nn.Step, cfg nn.FitConfig) {
		opt := accumulated(&nn.SGD{LR: nn.Constant(0.2), Momentum: 0.5})
		cfg.Epochs = 2
		if _, err := nn.Fit(context.Background(), ds, nn.AllVariables(model), opt, step(opt), cfg); err != nil {
			t.Fatal(err)
		}
	}
	fitAcc(ref, all.Take(48).Batch(12, false), func(o nn.Optimizer) nn.Step { return nn.TrainStep(ref, nn.SparseSoftmaxCrossEntropy, o) }, nn.FitConfig{})
	for _, opts := range []nn.DistributedOptions{{}, {Traced: true}} {
		model := dpModel(uint64(1 + 100*r))
		counted := &countingComm{Comm: comm}
		fitAcc(model, all.Take(48).Shard(n, r).Batch(12/n, false), func(o nn.Optimizer) nn.Step {
			return nn.DistributedTrainStep(counted, model, nn.SparseSoftmaxCrossEntropy, o, opts)
		}, nn.FitConfig{Comm: comm})
		for i, v := range model.Variables() {
			if d := ops.Amax(ops.Abs(ops.Sub(v.Value(), ref.Variables()[i].Value()))).Float(); d > 1e-5 {
				t.Errorf("rank %d of %d, accumulated, %+v: %s differs from one process's by %g", r, n, opts, v.Name(), d)
			}
		}
		if got, want := counted.allReduces, 4; got != want { // 8 micro-batches, 4 rounds, one bucket
			t.Errorf("rank %d of %d, accumulated, %+v: %d all-reduces in 8 micro-batches, want %d", r, n, opts, got, want)
		}
	}

	// Under a LossScaleOptimizer, a micro-batch holding a NaN on one rank
	// (a row of batch 1, in rank 1's shard) is skipped on every rank, as
	// one process skips the whole batch: a flag's all-reduce each
	// micro-batch, the round's sums' once a round.
	xs := tensor.ToSlice[float32](x)
	xs[13*4] = float32(math.NaN())
	withNaN, err := data.FromSlices(tensor.FromSlice(xs, 48, 4), y)
	if err != nil {
		t.Fatal(err)
	}
	scaled := func() *nn.LossScaleOptimizer {
		return nn.NewLossScaleOptimizer(accumulated(&nn.SGD{LR: nn.Constant(0.2), Momentum: 0.5}))
	}
	train := func(ds *data.Dataset, step nn.Step) {
		for epoch := range 2 {
			for b, err := range ds.Epoch(context.Background(), epoch) {
				if err != nil {
					t.Fatal(err)
				}
				if _, _, err := step(b); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	ref = dpModel(1)
	refOpt := scaled()
	train(withNaN.Batch(12, false), nn.TrainStep(ref, nn.SparseSoftmaxCrossEntropy, refOpt))
	if refOpt.Skipped() != 2 { // batch 1 of each epoch
		t.Fatalf("one process skipped %d steps, want 2", refOpt.Skipped())
	}
	for _, opts := range []nn.DistributedOptions{{}, {Traced: true}} {
		model := dpModel(1) // as Fit would broadcast rank 0's
		counted := &countingComm{Comm: comm}
		opt := scaled()
		train(withNaN.Shard(n, r).Batch(12/n, false), nn.DistributedTrainStep(counted, model, nn.SparseSoftmaxCrossEntropy, opt, opts))
		for i, v := range model.Variables() {
			if d := ops.Amax(ops.Abs(ops.Sub(v.Value(), ref.Variables()[i].Value()))).Float(); d > 1e-5 {
				t.Errorf("rank %d of %d, loss-scaled accumulation, %+v: %s differs from one process's by %g", r, n, opts, v.Name(), d)
			}
		}
		if opt.Skipped() != 2 || opt.Scale() != refOpt.Scale() {
			t.Errorf("rank %d of %d, loss-scaled accumulation, %+v: %d skipped at scale %v, one process %d at %v", r, n, opts, opt.Skipped(), opt.Scale(), refOpt.Skipped(), refOpt.Scale())
		}
		// 8 micro-batches: 8 flags; 6 finite ones, 3 rounds of sums.
		if counted.allReduces != 11 || counted.flags != 8 {
			t.Errorf("rank %d of %d, loss-scaled accumulation, %+v: %d all-reduces, %d of one element; want 11 and 8", r, n, opts, counted.allReduces, counted.flags)
		}
	}
}

// countingComm counts its AllReduce calls, and those of one element.
type countingComm struct {
	collective.Comm
	allReduces, flags int
}

func (c *countingComm) AllReduce(t *tensor.Tensor, op collective.Op) (*tensor.Tensor, error) {
	c.allReduces++
	if t.NumElements() == 1 {
		c.flags++
	}
	return c.Comm.AllReduce(t, op)
}
