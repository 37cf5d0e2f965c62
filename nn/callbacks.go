package nn

import (
	"fmt"
	"math"
	"strings"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// FitState is what callbacks see at the end of each epoch.
type FitState struct {
	Epoch     int  // the epoch just finished, from 1
	Epochs    int  // how many Fit runs in all
	Step      int  // training steps so far
	Logs      Logs // the epoch's measurements; callbacks may add entries
	Vars      []*tape.Variable
	Optimizer Optimizer
	// Stop, set by a callback, ends training after this epoch (Fit
	// returns without error; History.Stopped says why).
	Stop   bool
	Reason string
	// Primary is true where files should be written: always, but in a
	// data-parallel run (FitConfig.Comm) on rank 0 alone.
	Primary bool
}

// Callback runs at the end of every epoch, after validation, in the order
// FitConfig.Callbacks lists them. An error ends Fit with that error.
type Callback interface {
	EpochEnd(s *FitState) error
}

// StepCallback is a Callback that Fit also tells of every training step,
// after the step's loss is known: a live chart, a display of one's own.
// An error from StepEnd ends Fit with that error.
type StepCallback interface {
	Callback
	StepEnd(s StepState) error
}

// StepState is what a StepCallback sees after each training step.
type StepState struct {
	Epoch         int     // the epoch running, from 1
	Epochs        int     // how many Fit runs in all
	Step          int     // training steps so far, this one included
	EpochStep     int     // steps of this epoch so far
	StepsPerEpoch int     // FitConfig.StepsPerEpoch (0: unknown)
	Loss          float64 // this step's loss
	EpochLoss     float64 // the mean loss of this epoch's steps so far (this process's)
	Examples      int     // examples this epoch so far (this process's)
	// Primary is true where output should be shown: always, but in a
	// data-parallel run (FitConfig.Comm) on rank 0 alone.
	Primary bool
}

// CallbackFunc makes a function a Callback.
type CallbackFunc func(s *FitState) error

// EpochEnd calls f.
func (f CallbackFunc) EpochEnd(s *FitState) error { return f(s) }

// Monitor names the measurement a callback watches and which way is
// better. The zero Monitor watches "val_loss", lower is better.
type Monitor struct {
	// Name is a Logs entry: "val_loss" when empty.
	Name string
	// Higher says larger values are better (accuracy); when false, the
	// Name decides: names containing "acc" are better higher, others
	// lower.
	Higher bool
	// MinDelta is the least change that counts as better.
	MinDelta float64
}

// tracker follows one monitored value across epochs: the best so far and
// how many epochs since it improved.
type tracker struct {
	Monitor
	best  float64
	since int
	seen  bool
}

func (t *tracker) higher() bool {
	return t.Higher || strings.Contains(t.name(), "acc")
}

func (t *tracker) name() string {
	if t.Name == "" {
		return "val_loss"
	}
	return t.Name
}

// observe reads the monitored value from s and reports whether it is the
// best yet. A missing value is an error naming what is there.
func (t *tracker) observe(s *FitState, who string) (bool, error) {
	v, ok := s.Logs[t.name()]
	if !ok {
		return false, fmt.Errorf("nn: %s: no %q in the epoch's logs (%v); validation needs FitConfig.Validation and Evaluate", who, t.name(), s.Logs)
	}
	better := !t.seen
	if t.seen {
		if t.higher() {
			better = v > t.best+t.MinDelta
		} else {
			better = v < t.best-t.MinDelta
		}
	}
	if better && !math.IsNaN(v) {
		t.best, t.since, t.seen = v, 0, true
		return true, nil
	}
	t.since++
	return false, nil
}

// EarlyStopping ends training when the monitored value has not improved
// for Patience epochs, as Keras' EarlyStopping does; with RestoreBest, the
// variables go back to their values at the best epoch.
type EarlyStopping struct {
	Monitor     Monitor
	Patience    int
	RestoreBest bool

	t    tracker
	best []*tensor.Tensor
}

// EpochEnd implements Callback.
func (e *EarlyStopping) EpochEnd(s *FitState) error {
	e.t.Monitor = e.Monitor
	better, err := e.t.observe(s, "EarlyStopping")
	if err != nil {
		return err
	}
	if better && e.RestoreBest {
		e.best = snapshot(s.Vars)
	}
	if e.t.since > e.Patience {
		s.Stop = true
		s.Reason = fmt.Sprintf("%s has not improved on %.4g for %d epochs", e.t.name(), e.t.best, e.t.since)
		if e.RestoreBest && e.best != nil {
			for i, v := range s.Vars {
				v.Assign(e.best[i])
			}
		}
	}
	return nil
}

// snapshot copies the variables' values (Identity of a variable is a
// copy, not a view).
func snapshot(vars []*tape.Variable) []*tensor.Tensor {
	out := make([]*tensor.Tensor, len(vars))
	for i, v := range vars {
		out[i] = ops.Identity(v.Value())
	}
	return out
}

// CheckpointBest saves the variables and optimizer to Path (atomically,
// as SaveCheckpoint does) whenever the monitored value is the best yet.
type CheckpointBest struct {
	Path    string
	Monitor Monitor

	t tracker
}

// EpochEnd implements Callback.
func (c *CheckpointBest) EpochEnd(s *FitState) error {
	c.t.Monitor = c.Monitor
	better, err := c.t.observe(s, "CheckpointBest")
	if err != nil || !better || !s.Primary {
		return err
	}
	return SaveCheckpoint(c.Path, s.Vars, s.Optimizer, map[string]string{
		"epoch": fmt.Sprint(s.Epoch), "step": fmt.Sprint(s.Step), c.t.name(): fmt.Sprint(c.t.best)})
}

// Plateau is a learning-rate schedule that multiplies a base schedule by
// Factor each time the monitored value has not improved for Patience
// epochs (Keras' ReduceLROnPlateau), never below MinLR. Give Schedule to
// the optimizer and the Plateau itself to FitConfig.Callbacks; it adds the
// current rate to the logs as "lr".
type Plateau struct {
	Base     Schedule
	Monitor  Monitor
	Factor   float64 // 0.1 when zero
	Patience int
	MinLR    float64

	t     tracker
	scale float64
	step  int
}

// Schedule is the plateau-scaled rate, for the optimizer.
func (p *Plateau) Schedule(step int) float64 {
	p.step = step
	scale := p.scale
	if scale == 0 {
		scale = 1
	}
	return max(p.Base(step)*scale, p.MinLR)
}

// EpochEnd implements Callback.
func (p *Plateau) EpochEnd(s *FitState) error {
	p.t.Monitor = p.Monitor
	if p.scale == 0 {
		p.scale = 1
	}
	if _, err := p.t.observe(s, "Plateau"); err != nil {
		return err
	}
	if p.t.since > p.Patience {
		factor := p.Factor
		if factor == 0 {
			factor = 0.1
		}
		p.scale *= factor
		p.t.since = 0
	}
	s.Logs["lr"] = p.Schedule(s.Step)
	return nil
}
