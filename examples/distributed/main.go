// Command distributed trains the two-spirals classifier of examples/mlp
// data-parallel over MPI: every process holds the model, reads its shard
// of each global batch, and the gradients are averaged across processes
// before every step, so that all of them end with the same model, the one
// a single process training on the whole batches would reach.
//
//	go build -o distributed ./examples/distributed
//	mpirun -np 2 ./distributed [-epochs 40]
//	mpirun -np 4 ./distributed -gpu   # one GPU per process, gradients reduced by NCCL
//	mpirun -np 2 ./distributed -traced  # the step traced, its all-reduce a node of the graph
//
// With -gpu, process r trains on GPU r modulo the GPUs of its machine
// (EAGERFLOW_CUDA_DRIVER=emulator: the emulated GPU and NCCL), and MPI
// only carries NCCL's set-up.
//
// As root in a container, Open MPI also needs
// OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 and
// --mca btl self,tcp. On a cluster: mpirun -np 8 --hostfile hosts
// ./distributed, or srun -n 8 ./distributed under Slurm (with Open MPI
// built with Slurm's PMI). Only rank 0 prints progress and the result.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/eagerflow/eagerflow/backend/cuda"
	"github.com/eagerflow/eagerflow/backend/cuda/nccl"
	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/collective/mpi"
	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/examples/internal/toydata"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

func main() {
	epochs := flag.Int("epochs", 40, "training epochs")
	gpu := flag.Bool("gpu", false, "train on a GPU per process, reducing gradients with NCCL")
	traced := flag.Bool("traced", false, "trace the step: forward, gradients and their all-reduce in one graph")
	flag.Parse()
	host, err := mpi.Open()
	if err != nil {
		fmt.Fprintln(os.Stderr, "distributed:", err, "(start it with mpirun)")
		os.Exit(1)
	}
	defer host.Close()
	var comm collective.Comm = host
	if *gpu {
		g, err := openGPU(host)
		if err != nil {
			fmt.Fprintf(os.Stderr, "distributed: rank %d: %v\n", host.Rank(), err)
			os.Exit(1)
		}
		defer g.Close()
		comm = g
	}
	var progress io.Writer = os.Stderr
	res, err := run(comm, *epochs, progress, nn.DistributedOptions{Traced: *traced})
	if err != nil {
		fmt.Fprintf(os.Stderr, "distributed: rank %d: %v\n", comm.Rank(), err)
		os.Exit(1)
	}
	if comm.Rank() == 0 {
		fmt.Printf("%d processes: final loss %.4f, validation accuracy %.1f%%\n", comm.Size(), res.loss, 100*res.accuracy)
	}
}

// openGPU opens this process's GPU (its rank modulo the GPUs it sees)
// and the NCCL communicator of the job's GPUs.
func openGPU(host collective.Comm) (*nccl.Comm, error) {
	n, err := cuda.Count()
	if err != nil {
		return nil, err
	}
	if n == 0 {
		return nil, fmt.Errorf("no GPU")
	}
	gpu, err := cuda.Open(host.Rank() % n)
	if err != nil {
		return nil, err
	}
	return nccl.Open(gpu, host)
}

type result struct{ loss, accuracy float64 }

// globalBatch is the batch the processes share: each takes
// globalBatch/Size of it.
const globalBatch = 60

func run(comm collective.Comm, epochs int, progress io.Writer, opts nn.DistributedOptions) (result, error) {
	if globalBatch%comm.Size() != 0 {
		return result{}, fmt.Errorf("%d processes do not divide the global batch of %d", comm.Size(), globalBatch)
	}
	x, y := toydata.Spirals(1200, 1) // the same data on every process (same seed)
	train, err := data.FromSlices(x, y)
	if err != nil {
		return result{}, err
	}
	vx, vy := toydata.Spirals(300, 7)
	val, err := data.FromSlices(vx, vy)
	if err != nil {
		return result{}, err
	}
	// The model lives where the communicator reduces: the host, or the
	// GPU of an NCCL communicator (the batches are moved there).
	dev := collective.DeviceOf(comm)
	defer device.SetDefault(dev)()
	rng := tensor.NewRNG(3) // rank 0's initial values are broadcast anyway
	model := nn.NewSequential(
		nn.NewDense("dense1", rng, 2, 64, nn.DenseOpts{Activation: ops.Tanh}),
		nn.NewDense("dense2", rng, 64, 64, nn.DenseOpts{Activation: ops.Tanh}),
		nn.NewDense("logits", rng, 64, 2, nn.DenseOpts{}))
	opt := nn.NewAdam(nn.Constant(0.01))
	r, n := comm.Rank(), comm.Size()
	// The same shuffle on every process (same seed), then each its shard:
	// process r takes elements r, r+n, ... of each epoch's order.
	shard := train.Shuffle(1200, 2, true).Shard(n, r).Batch(globalBatch/n, false).To(dev)
	h, err := nn.Fit(context.Background(), shard, nn.AllVariables(model), opt,
		nn.DistributedTrainStep(comm, model, nn.SparseSoftmaxCrossEntropy, opt, opts),
		nn.FitConfig{Epochs: epochs, Comm: comm, Progress: progress, StepsPerEpoch: 1200 / globalBatch,
			Validation: val.Shard(n, r).Batch(100, false).To(dev),
			Evaluate:   nn.EvalStepOf(model, nn.SparseSoftmaxCrossEntropy, map[string]nn.Metric{"accuracy": nn.Accuracy})})
	if err != nil {
		return result{}, err
	}
	last := h.Epochs[len(h.Epochs)-1]
	return result{loss: last["loss"], accuracy: last["val_accuracy"]}, nil
}
