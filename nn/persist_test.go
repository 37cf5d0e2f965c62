package nn

import (
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
	"github.com/google/go-cmp/cmp"
)

func model(seed uint64, hidden int) *Sequential {
	rng := tensor.NewRNG(seed)
	return NewSequential(
		NewDense("dense1", rng, 4, hidden, DenseOpts{Activation: ops.Relu}),
		NewBatchNorm("bn", hidden, tensor.Float32),
		NewDense("dense2", rng, hidden, 3, DenseOpts{}))
}

func trainSteps(m *Sequential, opt Optimizer, n int) {
	x := tensor.RandNormal(tensor.NewRNG(7), tensor.Float32, 8, 4)
	labels := tensor.FromSlice([]int32{0, 1, 2, 0, 1, 2, 0, 1})
	for range n {
		tp := tape.New()
		loss := SparseSoftmaxCrossEntropy(m.Forward(x), labels)
		vars := m.Variables()
		if err := opt.Apply(vars, tp.Gradient(loss, Values(vars)...)); err != nil {
			panic(err)
		}
	}
}

func TestCheckpointRoundTripIsBitwise(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ckpt.safetensors")
	m, opt := model(1, 5), NewAdam(Constant(0.01))
	trainSteps(m, opt, 3)
	if err := SaveCheckpoint(path, AllVariables(m), opt, map[string]string{"epoch": "3"}); err != nil {
		t.Fatal(err)
	}
	m2, opt2 := model(2, 5), NewAdam(Constant(0.01)) // other weights
	meta, err := RestoreCheckpoint(path, AllVariables(m2), opt2)
	if err != nil {
		t.Fatal(err)
	}
	if meta["epoch"] != "3" || opt2.Steps() != 3 {
		t.Errorf("metadata %v, steps %d", meta, opt2.Steps())
	}
	for i, v := range AllVariables(m) {
		w := AllVariables(m2)[i]
		if !cmp.Equal(tensor.ToSlice[float32](v.Value()), tensor.ToSlice[float32](w.Value())) {
			t.Errorf("%s differs after restore", v.Name())
		}
	}
	// Training on from the restored state matches training on without a break.
	trainSteps(m, opt, 2)
	trainSteps(m2, opt2, 2)
	for i, v := range m.Variables() {
		if !cmp.Equal(tensor.ToSlice[float32](v.Value()), tensor.ToSlice[float32](m2.Variables()[i].Value())) {
			t.Errorf("%s diverged after resuming", v.Name())
		}
	}
	// The file is plain safetensors: header length, JSON, data.
	raw, _ := os.ReadFile(path)
	if !strings.Contains(string(raw[8:200]), `"dtype":"F32"`) {
		t.Errorf("header %q", raw[8:200])
	}
}

type failingWriter struct {
	w    io.Writer
	left int
}

func (f *failingWriter) Write(p []byte) (int, error) {
	if len(p) > f.left {
		n, _ := f.w.Write(p[:f.left])
		f.left = 0
		return n, errors.New("disk unplugged")
	}
	f.left -= len(p)
	return f.w.Write(p)
}

func TestKilledSaveKeepsThePreviousCheckpoint(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "ckpt.safetensors")
	m := model(1, 5)
	if err := SaveCheckpoint(path, AllVariables(m), nil, nil); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	trainSteps(m, &SGD{LR: Constant(0.1)}, 1)
	err := saveCheckpoint(path, AllVariables(m), nil, nil, func(w io.Writer) io.Writer { return &failingWriter{w: w, left: 100} })
	if err == nil || !errors.Is(err, ErrCheckpoint) {
		t.Fatalf("a failing save returned %v", err)
	}
	after, _ := os.ReadFile(path)
	if !cmp.Equal(before, after) {
		t.Error("a failed save changed the last good checkpoint")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temporary files left: %v", entries)
	}
	if _, err := RestoreCheckpoint(path, AllVariables(model(3, 5)), nil); err != nil {
		t.Errorf("the previous checkpoint no longer loads: %v", err)
	}
}

func TestRestoreIntoAnotherShapeNamesTheVariable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ckpt.safetensors")
	if err := SaveCheckpoint(path, AllVariables(model(1, 5)), nil, nil); err != nil {
		t.Fatal(err)
	}
	other := model(1, 6)
	before := tensor.ToSlice[float32](other.Variables()[0].Value())
	_, err := RestoreCheckpoint(path, AllVariables(other), nil)
	if err == nil || !strings.Contains(err.Error(), `variable "dense1/kernel" is float32[4 6] in the model and float32[4 5]`) {
		t.Errorf("got %v", err)
	}
	if !cmp.Equal(before, tensor.ToSlice[float32](other.Variables()[0].Value())) {
		t.Error("a failed restore changed the model")
	}
	extra := append(AllVariables(model(1, 5)), tape.NewVariable("head/kernel", tensor.Zeros(tensor.Float32, 2)))
	if _, err := RestoreCheckpoint(path, extra, nil); err == nil || !strings.Contains(err.Error(), `no variable "head/kernel"`) {
		t.Errorf("missing variable: %v", err)
	}
	os.WriteFile(path, []byte("not a checkpoint"), 0o644)
	if _, _, err := LoadCheckpoint(path); !errors.Is(err, ErrCheckpoint) {
		t.Errorf("garbage: %v", err)
	}
}

func TestSummariesReadBack(t *testing.T) {
	dir := t.TempDir()
	s, err := NewSummaryWriter(dir)
	if err != nil {
		t.Fatal(err)
	}
	for step := range 3 {
		if err := s.Scalar("loss", int64(step), 1/float64(step+1)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Histogram("weights", 2, tensor.FromSlice([]float32{-1, 0, 0, 2})); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := data.OpenReader(s.Path(), data.ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var events []*data.Event
	for {
		rec, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		e, err := data.UnmarshalEvent(rec)
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, e)
	}
	if len(events) != 5 || events[0].FileVersion != "brain.Event:2" || !strings.HasPrefix(filepath.Base(s.Path()), "events.out.tfevents.") {
		t.Fatalf("events %+v", events)
	}
	if v := events[2].Summary[0]; v.Tag != "loss" || v.Kind != "simple_value" || v.SimpleValue != 0.5 || events[2].Step != 1 {
		t.Errorf("scalar %+v at step %d", v, events[2].Step)
	}
	if v := events[4].Summary[0]; v.Tag != "weights" || v.Kind != "histo" || math.Abs(events[4].WallTime-events[1].WallTime) > 60 {
		t.Errorf("histogram %+v", v)
	}
}
