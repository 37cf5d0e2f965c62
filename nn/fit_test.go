package nn

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

func TestFitTrainsCheckpointsAndResumes(t *testing.T) {
	dir := t.TempDir()
	rng := tensor.NewRNG(4)
	x := tensor.RandNormal(rng, tensor.Float32, 64, 3)
	y := ops.Cast(ops.Gt(ops.Sum(x, 1), tensor.Scalar(float32(0))), tensor.Int32) // a linearly separable label
	ds, err := data.FromSlices(x, y)
	if err != nil {
		t.Fatal(err)
	}
	ds = ds.Shuffle(64, 1, true).Batch(16, false)
	build := func() (*Sequential, *Adam, Step) {
		m := NewSequential(NewDense("d", tensor.NewRNG(1), 3, 2, DenseOpts{}))
		opt := NewAdam(Constant(0.05))
		return m, opt, func(b data.Element) (float64, int, error) {
			tp := tape.New()
			loss := SparseSoftmaxCrossEntropy(m.Forward(b[0]), b[1])
			vars := m.Variables()
			return loss.Float(), b[0].Dim(0), opt.Apply(vars, tp.Gradient(loss, Values(vars)...))
		}
	}
	m, opt, step := build()
	var bar bytes.Buffer
	h, err := Fit(context.Background(), ds, AllVariables(m), opt, step, FitConfig{Epochs: 2, Dir: dir, Progress: &bar, StepsPerEpoch: 4})
	if err != nil {
		t.Fatal(err)
	}
	if len(h.EpochLoss) != 2 || h.Steps != 8 || !(h.EpochLoss[1] < h.EpochLoss[0]) {
		t.Errorf("history %+v", h)
	}
	if !strings.Contains(bar.String(), "epoch 2/2") || !strings.Contains(bar.String(), "examples/s") {
		t.Errorf("progress output %q", bar.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "checkpoint.safetensors")); err != nil {
		t.Error(err)
	}
	if logs, _ := filepath.Glob(filepath.Join(dir, "logs", "events.out.tfevents.*")); len(logs) != 1 {
		t.Errorf("event files %v", logs)
	}
	// A new process: fresh model and optimizer, same directory, more epochs.
	m2, opt2, step2 := build()
	h2, err := Fit(context.Background(), ds, AllVariables(m2), opt2, step2, FitConfig{Epochs: 4, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if h2.FirstEpoch != 2 || len(h2.EpochLoss) != 2 || h2.Steps != 16 || opt2.Steps() != 16 {
		t.Errorf("resumed history %+v, optimizer steps %d", h2, opt2.Steps())
	}
	if !(h2.EpochLoss[0] <= h.EpochLoss[1]*1.05) {
		t.Errorf("resumed from scratch? loss %v after %v", h2.EpochLoss[0], h.EpochLoss[1])
	}
}
