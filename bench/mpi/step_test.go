package mpi

import (
	"testing"

	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/collective/mpi"
	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/control/graph"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// BenchmarkDataParallelStep is a training step of an MLP (784-1024-1024-10:
// 1.86M parameters, 7.5 MB of float32 gradients) on a global batch of 256
// examples shared by the job's ranks. bench/mpi/run.sh runs it on 1
// process and on 2 of one core each: the ratio of their times is the
// scaling. "after" is nn.DistributedTrainStep (gradient buckets summed
// after the backward pass), "overlap" the same with Overlap (buckets sent
// while the pass runs), "traced" the step traced with its all-reduce in
// the graph (DistributedOptions.Traced), "local" nn.TrainStep on this
// rank's share without
// any exchange (the compute alone, which explains the rest). Every rank
// runs the same 20 timed steps (run it with -test.benchtime 1x); it
// reports ms/step and examples/s of the whole job.
func BenchmarkDataParallelStep(b *testing.B) {
	comm, err := mpi.Open()
	if err != nil {
		b.Skip(err)
	}
	const global, steps = 256, 20
	n := comm.Size()
	rng := tensor.NewRNG(uint64(1 + comm.Rank()))
	x := tensor.RandNormal(rng, tensor.Float32, global/n, 784)
	labels := ops.Cast(tensor.RandUniform(rng, tensor.Float32, 0, 10, global/n), tensor.Int32)
	for _, mode := range []string{"after", "overlap", "traced", "local"} {
		b.Run(mode, func(b *testing.B) {
			wrng := tensor.NewRNG(7)
			model := nn.NewSequential(
				nn.NewDense("dense1", wrng, 784, 1024, nn.DenseOpts{Activation: ops.Relu}),
				nn.NewDense("dense2", wrng, 1024, 1024, nn.DenseOpts{Activation: ops.Relu}),
				nn.NewDense("logits", wrng, 1024, 10, nn.DenseOpts{}))
			opt := &nn.SGD{LR: nn.Constant(0.01)}
			var step nn.Step
			switch mode {
			case "after":
				step = nn.DistributedTrainStep(comm, model, nn.SparseSoftmaxCrossEntropy, opt)
			case "overlap":
				step = nn.DistributedTrainStep(comm, model, nn.SparseSoftmaxCrossEntropy, opt, nn.DistributedOptions{Overlap: true})
			case "traced":
				step = nn.DistributedTrainStep(comm, model, nn.SparseSoftmaxCrossEntropy, opt, nn.DistributedOptions{Traced: true})
			case "local":
				step = nn.TrainStep(model, nn.SparseSoftmaxCrossEntropy, opt)
			}
			timeSteps(b, comm, step, data.Element{x, labels}, 3, steps, global)
		})
	}
}

// BenchmarkPipelineStep is a training step of a compute-bound MLP
// (1024-1024-1024-1024-1024-10, float32: 4.2M parameters, cut by default
// into two halves of two layers and their 2.1M parameters) on a batch of
// 2048, its layers split over the job's ranks (nn.PipelineTrainStep, 8
// micro-batches of 256):
// "gpipe" and "1f1b" the two schedules, "whole" nn.TrainStep of the whole
// model in each process alone (the one-process baseline when the job has
// one rank). bench/mpi/run.sh runs it on 1 process and on 2 of one core
// each: whole at np=1 against gpipe at np=2 is the pipeline's speed-up.
// Every rank runs the same 3 timed steps (-test.benchtime 1x); it
// reports ms/step and examples/s.
//
// The first stage computes no gradient of its input, so its first layer
// costs two products where the others cost three: cut 2/2, the stages'
// work is 5:6. "balanced/..." is the same with inputs 1536 wide, whose
// first layer then costs what a hidden layer does: the stages' work is
// 6:6 (the default cut, by parameters, is the same).
func BenchmarkPipelineStep(b *testing.B) {
	comm, err := mpi.Open()
	if err != nil {
		b.Skip(err)
	}
	rdv, err := comm.Rendezvous()
	if err != nil {
		b.Fatal(err)
	}
	defer rdv.Close()
	const batch, steps = 2048, 3
	for _, m := range []struct {
		name   string
		inputs int
	}{{"", 1024}, {"balanced/", 1536}} {
		rng := tensor.NewRNG(1)
		x := tensor.RandNormal(rng, tensor.Float32, batch, m.inputs)
		labels := ops.Cast(tensor.RandUniform(rng, tensor.Float32, 0, 10, batch), tensor.Int32)
		for _, mode := range []string{"whole", "gpipe", "1f1b"} {
			b.Run(m.name+mode, func(b *testing.B) {
				wrng := tensor.NewRNG(7)
				relu := nn.DenseOpts{Activation: ops.Relu}
				model := nn.NewSequential(
					nn.NewDense("dense1", wrng, m.inputs, 1024, relu),
					nn.NewDense("dense2", wrng, 1024, 1024, relu),
					nn.NewDense("dense3", wrng, 1024, 1024, relu),
					nn.NewDense("dense4", wrng, 1024, 1024, relu),
					nn.NewDense("logits", wrng, 1024, 10, nn.DenseOpts{}))
				opt := &nn.SGD{LR: nn.Constant(0.01)}
				step := nn.TrainStep(model, nn.SparseSoftmaxCrossEntropy, opt)
				if mode != "whole" {
					o := nn.PipelineOptions{MicroBatches: 8}
					if mode == "1f1b" {
						o.Schedule = nn.OneFOneB
					}
					if step, err = nn.PipelineTrainStep(model, nn.SparseSoftmaxCrossEntropy, opt, rdv, o); err != nil {
						b.Fatal(err)
					}
				}
				timeSteps(b, comm, step, data.Element{x, labels}, 2, steps, batch)
			})
		}
	}
}

// timeSteps runs step on batch warm times, waits for every rank, then
// times steps steps a round and reports ms/step and examples/s (a batch
// of examples for the whole job).
func timeSteps(b *testing.B, comm *mpi.Comm, step nn.Step, batch data.Element, warm, steps, examples int) {
	run := func() {
		if _, _, err := step(batch); err != nil {
			b.Fatal(err)
		}
	}
	for range warm {
		run()
	}
	if err := comm.Barrier(); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		for range steps {
			run()
		}
	}
	per := b.Elapsed().Seconds() / float64(b.N*steps)
	b.ReportMetric(per*1e3, "ms/step")
	b.ReportMetric(float64(examples)/per, "examples/s")
}

// BenchmarkPartitionedLoopRanks is BenchmarkPartitionedLoop (package
// bench) across processes: a traced loop of 100 iterations whose body
// computes on a [256] float32 on rank 0 and on rank 1 (collective.RankCPU),
// each rank running its own partition (trace.Function.Partitions), the
// values crossing through the MPI rendezvous three times an iteration
// (the predicate, the value there and back). Run on 2 processes; it
// reports ns/iteration.
func BenchmarkPartitionedLoopRanks(b *testing.B) {
	comm, err := mpi.Open()
	if err != nil {
		b.Skip(err)
	}
	if comm.Size() != 2 {
		b.Skip("needs 2 processes")
	}
	rdv, err := comm.Rendezvous()
	if err != nil {
		b.Fatal(err)
	}
	defer rdv.Close()
	const iters = 100
	x := tensor.RandUniform(tensor.NewRNG(5), tensor.Float32, 0, 1, 256)
	n := tensor.Scalar(int32(iters))
	f := trace.NewFunction(func(a []*tensor.Tensor) []*tensor.Tensor {
		l := control.While(func(v []*tensor.Tensor) *tensor.Tensor { return ops.Lt(v[0], a[1]) }, func(v []*tensor.Tensor) []*tensor.Tensor {
			there, err := ops.Tanh(v[1]).To(collective.RankCPU(1))
			if err != nil {
				panic(err)
			}
			back, err := ops.Mul(there, there).To(device.Host())
			if err != nil {
				panic(err)
			}
			return []*tensor.Tensor{ops.Add(v[0], tensor.Scalar(int32(1))), ops.Add(back, v[1])}
		}, []*tensor.Tensor{tensor.Scalar(int32(0)), a[0]})
		return []*tensor.Tensor{l[1]}
	})
	f.Partitions = &graph.PartitionOptions{RankOf: collective.RankOf, Rank: comm.Rank(), Exchange: rdv}
	call := func() {
		if _, err := f.Call(x, n); err != nil {
			b.Fatal(err)
		}
	}
	call() // the trace
	if err := comm.Barrier(); err != nil {
		b.Fatal(err)
	}
	const calls = 20
	for b.Loop() {
		for range calls {
			call()
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*calls*iters), "ns/iteration")
}
