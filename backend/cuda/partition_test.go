package cuda

import (
	"math"
	"slices"
	"testing"
	"time"

	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/collective/mpi"
	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/control/graph"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/mpitest"
	"github.com/eagerflow/eagerflow/internal/ranktest"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// A traced function whose loop body runs on the GPU (a placement scope)
// and whose counter and sums stay on the host cuts into a host partition
// and a GPU partition, which run at once and give the eager values and
// gradient, call after call (with no iterations too).
func TestPartitionedHostAndGPU(t *testing.T) {
	d := testGPU(t)
	fn := func(a []*tensor.Tensor) []*tensor.Tensor {
		tp := tape.New()
		tp.Watch(a[0])
		l := control.While(func(v []*tensor.Tensor) *tensor.Tensor { return ops.Lt(v[0], a[1]) }, func(v []*tensor.Tensor) []*tensor.Tensor {
			var h *tensor.Tensor
			if err := device.With(d, func() { h = ops.Tanh(ops.Mul(v[1], tensor.Scalar(1.5))) }); err != nil {
				panic(err)
			}
			back, err := h.To(device.Host())
			if err != nil {
				panic(err)
			}
			return []*tensor.Tensor{ops.Add(v[0], tensor.Scalar(int32(1))), ops.Add(back, v[1])}
		}, []*tensor.Tensor{tensor.Scalar(int32(0)), a[0]})
		loss := ops.Sum(ops.Square(l[1]))
		return []*tensor.Tensor{loss, tp.Gradient(loss, a[0])[0]}
	}
	f := trace.NewFunction(fn)
	for _, k := range []int32{3, 0, 2} {
		args := []*tensor.Tensor{tensor.FromSlice([]float64{0.2, -0.4}), tensor.Scalar(k)}
		if _, err := f.Call(args...); err != nil {
			t.Fatal(err)
		}
		p, err := graph.Partition(f.Graph(args...))
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Parts) != 2 || p.Devices[1] != device.Device(d) && p.Devices[0] != device.Device(d) {
			t.Fatalf("partitions on %v", p.Devices)
		}
		got, err := p.Execute(args...)
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range fn(args) {
			if diff := ops.Amax(ops.Abs(ops.Sub(onHost(t, got[i]), w))).Float(); diff > 1e-12 {
				t.Errorf("%d iterations, result %d: partitioned %v, eager %v", k, i, got[i], w)
			}
		}
	}
}

// A function placed on two ranks, rank 1's part on its GPU: a device on
// gpu:0 opened as "rank:1/gpu:0" (OpenAs) and assigned to rank 1 stands
// for it. Each rank (a goroutine over Loopback) traces the function and
// runs its own partitions, the GPU loop body on rank 1; rank 1 gets the
// results on its GPU, rank 0 nil, equal to the eager values and gradient.
func TestPartitionedOverRanksOnGPU(t *testing.T) {
	far, fn, args := rankGPUFunction(t)
	if again, err := OpenAs(0, "rank:1/gpu:0"); err != nil || again != far {
		t.Fatalf("OpenAs again: %v, %v", again, err)
	}
	fs := []*trace.Function{trace.NewFunction(fn), trace.NewFunction(fn)}
	for _, f := range fs { // traced rank by rank, then run at once
		if _, err := f.Call(args...); err != nil {
			t.Fatal(err)
		}
	}
	results := make([][]*tensor.Tensor, 2)
	if err := ranktest.Run(2, 30*time.Second, func(r int, rdv *collective.Rendezvous) (err error) {
		fs[r].Partitions = &graph.PartitionOptions{RankOf: collective.RankOf, Rank: r, Exchange: rdv}
		results[r], err = fs[r].Call(args...)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	p, err := graph.PartitionWith(fs[0].Graph(args...), *fs[0].Partitions)
	if err != nil || len(p.Ranks) != 2 || p.Ranks[slices.Index(p.Devices, device.Device(far))] != 1 || !slices.Contains(p.Ranks, 0) {
		t.Fatalf("partitions of ranks %v (%v), want the host's on rank 0 and the GPU's on rank 1", p.Ranks, err)
	}
	for r, out := range results {
		checkRankGPUResults(t, r, far, out, fn(args))
	}
	if _, err := OpenAs(0, "gpu:1"); err == nil {
		t.Error("OpenAs(0, \"gpu:1\") succeeded")
	}
}

// The same over an MPI job of two processes, each with its own (emulated)
// GPU, rank 1's part on its GPU under the name "rank:1/gpu:0".
func TestPartitionedOnGPUUnderMPIRun(t *testing.T) { mpitest.Run(t, 2, "TestRankPartitionedOnGPU") }

func TestRankPartitionedOnGPU(t *testing.T) {
	if !mpitest.Rank() {
		t.Skip("runs as a rank under TestPartitionedOnGPUUnderMPIRun's mpirun")
	}
	c, err := mpi.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	rdv, err := c.Rendezvous()
	if err != nil {
		t.Fatal(err)
	}
	defer rdv.Close()
	rdv.SetTimeout(time.Minute)
	far, fn, args := rankGPUFunction(t)
	f := trace.NewFunction(fn)
	f.Partitions = &graph.PartitionOptions{RankOf: collective.RankOf, Rank: c.Rank(), Exchange: rdv}
	for range 2 { // the call that traces, and one that runs the graph
		out, err := f.Call(args...)
		if err != nil {
			t.Fatalf("rank %d: %v", c.Rank(), err)
		}
		checkRankGPUResults(t, c.Rank(), far, out, fn(args))
	}
}

// rankGPUFunction returns a device on gpu:0 standing for rank 1's GPU
// ("rank:1/gpu:0", assigned to rank 1) and a function whose loop body runs
// there, its counter on the host (rank 0): the loss and its gradient, and
// its arguments.
func rankGPUFunction(t *testing.T) (*Device, func(a []*tensor.Tensor) []*tensor.Tensor, []*tensor.Tensor) {
	t.Helper()
	if _, err := Open(0); err != nil {
		t.Fatal(err)
	}
	far, err := OpenAs(0, "rank:1/gpu:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := collective.AssignRank(far, 1); err != nil {
		t.Fatal(err)
	}
	fn := func(a []*tensor.Tensor) []*tensor.Tensor {
		x, err := a[0].To(far)
		if err != nil {
			panic(err)
		}
		tp := tape.New()
		tp.Watch(x)
		l := control.While(func(v []*tensor.Tensor) *tensor.Tensor { return ops.Lt(v[0], a[1]) }, func(v []*tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{ops.Add(v[0], tensor.Scalar(int32(1))), ops.Tanh(ops.Mul(v[1], tensor.Scalar(1.5)))}
		}, []*tensor.Tensor{tensor.Scalar(int32(0)), x})
		loss := ops.Sum(ops.Square(l[1]))
		return []*tensor.Tensor{loss, tp.Gradient(loss, x)[0]}
	}
	return far, fn, []*tensor.Tensor{tensor.FromSlice([]float64{0.2, -0.4}), tensor.Scalar(int32(3))}
}

// checkRankGPUResults checks rank r's results of rankGPUFunction's
// function against want: on far, equal, for rank 1; nil for rank 0.
func checkRankGPUResults(t *testing.T, r int, far *Device, out, want []*tensor.Tensor) {
	t.Helper()
	for i, w := range want {
		got := out[i]
		if r == 0 {
			if got != nil {
				t.Errorf("rank 0, result %d: %v, want nil (rank 1's)", i, got)
			}
			continue
		}
		if got == nil || got.Device() != device.Device(far) {
			t.Fatalf("rank 1, result %d: %v, want it on %s", i, got, far.Name())
		}
		if diff := ops.Amax(ops.Abs(ops.Sub(onHost(t, got), onHost(t, w)))).Float(); diff > 1e-12 {
			t.Errorf("rank 1, result %d: over ranks %v, eager %v", i, got, w)
		}
	}
}

// A pipeline of two stages in one process, the second on the GPU (its
// layers built inside device.With), trains as TrainStep of the same model
// on the host does.
func TestLocalPipelineHostAndGPU(t *testing.T) {
	d := testGPU(t)
	build := func(second device.Device) *nn.Sequential {
		rng := tensor.NewRNG(5)
		f64 := func(act func(*tensor.Tensor) *tensor.Tensor) nn.DenseOpts {
			return nn.DenseOpts{DType: tensor.Float64, Activation: act}
		}
		first := []nn.Module{nn.NewDense("d1", rng, 6, 16, f64(ops.Tanh)), nn.NewDense("d2", rng, 16, 12, f64(ops.Relu))}
		var rest []nn.Module
		if err := device.With(second, func() {
			rest = []nn.Module{nn.NewDense("d3", rng, 12, 8, f64(ops.Tanh)), nn.NewDense("logits", rng, 8, 3, f64(nil))}
		}); err != nil {
			t.Fatal(err)
		}
		return nn.NewSequential(append(first, rest...)...)
	}
	batch := func(i int) data.Element {
		rng := tensor.NewRNG(uint64(100 + i))
		return data.Element{tensor.RandNormal(rng, tensor.Float64, 10, 6), ops.Cast(tensor.RandUniform(rng, tensor.Float64, 0, 3, 10), tensor.Int32)}
	}
	ref := build(device.Host())
	refStep := nn.TrainStep(ref, nn.SparseSoftmaxCrossEntropy, nn.NewAdam(nn.Constant(0.01)))
	p, err := nn.NewLocalPipeline(build(d), nn.SparseSoftmaxCrossEntropy, func() nn.Optimizer { return nn.NewAdam(nn.Constant(0.01)) }, 2,
		nn.PipelineOptions{Bounds: []int{2}, MicroBatches: 3, Schedule: nn.OneFOneB})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range 3 {
		want, _, err := refStep(batch(i))
		if err != nil {
			t.Fatal(err)
		}
		got, _, err := p.Step(batch(i))
		if err != nil || math.Abs(got-want) > 1e-9 {
			t.Fatalf("step %d: loss %.15g (%v), on the host %.15g", i, got, err, want)
		}
	}
}
