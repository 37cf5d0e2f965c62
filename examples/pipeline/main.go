// Command pipeline trains the two-spirals classifier of examples/mlp with
// its layers split over MPI processes (pipeline parallelism): process s
// holds stage s of the model, each batch is cut into micro-batches, and
// activations go forward from process to process while gradients come
// back; every process updates its own stage's variables. The losses are
// the ones one process training the whole model would see, step by step.
//
//	go build -o pipeline ./examples/pipeline
//	mpirun -np 2 ./pipeline [-epochs 30] [-schedule 1f1b] [-microbatches 4]
//	mpirun -np 3 ./pipeline -ckpt /tmp/spirals   # each stage saves its file
//
// With -ckpt, every process saves its stage (nn.SavePipelineCheckpoint),
// then rank 0 reads all the stages' files back into the whole model in
// one process (another layout: nn.RestorePipelineCheckpoint) and reports
// its validation accuracy. As root in a container, Open MPI also needs
// OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1. Only rank 0
// prints.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/collective/mpi"
	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/examples/internal/toydata"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

func main() {
	epochs := flag.Int("epochs", 30, "training epochs")
	micro := flag.Int("microbatches", 4, "micro-batches a batch is cut into")
	schedule := flag.String("schedule", "gpipe", "gpipe, or 1f1b")
	ckpt := flag.String("ckpt", "", "save the stages here, then evaluate the whole model read back on rank 0")
	flag.Parse()
	comm, err := mpi.Open()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pipeline:", err, "(start it with mpirun)")
		os.Exit(1)
	}
	defer comm.Close()
	o := nn.PipelineOptions{MicroBatches: *micro}
	switch *schedule {
	case "gpipe":
	case "1f1b":
		o.Schedule = nn.OneFOneB
	default:
		fmt.Fprintf(os.Stderr, "pipeline: -schedule %q: gpipe or 1f1b\n", *schedule)
		os.Exit(2)
	}
	var progress io.Writer = io.Discard
	if comm.Rank() == 0 {
		progress = os.Stdout
	}
	if _, err := train(comm, *epochs, o, *ckpt, progress); err != nil {
		fmt.Fprintf(os.Stderr, "pipeline: rank %d: %v\n", comm.Rank(), err)
		os.Exit(1)
	}
}

// train runs the example on comm's processes and, with ckpt, saves the
// stages there and returns, on rank 0, the validation accuracy of the
// whole model read back from them (0 elsewhere, or without ckpt).
func train(comm *mpi.Comm, epochs int, o nn.PipelineOptions, ckpt string, progress io.Writer) (float64, error) {
	rdv, err := comm.Rendezvous()
	if err != nil {
		return 0, err
	}
	defer rdv.Close()
	model, opt := newModel(), newOptimizer()
	losses, err := run(rdv, model, opt, epochs, o, progress)
	if err != nil {
		return 0, err
	}
	fmt.Fprintf(progress, "%d stages (%v, %d micro-batches): final loss %.4f\n", rdv.Size(), o.Schedule, o.MicroBatches, losses[len(losses)-1])
	if ckpt == "" {
		return 0, comm.Barrier()
	}
	stage, err := nn.PipelineStage(model, rdv.Size(), rdv.Rank(), o)
	if err != nil {
		return 0, err
	}
	if err := nn.SavePipelineCheckpoint(ckpt, rdv.Rank(), rdv.Size(), stage.Variables(), opt, nil); err != nil {
		return 0, err
	}
	if err := comm.Barrier(); err != nil || rdv.Rank() != 0 { // every stage saved
		return 0, err
	}
	whole := newModel()
	if _, err := nn.RestorePipelineCheckpoint(ckpt, whole.Variables(), nil); err != nil {
		return 0, err
	}
	vx, vy := toydata.Spirals(300, 7)
	acc := nn.Accuracy(nn.Predict(whole, ops.Cast(vx, tensor.Float64)), vy)
	fmt.Fprintf(progress, "the stages read back into one model: validation accuracy %.1f%%\n", 100*acc)
	return acc, nil
}

// The data and the model: the same on every process (same seeds).
const batch = 60

func batches() *data.Dataset {
	x, y := toydata.Spirals(1200, 1)
	ds, err := data.FromSlices(ops.Cast(x, tensor.Float64), y)
	if err != nil {
		panic(err)
	}
	return ds.Shuffle(1200, 2, true).Batch(batch, false)
}

func newModel() *nn.Sequential {
	rng := tensor.NewRNG(3)
	f64 := func(act func(*tensor.Tensor) *tensor.Tensor) nn.DenseOpts {
		return nn.DenseOpts{DType: tensor.Float64, Activation: act}
	}
	return nn.NewSequential(
		nn.NewDense("dense1", rng, 2, 64, f64(ops.Tanh)),
		nn.NewDense("dense2", rng, 64, 64, f64(ops.Tanh)),
		nn.NewDense("dense3", rng, 64, 64, f64(ops.Tanh)),
		nn.NewDense("logits", rng, 64, 2, f64(nil)))
}

func newOptimizer() nn.Optimizer { return nn.NewAdam(nn.Constant(0.01)) }

// run trains this process's stage of model for epochs and returns the
// loss of every step (the same on every process); rdv of one process
// trains the whole model.
func run(rdv *collective.Rendezvous, model *nn.Sequential, opt nn.Optimizer, epochs int, o nn.PipelineOptions, progress io.Writer) ([]float64, error) {
	step, err := nn.PipelineTrainStep(model, nn.SparseSoftmaxCrossEntropy, opt, rdv, o)
	if err != nil {
		return nil, err
	}
	var losses []float64
	ds := batches()
	for e := range epochs {
		sum, n := 0.0, 0
		for b, err := range ds.Epoch(context.Background(), e) {
			if err != nil {
				return nil, err
			}
			l, _, err := step(b)
			if err != nil {
				return nil, err
			}
			losses = append(losses, l)
			sum, n = sum+l, n+1
		}
		if (e+1)%10 == 0 || e == 0 {
			fmt.Fprintf(progress, "epoch %d: loss %.4f\n", e+1, sum/float64(n))
		}
	}
	return losses, nil
}
