package nccl

import (
	"fmt"
	"os"
	"testing"

	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/collective/mpi"
	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/mpitest"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Data-parallel training on GPUs: 2 and 3 processes, each with its own
// (emulated) GPU, reducing gradients with NCCL, compute what one process
// computes on the CPU with the whole batches.
func TestDataParallelOnGPUsUnderMPIRun(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	if os.Getenv("EAGERFLOW_REQUIRE_GPU") == "1" {
		t.Skip("the GPU machine has one GPU and no MPI: TestOneRank runs NCCL there")
	}
	for _, np := range []int{2, 3} {
		t.Run(fmt.Sprint(np), func(t *testing.T) { mpitest.Run(t, np, "TestRankDataParallelOnGPU") })
	}
}

// onlyGPU is comm failing the test where a gradient reaches it from
// another device than the GPU (nn keeps the buckets on the comm's device).
type onlyGPU struct {
	*Comm
	t *testing.T
}

func (o onlyGPU) AllReduce(t *tensor.Tensor, op collective.Op) (*tensor.Tensor, error) {
	o.check(t)
	return o.Comm.AllReduce(t, op)
}

func (o onlyGPU) AllReduceInPlace(t *tensor.Tensor, op collective.Op) error {
	o.check(t)
	return o.Comm.AllReduceInPlace(t, op)
}

func (o onlyGPU) check(t *tensor.Tensor) {
	if t.Device() != o.gpu {
		o.t.Errorf("a gradient bucket on %s, not %s", t.Device().Name(), o.gpu.Name())
	}
}

func dpModel(seed uint64) *nn.Sequential {
	rng := tensor.NewRNG(seed)
	return nn.NewSequential(
		nn.NewDense("hidden", rng, 4, 8, nn.DenseOpts{Activation: ops.Tanh}),
		nn.NewDense("logits", rng, 8, 3, nn.DenseOpts{}))
}

// TestRankDataParallelOnGPU is one rank: a model on its GPU from a seed
// of its own, rank 0's weights broadcast over NCCL, three steps on its
// shard of each global batch of 12, both with one bucket after the pass
// and with a bucket per gradient sent while the pass runs, and as one
// loss-scaled accumulated round; the weights must end where the CPU's
// single process ends (1e-5).
func TestRankDataParallelOnGPU(t *testing.T) {
	if !mpitest.Rank() {
		t.Skip("runs as a rank under TestDataParallelOnGPUsUnderMPIRun's mpirun")
	}
	hostComm, err := mpi.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer hostComm.Close()
	gpu := testGPU(t)
	comm, err := Open(gpu, hostComm)
	if err != nil {
		t.Fatal(err)
	}
	defer comm.Close()
	r, n := comm.Rank(), comm.Size()
	rng := tensor.NewRNG(9)
	x := tensor.RandNormal(rng, tensor.Float32, 36, 4)
	y := ops.Cast(ops.Gt(ops.Sum(x, 1), tensor.Scalar(0)), tensor.Int32)

	sgd := func() nn.Optimizer { return &nn.SGD{LR: nn.Constant(0.2), Momentum: 0.5} }
	// Loss-scaled accumulation, three steps a round: every micro-batch's
	// finiteness flag and the round's sums go over NCCL on the GPU.
	scaledRounds := func() nn.Optimizer { return nn.NewLossScaleOptimizer(nn.NewAccumulatedOptimizer(sgd(), 3)) }
	for _, c := range []struct {
		opts nn.DistributedOptions
		opt  func() nn.Optimizer
	}{{nn.DistributedOptions{}, sgd}, {nn.DistributedOptions{BucketBytes: 64, Overlap: true}, sgd}, {nn.DistributedOptions{}, scaledRounds}} {
		ref := dpModel(1)
		refStep := nn.TrainStep(ref, nn.SparseSoftmaxCrossEntropy, c.opt())
		for b := range 3 {
			if _, _, err := refStep(data.Element{ops.Slice(x, []int{12 * b, 0}, []int{12*b + 12, 4}, nil), ops.Slice(y, []int{12 * b}, []int{12*b + 12}, nil)}); err != nil {
				t.Fatal(err)
			}
		}
		restore := device.SetDefault(gpu)
		model := dpModel(uint64(1 + 100*r))
		restore()
		if err := nn.BroadcastVariables(comm, nn.AllVariables(model)); err != nil {
			t.Fatal(err)
		}
		opts := c.opts
		step := nn.DistributedTrainStep(onlyGPU{comm, t}, model, nn.SparseSoftmaxCrossEntropy, c.opt(), opts)
		per := 12 / n
		for b := range 3 {
			lo := 12*b + per*r
			xs, err := ops.Slice(x, []int{lo, 0}, []int{lo + per, 4}, nil).To(gpu)
			if err != nil {
				t.Fatal(err)
			}
			ys, err := ops.Slice(y, []int{lo}, []int{lo + per}, nil).To(gpu)
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := step(data.Element{xs, ys}); err != nil {
				t.Fatalf("rank %d, step %d: %v", r, b, err)
			}
		}
		for i, v := range model.Variables() {
			if v.Value().Device() != gpu {
				t.Fatalf("%s moved to %s", v.Name(), v.Value().Device().Name())
			}
			got, err := v.Value().To(device.Host())
			if err != nil {
				t.Fatal(err)
			}
			if d := ops.Amax(ops.Abs(ops.Sub(got, ref.Variables()[i].Value()))).Float(); d > 1e-5 {
				t.Errorf("rank %d of %d, buckets of %d bytes, %T: %s differs from one CPU process's by %g", r, n, opts.BucketBytes, c.opt(), v.Name(), d)
			}
		}
	}
	if err := comm.Barrier(); err != nil {
		t.Fatal(err)
	}
}
