package nn_test

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/collective/mpi"
	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/mpitest"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// pipeModel is a float64 MLP of five layers (a Flatten among them, which
// holds no variables), the same on every call.
func pipeModel() *nn.Sequential {
	rng := tensor.NewRNG(5)
	f64 := func(act func(*tensor.Tensor) *tensor.Tensor) nn.DenseOpts {
		return nn.DenseOpts{DType: tensor.Float64, Activation: act}
	}
	return nn.NewSequential(
		nn.Flatten{},
		nn.NewDense("d1", rng, 6, 16, f64(ops.Tanh)),
		nn.NewDense("d2", rng, 16, 12, f64(ops.Relu)),
		nn.NewDense("d3", rng, 12, 8, f64(ops.Tanh)),
		nn.NewDense("logits", rng, 8, 3, f64(nil)))
}

// pipeBatch is step i's batch of n examples [n 2 3] and labels.
func pipeBatch(i, n int) data.Element {
	rng := tensor.NewRNG(uint64(100 + i))
	x := tensor.RandNormal(rng, tensor.Float64, n, 2, 3)
	y := ops.Cast(tensor.RandUniform(rng, tensor.Float64, 0, 3, n), tensor.Int32)
	return data.Element{x, y}
}

// runPipeline trains size stages of pipeModel over loopback rendezvous,
// every rank in a goroutine, for steps batches of n; it returns each
// step's loss per rank and each rank's model.
func runPipeline(t *testing.T, size, steps, n int, o nn.PipelineOptions) ([][]float64, []*nn.Sequential) {
	t.Helper()
	losses := make([][]float64, size)
	models := make([]*nn.Sequential, size)
	var wg sync.WaitGroup
	errs := make([]error, size)
	for r, tr := range collective.Loopback(size) {
		rdv, err := collective.NewRendezvous(tr)
		if err != nil {
			t.Fatal(err)
		}
		defer rdv.Close()
		rdv.SetTimeout(20 * time.Second) // a failing rank's neighbours give up
		models[r] = pipeModel()
		step, err := nn.PipelineTrainStep(models[r], nn.SparseSoftmaxCrossEntropy, nn.NewAdam(nn.Constant(0.01)), rdv, o)
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() {
			for i := range steps {
				l, got, err := step(pipeBatch(i, n))
				if err == nil && got != n {
					err = fmt.Errorf("step %d: %d examples, want %d", i, got, n)
				}
				if err != nil {
					errs[r] = err
					return
				}
				losses[r] = append(losses[r], l)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	return losses, models
}

// A pipeline of 2 and 3 stages, GPipe and 1F1B, with micro-batches that
// divide the batch and ones that do not (and more micro-batches than
// examples), computes what TrainStep computes on the whole batches: the
// same loss at every step, on every rank, and the same variables after.
func TestPipelineMatchesOneProcess(t *testing.T) {
	const steps, n = 4, 10
	ref := pipeModel()
	refStep := nn.TrainStep(ref, nn.SparseSoftmaxCrossEntropy, nn.NewAdam(nn.Constant(0.01)))
	var want []float64
	for i := range steps {
		l, _, err := refStep(pipeBatch(i, n))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, l)
	}
	for _, c := range []struct {
		size int
		o    nn.PipelineOptions
	}{
		{2, nn.PipelineOptions{MicroBatches: 5}},
		{2, nn.PipelineOptions{MicroBatches: 3, Schedule: nn.OneFOneB}},
		{3, nn.PipelineOptions{MicroBatches: 4, Schedule: nn.OneFOneB}},
		{3, nn.PipelineOptions{MicroBatches: 1}},
		{3, nn.PipelineOptions{MicroBatches: 16, Bounds: []int{1, 4}}},
		{5, nn.PipelineOptions{}},
	} {
		t.Run(fmt.Sprintf("%d stages %+v", c.size, c.o), func(t *testing.T) {
			losses, models := runPipeline(t, c.size, steps, n, c.o)
			for r := range c.size {
				for i, l := range losses[r] {
					if math.Abs(l-want[i]) > 1e-12 {
						t.Errorf("rank %d, step %d: loss %.15g, one process %.15g", r, i, l, want[i])
					}
				}
				stage, err := nn.PipelineStage(models[r], c.size, r, c.o)
				if err != nil {
					t.Fatal(err)
				}
				refStage, _ := nn.PipelineStage(ref, c.size, r, c.o)
				for j, v := range stage.Variables() {
					w := refStage.Variables()[j]
					if d := ops.Amax(ops.Abs(ops.Sub(v.Value(), w.Value()))).Float(); d > 1e-12 {
						t.Errorf("rank %d: %s differs from one process's by %g", r, v.Name(), d)
					}
				}
			}
		})
	}
}

// The default bounds balance the stages' variables; bad bounds and sizes
// are errors naming them.
func TestPipelineStages(t *testing.T) {
	m := pipeModel() // variables: 0, 112, 204, 104, 27
	for _, c := range []struct {
		size int
		want []int // layers per stage
	}{{1, []int{5}}, {2, []int{3, 2}}, {3, []int{2, 1, 2}}, {5, []int{1, 1, 1, 1, 1}}} {
		var got []int
		for s := range c.size {
			st, err := nn.PipelineStage(m, c.size, s, nn.PipelineOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, len(st.Layers))
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%d stages: layers %v, want %v", c.size, got, c.want)
		}
	}
	for _, c := range []struct {
		size   int
		bounds []int
		want   string
	}{
		{6, nil, "every stage needs a layer"},
		{2, []int{0}, "stage 0 would hold no layer"},
		{3, []int{2, 2}, "stage 1 would hold no layer"},
		{3, []int{2}, "1 bounds, want 2"},
		{2, []int{5}, "stage 1 would hold no layer"},
	} {
		_, err := nn.PipelineStage(m, c.size, 0, nn.PipelineOptions{Bounds: c.bounds})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%d stages, bounds %v: %v, want %q", c.size, c.bounds, err, c.want)
		}
	}
}

// A stage whose neighbour never sends fails after the rendezvous's
// timeout, naming the step, the micro-batch and the rank it waited for;
// a LossScaleOptimizer, which the stages could not agree on, is refused.
func TestPipelineNeighbourGone(t *testing.T) {
	trs := collective.Loopback(2)
	rdv, err := collective.NewRendezvous(trs[1])
	if err != nil {
		t.Fatal(err)
	}
	defer rdv.Close()
	rdv.SetTimeout(50 * time.Millisecond)
	step, err := nn.PipelineTrainStep(pipeModel(), nn.SparseSoftmaxCrossEntropy, nn.NewAdam(nn.Constant(0.01)), rdv, nn.PipelineOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = step(pipeBatch(0, 8)) // rank 0 never runs
	if !errors.Is(err, collective.ErrTimeout) || !strings.Contains(err.Error(), "step 0/micro-batch 0/activations") || !strings.Contains(err.Error(), "rank 0") {
		t.Errorf("%v", err)
	}
	_, err = nn.PipelineTrainStep(pipeModel(), nn.SparseSoftmaxCrossEntropy, nn.NewLossScaleOptimizer(nn.NewAdam(nn.Constant(0.01))), rdv, nn.PipelineOptions{})
	if err == nil || !strings.Contains(err.Error(), "LossScaleOptimizer") {
		t.Errorf("a LossScaleOptimizer: %v", err)
	}
}

// A pipeline over 2 and 3 processes under mpirun (a stage each, posts
// over MPI) computes what one process computes, step by step, in GPipe
// and 1F1B.
func TestPipelineUnderMPIRun(t *testing.T) {
	for _, np := range []int{2, 3} {
		t.Run(fmt.Sprint(np), func(t *testing.T) { mpitest.Run(t, np, "TestRankPipeline") })
	}
}

// TestRankPipeline is one rank of TestPipelineUnderMPIRun.
func TestRankPipeline(t *testing.T) {
	if !mpitest.Rank() {
		t.Skip("runs as a rank under TestPipelineUnderMPIRun's mpirun")
	}
	comm, err := mpi.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer comm.Close()
	rdv, err := comm.Rendezvous()
	if err != nil {
		t.Fatal(err)
	}
	defer rdv.Close()
	const steps, n = 3, 9
	for _, sched := range []nn.PipelineSchedule{nn.GPipe, nn.OneFOneB} {
		ref, model := pipeModel(), pipeModel()
		refStep := nn.TrainStep(ref, nn.SparseSoftmaxCrossEntropy, nn.NewAdam(nn.Constant(0.01)))
		step, err := nn.PipelineTrainStep(model, nn.SparseSoftmaxCrossEntropy, nn.NewAdam(nn.Constant(0.01)), rdv,
			nn.PipelineOptions{MicroBatches: 4, Schedule: sched})
		if err != nil {
			t.Fatal(err)
		}
		for i := range steps {
			want, _, err := refStep(pipeBatch(i, n))
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := step(pipeBatch(i, n))
			if err != nil {
				t.Fatalf("rank %d, %v, step %d: %v", comm.Rank(), sched, i, err)
			}
			if math.Abs(got-want) > 1e-12 {
				t.Errorf("rank %d, %v, step %d: loss %.15g, one process %.15g", comm.Rank(), sched, i, got, want)
			}
		}
	}
	if err := comm.Barrier(); err != nil { // every rank is done receiving
		t.Fatal(err)
	}
}

// A pipeline checkpoint saved by 2 stages (every rank its own file)
// resumes in one process and on 3 stages: the next step's loss is the
// one training without a break gives.
func TestPipelineCheckpointChangesLayout(t *testing.T) {
	const n = 8
	path := filepath.Join(t.TempDir(), "ckpt")
	adam := func() nn.Optimizer { return nn.NewAdam(nn.Constant(0.01)) }
	ref := pipeModel()
	refStep := nn.TrainStep(ref, nn.SparseSoftmaxCrossEntropy, adam())
	var want float64
	for i := range 3 {
		l, _, err := refStep(pipeBatch(i, n))
		if err != nil {
			t.Fatal(err)
		}
		want = l
	}
	// pipelined runs size stages from the checkpoint (none: from the
	// start) for the steps from first to last, saving at the end when
	// save is set, and returns the last step's loss.
	pipelined := func(size, first, last int, restore, save bool) float64 {
		var wg sync.WaitGroup
		losses, errs := make([]float64, size), make([]error, size)
		for r, tr := range collective.Loopback(size) {
			rdv, err := collective.NewRendezvous(tr)
			if err != nil {
				t.Fatal(err)
			}
			defer rdv.Close()
			rdv.SetTimeout(20 * time.Second)
			model, opt := pipeModel(), adam()
			stage, err := nn.PipelineStage(model, size, r, nn.PipelineOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if restore {
				if _, err := nn.RestorePipelineCheckpoint(path, stage.Variables(), opt); err != nil {
					t.Fatal(err)
				}
			}
			step, err := nn.PipelineTrainStep(model, nn.SparseSoftmaxCrossEntropy, opt, rdv, nn.PipelineOptions{MicroBatches: 3})
			if err != nil {
				t.Fatal(err)
			}
			wg.Go(func() {
				for i := first; i <= last; i++ {
					if losses[r], _, errs[r] = step(pipeBatch(i, n)); errs[r] != nil {
						return
					}
				}
				if save {
					errs[r] = nn.SavePipelineCheckpoint(path, r, size, stage.Variables(), opt, nil)
				}
			})
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			t.Fatal(err)
		}
		return losses[size-1]
	}
	pipelined(2, 0, 1, false, true)
	if got := pipelined(3, 2, 2, true, false); math.Abs(got-want) > 1e-12 {
		t.Errorf("resumed on 3 stages: loss %.15g, without a break %.15g", got, want)
	}
	whole, opt := pipeModel(), adam()
	if _, err := nn.RestorePipelineCheckpoint(path, whole.Variables(), opt); err != nil {
		t.Fatal(err)
	}
	if got, _, err := nn.TrainStep(whole, nn.SparseSoftmaxCrossEntropy, opt)(pipeBatch(2, n)); err != nil || math.Abs(got-want) > 1e-12 {
		t.Errorf("resumed in one process: loss %.15g (%v), without a break %.15g", got, err, want)
	}
	// A second layout's files beside the first's: which to read is not
	// clear, so it is an error.
	if err := nn.SavePipelineCheckpoint(path, 0, 3, whole.Variables(), nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := nn.RestorePipelineCheckpoint(path, whole.Variables(), nil); err == nil || !strings.Contains(err.Error(), "stage files of") {
		t.Errorf("two layouts: %v", err)
	}
}

// A failed stage posts the dead flag for what it owed, so that the
// stages waiting on it fail at once, not after their own timeouts: with
// the last of three stages gone, the middle one times out and the first,
// whose timeout is far longer, fails right after it, naming the middle
// stage.
func TestPipelineFailureCascades(t *testing.T) {
	trs := collective.Loopback(3)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for r, timeout := range []time.Duration{time.Minute, 100 * time.Millisecond} {
		rdv, err := collective.NewRendezvous(trs[r])
		if err != nil {
			t.Fatal(err)
		}
		defer rdv.Close()
		rdv.SetTimeout(timeout)
		step, err := nn.PipelineTrainStep(pipeModel(), nn.SparseSoftmaxCrossEntropy, nn.NewAdam(nn.Constant(0.01)), rdv, nn.PipelineOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wg.Go(func() { _, _, errs[r] = step(pipeBatch(0, 8)) })
	}
	start := time.Now()
	wg.Wait()
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the stages failed after %v", d)
	}
	if !errors.Is(errs[1], collective.ErrTimeout) || !strings.Contains(errs[1].Error(), "rank 2") {
		t.Errorf("stage 1: %v", errs[1])
	}
	if errs[0] == nil || !strings.Contains(errs[0].Error(), "came dead") || !strings.Contains(errs[0].Error(), "rank 1") {
		t.Errorf("stage 0: %v", errs[0])
	}
}

// A pipeline whose stages live on two devices of one process (the second
// half's layers built inside device.With) trains as TrainStep of the same
// model on one device does, loss for loss.
func TestLocalPipelineOnTwoDevices(t *testing.T) {
	build := func(second device.Device) *nn.Sequential {
		rng := tensor.NewRNG(5)
		f64 := func(act func(*tensor.Tensor) *tensor.Tensor) nn.DenseOpts {
			return nn.DenseOpts{DType: tensor.Float64, Activation: act}
		}
		first := []nn.Module{nn.Flatten{}, nn.NewDense("d1", rng, 6, 16, f64(ops.Tanh)), nn.NewDense("d2", rng, 16, 12, f64(ops.Relu))}
		var rest []nn.Module
		if err := device.With(second, func() {
			rest = []nn.Module{nn.NewDense("d3", rng, 12, 8, f64(ops.Tanh)), nn.NewDense("logits", rng, 8, 3, f64(nil))}
		}); err != nil {
			t.Fatal(err)
		}
		return nn.NewSequential(append(first, rest...)...)
	}
	ref := build(device.Host())
	refStep := nn.TrainStep(ref, nn.SparseSoftmaxCrossEntropy, nn.NewAdam(nn.Constant(0.01)))
	model := build(device.SecondCPU())
	if d := model.Layers[4].Variables()[0].Value().Device(); d != device.SecondCPU() {
		t.Fatalf("the last layer is on %s", d.Name())
	}
	p, err := nn.NewLocalPipeline(model, nn.SparseSoftmaxCrossEntropy, func() nn.Optimizer { return nn.NewAdam(nn.Constant(0.01)) }, 2,
		nn.PipelineOptions{Bounds: []int{3}, MicroBatches: 3, Schedule: nn.OneFOneB})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for i := range 4 {
		want, _, err := refStep(pipeBatch(i, 10))
		if err != nil {
			t.Fatal(err)
		}
		got, n, err := p.Step(pipeBatch(i, 10))
		if err != nil || n != 10 || math.Abs(got-want) > 1e-12 {
			t.Fatalf("step %d: loss %.15g (%d examples, %v), one device %.15g", i, got, n, err, want)
		}
	}
}
