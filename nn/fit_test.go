package nn

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

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

// scripted returns an EvalStep whose "loss" follows values, one per
// validation pass, and whose "accuracy" is 1 - loss.
func scripted(values ...float64) EvalStep {
	pass, batches := 0, 0
	return func(b data.Element) (map[string]float64, int, error) {
		v := values[min(pass, len(values)-1)]
		if batches++; batches%2 == 0 { // two validation batches per pass
			pass++
		}
		return map[string]float64{"loss": v, "accuracy": 1 - v}, b[0].Dim(0), nil
	}
}

// fitFixture is a tiny model and dataset for the Fit tests.
func fitFixture(t *testing.T) (*Sequential, *Adam, Step, *data.Dataset, *data.Dataset) {
	t.Helper()
	x := tensor.RandNormal(tensor.NewRNG(4), tensor.Float32, 32, 3)
	y := ops.Cast(ops.Gt(ops.Sum(x, 1), tensor.Scalar(0)), tensor.Int32)
	ds, err := data.FromSlices(x, y)
	if err != nil {
		t.Fatal(err)
	}
	m := NewSequential(NewDense("d", tensor.NewRNG(1), 3, 2, DenseOpts{}))
	opt := NewAdam(Constant(0.05))
	step := func(b data.Element) (float64, int, error) {
		tp := tape.New()
		loss := SparseSoftmaxCrossEntropy(m.Forward(b[0]), b[1])
		vars := m.Variables()
		return loss.Float(), b[0].Dim(0), opt.Apply(vars, tp.Gradient(loss, Values(vars)...))
	}
	return m, opt, step, ds.Batch(8, false), ds.Batch(16, false)
}

func TestFitValidationAndEarlyStopping(t *testing.T) {
	m, opt, step, train, val := fitFixture(t)
	var bestWeights []float32
	stop := &EarlyStopping{Patience: 2, RestoreBest: true}
	record := CallbackFunc(func(s *FitState) error {
		if s.Epoch == 2 { // the best epoch of the script
			bestWeights = tensor.ToSlice[float32](ops.Identity(m.Variables()[0].Value()))
		}
		return nil
	})
	var out bytes.Buffer
	h, err := Fit(context.Background(), train, AllVariables(m), opt, step, FitConfig{
		Epochs: 10, Validation: val, Evaluate: scripted(1, 0.5, 0.6, 0.7, 0.55, 0.4),
		Callbacks: []Callback{stop, record}, Progress: &out,
	})
	if err != nil {
		t.Fatal(err)
	}
	// 0.5 at epoch 2, then three epochs without improvement: stop after 5.
	if len(h.Epochs) != 5 || h.Stopped == "" || !strings.Contains(h.Stopped, "val_loss has not improved on 0.5 for 3 epochs") {
		t.Fatalf("history %+v", h)
	}
	if h.Epochs[1]["val_loss"] != 0.5 || h.Epochs[1]["val_accuracy"] != 0.5 || h.Epochs[0]["loss"] <= 0 {
		t.Errorf("epoch 2 logs %v", h.Epochs[1])
	}
	if got := tensor.ToSlice[float32](m.Variables()[0].Value()); !slices.Equal(got, bestWeights) {
		t.Errorf("weights %v, want epoch 2's %v", got, bestWeights)
	}
	text := out.String()
	for _, want := range []string{"epoch 2/10  4 steps", "loss 0.", "val_accuracy 0.5  val_loss 0.5", "stopped after epoch 5"} {
		if !strings.Contains(text, want) {
			t.Errorf("progress %q lacks %q", text, want)
		}
	}
	if strings.Contains(text, "\r") {
		t.Errorf("plain progress has carriage returns: %q", text)
	}
}

func TestFitCheckpointBestAndPlateau(t *testing.T) {
	m, _, _, train, val := fitFixture(t)
	plateau := &Plateau{Base: Constant(0.1), Monitor: Monitor{Name: "val_accuracy"}, Factor: 0.5, Patience: 1}
	opt := NewAdam(plateau.Schedule)
	step := func(b data.Element) (float64, int, error) {
		tp := tape.New()
		loss := SparseSoftmaxCrossEntropy(m.Forward(b[0]), b[1])
		vars := m.Variables()
		return loss.Float(), b[0].Dim(0), opt.Apply(vars, tp.Gradient(loss, Values(vars)...))
	}
	path := filepath.Join(t.TempDir(), "best.safetensors")
	best := &CheckpointBest{Path: path, Monitor: Monitor{Name: "val_accuracy"}}
	// accuracy 0.2, 0.6, 0.5, 0.5, 0.7, 0.6, 0.6
	h, err := Fit(context.Background(), train, AllVariables(m), opt, step, FitConfig{
		Epochs: 7, Validation: val, Evaluate: scripted(0.8, 0.4, 0.5, 0.5, 0.3, 0.4, 0.4),
		Callbacks: []Callback{best, plateau},
	})
	if err != nil {
		t.Fatal(err)
	}
	var lrs []float64
	for _, l := range h.Epochs {
		lrs = append(lrs, l["lr"])
	}
	// Higher is better for accuracy: no gain at epochs 3, 4 (reduce after
	// 4), a gain at 5, none at 6, 7 (reduce after 7).
	if want := []float64{0.1, 0.1, 0.1, 0.05, 0.05, 0.05, 0.025}; !slices.Equal(lrs, want) {
		t.Errorf("learning rates %v, want %v", lrs, want)
	}
	_, meta, err := LoadCheckpoint(path)
	if err != nil {
		t.Fatal(err)
	}
	if meta["epoch"] != "5" || meta["val_accuracy"] != "0.7" {
		t.Errorf("best checkpoint metadata %v, want epoch 5 at 0.7", meta)
	}
}

func TestFitErrors(t *testing.T) {
	m, opt, step, train, val := fitFixture(t)
	_, err := Fit(context.Background(), train, AllVariables(m), opt, step, FitConfig{Validation: val})
	if err == nil || !strings.Contains(err.Error(), "Validation needs an Evaluate step") {
		t.Errorf("validation without Evaluate: %v", err)
	}
	_, err = Fit(context.Background(), train, AllVariables(m), opt, step, FitConfig{Callbacks: []Callback{&EarlyStopping{}}})
	if err == nil || !strings.Contains(err.Error(), `EarlyStopping: no "val_loss" in the epoch's logs (loss `) {
		t.Errorf("monitor without validation: %v", err)
	}
	// A loss that is not finite ends training at its step (issue 31: +Inf
	// trained on).
	for _, bad := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		k := 0
		diverging := func(b data.Element) (float64, int, error) {
			if k++; k == 3 {
				return bad, 8, nil
			}
			return step(b)
		}
		h, err := Fit(context.Background(), train, AllVariables(m), opt, diverging, FitConfig{Epochs: 2})
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("the loss became %v at step 2", bad)) || h.Steps != 2 {
			t.Errorf("a loss of %v at the third step: %v after %d steps", bad, err, h.Steps)
		}
	}
}

// Each epoch of Fit runs its own epoch of the dataset: a Shuffle with
// reshuffleEachEpoch gives each a new order (Fit ran every epoch in the
// first one's order, silently, as every call of Dataset.All does), one
// without reshuffle the same order; a run resumed from a checkpoint sees,
// from its first epoch on, the orders the uninterrupted run saw.
func TestFitReshufflesEachEpoch(t *testing.T) {
	x := tensor.Arange[float32](0, 12, 1)
	ds, err := data.FromSlices(x)
	if err != nil {
		t.Fatal(err)
	}
	// orders runs Fit over d's batches of 4 and returns each epoch's
	// order of the 12 elements.
	orders := func(d *data.Dataset, cfg FitConfig) [][]float32 {
		var seen [][]float32
		step := func(b data.Element) (float64, int, error) {
			if len(seen) == 0 || len(seen[len(seen)-1]) == 12 {
				seen = append(seen, nil)
			}
			seen[len(seen)-1] = append(seen[len(seen)-1], tensor.ToSlice[float32](b[0])...)
			return 0, b[0].Dim(0), nil
		}
		v := tape.NewVariable("v", tensor.Zeros(tensor.Float32, 1))
		if _, err := Fit(context.Background(), d.Batch(4, false), []*tape.Variable{v}, NewAdam(Constant(0.1)), step, cfg); err != nil {
			t.Fatal(err)
		}
		return seen
	}
	re := orders(ds.Shuffle(12, 3, true), FitConfig{Epochs: 3})
	if len(re) != 3 || slices.Equal(re[0], re[1]) || slices.Equal(re[1], re[2]) {
		t.Errorf("reshuffling: epochs %v; want three orders of their own", re)
	}
	if same := orders(ds.Shuffle(12, 3, false), FitConfig{Epochs: 3}); !slices.Equal(same[0], same[2]) {
		t.Errorf("without reshuffle: epochs %v; want one order", same)
	}
	// Resumed: two epochs, then a third from their checkpoint.
	dir := t.TempDir()
	orders(ds.Shuffle(12, 3, true), FitConfig{Epochs: 2, Dir: dir})
	if third := orders(ds.Shuffle(12, 3, true), FitConfig{Epochs: 3, Dir: dir}); len(third) != 1 || !slices.Equal(third[0], re[2]) {
		t.Errorf("the resumed third epoch: %v, want the uninterrupted run's %v", third, re[2])
	}
}

// With StepsPerEpoch, an epoch is that many steps of ds's passes read one
// after another, as Keras's steps_per_epoch: an endless dataset
// (Repeat(-1)) trains Epochs epochs and returns, a finite one's passes
// run on across epochs, a count that matches the passes changes nothing,
// and an empty dataset gives empty epochs.
func TestFitStepsPerEpoch(t *testing.T) {
	x := tensor.Arange[float32](0, 12, 1)
	ds, err := data.FromSlices(x)
	if err != nil {
		t.Fatal(err)
	}
	// run runs Fit over d's batches of 4 and returns the first element of
	// each batch it saw, and the steps at each epoch's end.
	run := func(d *data.Dataset, cfg FitConfig) ([]float32, []int) {
		var firsts []float32
		step := func(b data.Element) (float64, int, error) {
			firsts = append(firsts, tensor.ToSlice[float32](b[0])[0])
			return 0, b[0].Dim(0), nil
		}
		v := tape.NewVariable("v", tensor.Zeros(tensor.Float32, 1))
		done := make(chan History, 1)
		go func() {
			h, err := Fit(context.Background(), d.Batch(4, false), []*tape.Variable{v}, NewAdam(Constant(0.1)), step, cfg)
			if err != nil {
				t.Error(err)
			}
			done <- h
		}()
		select {
		case h := <-done:
			return firsts, h.EpochSteps
		case <-time.After(time.Minute):
			t.Fatalf("Fit over %d epochs of %d steps has not returned", cfg.Epochs, cfg.StepsPerEpoch)
			return nil, nil
		}
	}
	stream := []float32{0, 4, 8, 0, 4, 8} // passes of three batches, back to back
	for _, d := range []*data.Dataset{ds.Repeat(-1), ds} {
		firsts, ends := run(d, FitConfig{Epochs: 3, StepsPerEpoch: 2})
		if !slices.Equal(firsts, stream) || !slices.Equal(ends, []int{2, 4, 6}) {
			t.Errorf("epochs of 2 steps: batches from %v, epochs ending at steps %v; want %v and [2 4 6]", firsts, ends, stream)
		}
	}
	shuffled := ds.Shuffle(12, 3, true)
	want, _ := run(shuffled, FitConfig{Epochs: 3})
	if got, ends := run(shuffled, FitConfig{Epochs: 3, StepsPerEpoch: 3}); !slices.Equal(got, want) || !slices.Equal(ends, []int{3, 6, 9}) {
		t.Errorf("a count that matches the passes: batches from %v (ends %v), want %v", got, ends, want)
	}
	if firsts, ends := run(ds.Take(0), FitConfig{Epochs: 2, StepsPerEpoch: 5}); len(firsts) != 0 || !slices.Equal(ends, []int{0, 0}) {
		t.Errorf("an empty dataset: batches from %v, epochs ending at %v", firsts, ends)
	}
}

// A step that fails on an unbatched dataset's element (one example: its
// label a scalar) names the shapes and asks whether the dataset is
// batched; a batched dataset's failure has no such hint.
func TestFitHintsAtAMissingBatch(t *testing.T) {
	x := tensor.RandNormal(tensor.NewRNG(4), tensor.Float32, 8, 3)
	ds, err := data.FromSlices(x, tensor.Zeros(tensor.Int32, 8))
	if err != nil {
		t.Fatal(err)
	}
	m := NewSequential(NewDense("d", tensor.NewRNG(1), 3, 2, DenseOpts{}))
	opt := NewAdam(Constant(0.05))
	_, err = Fit(context.Background(), ds, AllVariables(m), opt, TrainStep(m, SparseSoftmaxCrossEntropy, opt), FitConfig{})
	if err == nil || !strings.Contains(err.Error(), "shapes [3], [], one example's rather than a batch's: is the dataset batched? data.Dataset.Batch") {
		t.Errorf("unbatched: %v", err)
	}
	eval := EvalStepOf(m, SparseSoftmaxCrossEntropy, map[string]Metric{"accuracy": Accuracy})
	if _, err := Evaluate(context.Background(), ds, eval); err == nil || !strings.Contains(err.Error(), "is the dataset batched?") {
		t.Errorf("Evaluate, unbatched: %v", err)
	}
	wrong := NewSequential(NewDense("w", tensor.NewRNG(1), 4, 2, DenseOpts{}))
	_, err = Fit(context.Background(), ds.Batch(4, false), AllVariables(wrong), opt, TrainStep(wrong, SparseSoftmaxCrossEntropy, opt), FitConfig{})
	if err == nil || strings.Contains(err.Error(), "batched?") {
		t.Errorf("a batched dataset's shape error: %v", err)
	}
}

// Plain progress lines within an epoch when the output is not a
// terminal.
func TestFitPlainProgressLines(t *testing.T) {
	defer func(d time.Duration) { plainLineEvery = d }(plainLineEvery)
	plainLineEvery = 0
	m, opt, step, train, _ := fitFixture(t)
	var out bytes.Buffer
	if _, err := Fit(context.Background(), train, AllVariables(m), opt, step, FitConfig{Epochs: 1, Progress: &out, StepsPerEpoch: 4}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[3], "epoch 1/1  step 4/4  loss ") || !strings.Contains(lines[4], "4 steps") {
		t.Errorf("progress lines %q", lines)
	}
}

// stepRecorder is a StepCallback that keeps what it saw and fails on
// request.
type stepRecorder struct {
	steps  []StepState
	epochs int
	failAt int
}

func (r *stepRecorder) EpochEnd(s *FitState) error { r.epochs++; return nil }

func (r *stepRecorder) StepEnd(s StepState) error {
	r.steps = append(r.steps, s)
	if s.Step == r.failAt {
		return fmt.Errorf("planted at step %d", s.Step)
	}
	return nil
}

func TestFitStepCallbacks(t *testing.T) {
	m, opt, step, train, _ := fitFixture(t)
	rec := &stepRecorder{}
	h, err := Fit(context.Background(), train, AllVariables(m), opt, step, FitConfig{Epochs: 2, StepsPerEpoch: 4, Callbacks: []Callback{rec}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.steps) != h.Steps || rec.epochs != 2 || h.Steps != 8 {
		t.Fatalf("%d step calls and %d epoch calls for %d steps", len(rec.steps), rec.epochs, h.Steps)
	}
	sum := 0.0
	for i, s := range rec.steps {
		if s.Step != i+1 || s.Epoch != i/4+1 || s.EpochStep != i%4+1 || s.Epochs != 2 || s.StepsPerEpoch != 4 || !s.Primary {
			t.Errorf("step %d: %+v", i, s)
		}
		if s.Loss != h.StepLoss[i] || s.Examples != 8*s.EpochStep {
			t.Errorf("step %d: loss %v (history %v), examples %d", i, s.Loss, h.StepLoss[i], s.Examples)
		}
		if s.EpochStep == 1 {
			sum = 0
		}
		sum += s.Loss
		if math.Abs(s.EpochLoss-sum/float64(s.EpochStep)) > 1e-12 {
			t.Errorf("step %d: epoch loss %v, want %v", i, s.EpochLoss, sum/float64(s.EpochStep))
		}
	}
	m, opt, step, train, _ = fitFixture(t)
	_, err = Fit(context.Background(), train, AllVariables(m), opt, step, FitConfig{Epochs: 2, Callbacks: []Callback{&stepRecorder{failAt: 3}}})
	if err == nil || !strings.Contains(err.Error(), "planted at step 3") {
		t.Errorf("a failing StepEnd: %v", err)
	}
}

// Evaluating a model, or summarizing it, leaves each layer in the mode it
// was in: a model put in inference mode for predictions keeps predicting
// without dropout after an Evaluate (it was put back in training mode,
// its predictions drawing dropout masks), and a BatchNorm frozen for
// fine-tuning stays frozen while the rest trains.
func TestEvaluateKeepsTheModelsModes(t *testing.T) {
	drop, bn := NewDropout(0.5, tensor.NewRNG(2)), NewBatchNorm("bn", 8, tensor.Float32)
	m := NewSequential(NewDense("d", tensor.NewRNG(1), 4, 8, DenseOpts{}), drop, bn, NewDense("e", tensor.NewRNG(3), 8, 2, DenseOpts{}))
	x := tensor.RandNormal(tensor.NewRNG(4), tensor.Float32, 5, 4)
	ds, err := data.FromSlices(x, tensor.Zeros(tensor.Int32, 5))
	if err != nil {
		t.Fatal(err)
	}
	evaluate := func() {
		if _, err := Evaluate(context.Background(), ds.Batch(5, false), EvalStepOf(m, SparseSoftmaxCrossEntropy, nil)); err != nil {
			t.Fatal(err)
		}
	}
	SetTraining(m, false)
	before := m.Forward(x)
	evaluate()
	if _, err := Summarize(m, x); err != nil {
		t.Fatal(err)
	}
	if drop.Training() || bn.Training() {
		t.Fatalf("after Evaluate and Summarize: dropout training %v, batch norm training %v; want both in inference", drop.Training(), bn.Training())
	}
	if after := m.Forward(x); !slices.Equal(tensor.ToSlice[float32](after), tensor.ToSlice[float32](before)) {
		t.Errorf("predictions in inference mode changed after Evaluate: %v, then %v", before, after)
	}
	SetTraining(m, true)
	bn.SetTraining(false) // frozen statistics, the rest training
	evaluate()
	if !drop.Training() || bn.Training() {
		t.Errorf("after Evaluate: dropout training %v (want true), batch norm training %v (want false)", drop.Training(), bn.Training())
	}
}

// Predict computes in inference mode (the same output every call, no
// dropout, BatchNorm's running statistics) and leaves the model in the
// mode it was in: training, so the next step still drops.
func TestPredictInInferenceMode(t *testing.T) {
	drop, bn := NewDropout(0.5, tensor.NewRNG(2)), NewBatchNorm("bn", 8, tensor.Float32)
	m := NewSequential(NewDense("d", tensor.NewRNG(1), 4, 8, DenseOpts{}), drop, bn, NewDense("e", tensor.NewRNG(3), 8, 2, DenseOpts{}))
	x := tensor.RandNormal(tensor.NewRNG(4), tensor.Float32, 5, 4)
	a, b := Predict(m, x), Predict(m, x)
	if !slices.Equal(tensor.ToSlice[float32](a), tensor.ToSlice[float32](b)) {
		t.Errorf("two predictions differ: %v and %v", a, b)
	}
	SetTraining(m, false)
	want := m.Forward(x)
	SetTraining(m, true)
	if !slices.Equal(tensor.ToSlice[float32](a), tensor.ToSlice[float32](want)) {
		t.Errorf("Predict %v, inference mode's Forward %v", a, want)
	}
	if !drop.Training() || !bn.Training() {
		t.Errorf("after Predict: dropout training %v, batch norm %v; want both back in training", drop.Training(), bn.Training())
	}
}

// A run stopped within an epoch resumes from its last checkpoint at the
// next batch of that epoch (CheckpointEvery), not at the epoch's start:
// the resumed run ends with the uninterrupted one's variables, bit for
// bit, without and with StepsPerEpoch.
func TestFitResumesWithinAnEpoch(t *testing.T) {
	x := tensor.RandNormal(tensor.NewRNG(4), tensor.Float64, 24, 3)
	ds, err := data.FromSlices(x, ops.Cast(tensor.RandUniform(tensor.NewRNG(5), tensor.Float64, 0, 2, 24), tensor.Int32))
	if err != nil {
		t.Fatal(err)
	}
	train := ds.Shuffle(24, 7, true).Batch(4, false) // six batches an epoch
	for _, per := range []int{0, 4} {
		// run trains two epochs from dir; a step fails after failAt steps
		// of this run (0: none).
		run := func(dir string, failAt int) ([]float64, error) {
			m := NewSequential(NewDense("d", tensor.NewRNG(1), 3, 2, DenseOpts{DType: tensor.Float64}))
			opt := NewAdam(Constant(0.05))
			inner, n := TrainStep(m, SparseSoftmaxCrossEntropy, opt), 0
			step := func(b data.Element) (float64, int, error) {
				if n++; failAt > 0 && n > failAt {
					return 0, 0, errors.New("interrupted")
				}
				return inner(b)
			}
			_, err := Fit(context.Background(), train, AllVariables(m), opt, step, FitConfig{Epochs: 2, Dir: dir, CheckpointEvery: 2, StepsPerEpoch: per})
			return tensor.ToSlice[float64](m.Variables()[0].Value()), err
		}
		want, err := run(t.TempDir(), 0)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if _, err := run(dir, 3); err == nil { // checkpoints at step 2, then fails in step 4 of epoch 1
			t.Fatal("the interrupted run did not fail")
		}
		got, err := run(dir, 0)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("StepsPerEpoch %d: resumed within the first epoch: %v, want the uninterrupted run's %v", per, got, want)
		}
	}
}
