package cuda

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// A model trained on the GPU checkpoints (Fit's Dir and SaveCheckpoint
// read its variables from the device; they panicked), and the checkpoint
// restores into the same model on the CPU, whose predictions agree; a
// dataset built from tensors on the GPU (made while the GPU is the
// default device) holds host copies, and caches and unbatches elements
// moved to the GPU, and a parse spec's default made on the GPU serves
// (FromSlices, Batch, Cache, Unbatch and Parse read host bytes and
// panicked); a device prints as its name.
func TestTrainOnGPUCheckpointOnCPU(t *testing.T) {
	d := testGPU(t)
	if got := fmt.Sprint(d, " ", device.Host()); got != "gpu:0 cpu:0" {
		t.Errorf("devices print as %q", got)
	}
	model := func() *nn.Sequential {
		return nn.NewSequential(nn.NewConv2D("c", tensor.NewRNG(1), 3, 3, 1, 4, nn.Conv2DOpts{}), nn.NewBatchNorm("bn", 4, tensor.Float32),
			nn.Flatten{}, nn.NewDense("d", tensor.NewRNG(2), 4*6*6, 3, nn.DenseOpts{}))
	}
	restore := device.SetDefault(d)
	x := tensor.RandNormal(tensor.NewRNG(3), tensor.Float32, 8, 8, 8, 1) // on the GPU
	labels := tensor.FromSlice([]int32{0, 1, 2, 0, 1, 2, 0, 1})
	ds, err := data.FromSlices(x, labels)
	if err != nil {
		t.Fatal(err)
	}
	toGPU := func(e data.Element) (data.Element, error) {
		out := make(data.Element, len(e))
		for i, c := range e {
			if c.Device() != device.Host() {
				return nil, fmt.Errorf("component %d of a batch is on %s", i, c.Device())
			}
			var err error
			if out[i], err = c.To(d); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	rows := 0
	for _, err := range ds.Batch(4, false).Map(toGPU).Unbatch().All(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		rows++
	}
	if rows != 8 {
		t.Errorf("batches moved to the GPU unbatch into %d rows, want 8", rows)
	}
	p, err := data.NewParser(data.ParseSpec{"w": data.FixedLen{Shape: []int{2}, DType: tensor.Float32, Default: tensor.FromSlice([]float32{3, 4})}})
	if err != nil {
		t.Fatal(err)
	}
	empty := (&data.Example{}).Marshal()
	if parsed, err := p.Parse([][]byte{empty}); err != nil || fmt.Sprint(tensor.ToSlice[float32](parsed.Dense["w"])) != "[3 4]" {
		t.Errorf("a record without the feature, its default made on the GPU: %v %v", parsed, err)
	}
	g := model()
	opt := nn.NewAdam(nn.Constant(0.01))
	dir := t.TempDir()
	train := ds.Batch(4, false).Map(toGPU).Cache()
	if _, err := nn.Fit(context.Background(), train, nn.AllVariables(g), opt, nn.TrainStep(g, nn.SparseSoftmaxCrossEntropy, opt), nn.FitConfig{Epochs: 2, Dir: dir}); err != nil {
		t.Fatal(err)
	}
	nn.SetTraining(g, false)
	want, err := g.Forward(x).To(device.Host())
	if err != nil {
		t.Fatal(err)
	}
	restore()
	h := model()
	if _, err := nn.RestoreCheckpoint(filepath.Join(dir, "checkpoint.safetensors"), nn.AllVariables(h), nn.NewAdam(nn.Constant(0.01))); err != nil {
		t.Fatal(err)
	}
	nn.SetTraining(h, false)
	hx, err := x.To(device.Host())
	if err != nil {
		t.Fatal(err)
	}
	agreeWithin(t, "the restored model's predictions", onGPU(t, d, h.Forward(hx)), want, 1e-5)
	if diff := ops.Amax(ops.Abs(ops.Sub(h.Variables()[0].Value(), onHost(t, g.Variables()[0].Value())))).Float(); diff != 0 {
		t.Errorf("the restored filter differs from the trained one by %g", diff)
	}
}

// A Function with an unknown dim whose graph holds a constant made on the
// GPU from that dim (1/n) generalizes from its traces, as on the CPU: the
// constants of two traces are compared on the host (it panicked reading
// the GPU's bytes).
func TestSignatureGeneralizesGPUConstants(t *testing.T) {
	d := testGPU(t)
	defer device.SetDefault(d)()
	mean := func(x *tensor.Tensor) *tensor.Tensor {
		return ops.Div(ops.Sum(x), ops.ScalarLike(x, float64(x.Dim(0))))
	}
	f := trace.NewFunctionWithSignature(func(in []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{mean(in[0])} },
		trace.InputSpec{Shape: []int{-1, 3}, DType: tensor.Float32})
	for _, n := range []int{2, 3, 4, 5, 7, 11} {
		x := tensor.RandNormal(tensor.NewRNG(uint64(n)), tensor.Float32, n, 3)
		got, err := f.Call(x)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := got[0].Float(), mean(x).Float(); g != w {
			t.Errorf("n = %d: %v, want %v", n, g, w)
		}
	}
	if f.Traces() > 3 {
		t.Errorf("%d traces for six sizes, want at most 3 (the rest built from the rules)", f.Traces())
	}
}

// Fit resumes a run on the GPU from its checkpoint (RestoreCheckpoint put
// the file's host tensors into the GPU's variables and panicked): a run
// of two epochs, then one of three from its Dir, ends where an
// uninterrupted run of three does, the optimizer's slots and a float16
// policy's loss scale restored on the device too.
func TestFitResumesOnGPU(t *testing.T) {
	d := testGPU(t)
	x := tensor.RandNormal(tensor.NewRNG(3), tensor.Float32, 16, 6, 6, 1)
	ds, err := data.FromSlices(x, tensor.FromSlice([]int32{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0}))
	if err != nil {
		t.Fatal(err)
	}
	train := ds.Batch(8, false).To(d)
	defer device.SetDefault(d)()
	run := func(dir string, epochs int) []float32 {
		m := nn.NewSequential(nn.NewConv2D("c", tensor.NewRNG(1), 3, 3, 1, 4, nn.Conv2DOpts{}), nn.Flatten{}, nn.NewDense("d", tensor.NewRNG(2), 4*4*4, 3, nn.DenseOpts{}))
		m.Policy = nn.MixedFloat16
		opt := nn.NewLossScaleOptimizer(nn.NewAdam(nn.Constant(0.01)))
		if _, err := nn.Fit(context.Background(), train, nn.AllVariables(m), opt, nn.TrainStep(m, nn.SparseSoftmaxCrossEntropy, opt), nn.FitConfig{Epochs: epochs, Dir: dir}); err != nil {
			t.Fatal(err)
		}
		return tensor.ToSlice[float32](m.Variables()[0].Value())
	}
	want := run(t.TempDir(), 3)
	dir := t.TempDir()
	run(dir, 2)
	if got := run(dir, 3); !slices.Equal(got, want) {
		t.Errorf("resumed for the third epoch: filter %v, want the uninterrupted run's %v", got, want)
	}
}

// Batches copied to the GPU by a prefetching pipeline (Prefetch after To:
// the copies on the pipeline's goroutine) while the train step records
// the step as a CUDA graph: the copies wait for the capture's end (they
// failed, a wait for the stream while it captured), and training goes as
// without the prefetch.
func TestPrefetchedCopiesWaitForACapture(t *testing.T) {
	d := testGPU(t)
	x := tensor.RandNormal(tensor.NewRNG(3), tensor.Float32, 64, 8, 8, 1)
	ds, err := data.FromSlices(x, tensor.Zeros(tensor.Int32, 64))
	if err != nil {
		t.Fatal(err)
	}
	defer device.SetDefault(d)()
	var losses [][]float64
	for _, prefetch := range []bool{false, true} {
		m := nn.NewSequential(nn.NewConv2D("c", tensor.NewRNG(1), 3, 3, 1, 4, nn.Conv2DOpts{}), nn.MaxPool2D{}, nn.Flatten{},
			nn.NewDense("d", tensor.NewRNG(2), 4*3*3, 3, nn.DenseOpts{}))
		opt := nn.NewAdam(nn.Constant(0.01))
		train := ds.Batch(8, false).To(d)
		if prefetch {
			train = train.Prefetch(2)
		}
		h, err := nn.Fit(context.Background(), train, nn.AllVariables(m), opt, nn.RecordedTrainStep(m, nn.SparseSoftmaxCrossEntropy, opt), nn.FitConfig{Epochs: 3})
		if err != nil {
			t.Fatalf("prefetch %v: %v", prefetch, err)
		}
		losses = append(losses, h.StepLoss)
	}
	if !slices.Equal(losses[0], losses[1]) {
		t.Errorf("losses with a prefetch %v, without %v", losses[1], losses[0])
	}
}
