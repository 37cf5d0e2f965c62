package tape

import (
	"fmt"
	"slices"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/tensor"
)

// StepRecord is an optimizer's step held by a device recording
// (device.Capturer: a CUDA graph), so that replaying a training step's
// recording updates the variables too, with no launch of its own. Its
// *UpdateAll methods are the package's functions routed through it:
// inside Capture they queue each device's step reading its constants from
// device memory (device.StepRecorder.StepAt), one of the record's
// constants buffers a step; inside Refresh, called before every replay
// with the same variables, gradients and rule, they only write the step's
// constants there (SetStepConstants), in the same order; a step's
// GradFactor is read at every replay from the buffer the capture was
// given (a result of work the recording holds), Refresh checking only that
// there is one where the capture had one. Every variable
// with a gradient must be float32 or float64 on a device that records
// steps; otherwise, or where Refresh's calls differ from Capture's, the
// methods panic with a *tensor.Error, having changed nothing. The methods
// of a nil *StepRecord are the package's functions.
type StepRecord struct {
	consts    []*tensor.Tensor
	capturing bool
	steps     []recordedStep
	next      int
}

// NewStepRecord returns a record whose steps read their constants from
// consts, uint8 tensors of device.StepConstBytes elements, one a device
// step, each used by the first step on its device. They must be allocated
// before the capture (the device's memory of a recording is reused
// within it: a buffer of the capture's could be an intermediate's that
// the replay overwrites), and may serve several records replayed in turn
// (each replay is refreshed just before it). It panics with a
// *tensor.Error on a nil buffer or one of another dtype or size.
func NewStepRecord(consts []*tensor.Tensor) *StepRecord {
	for i, c := range consts {
		if c == nil {
			panic(tensor.NewError("tape", "NewStepRecord", tensor.ErrArity, nil, "", "constants buffer %d is nil", i))
		}
		if c.DType() != tensor.Uint8 || c.NumElements() != device.StepConstBytes {
			panic(tensor.NewError("tape", "NewStepRecord", tensor.ErrDType, nil, "", "constants buffer %d is %s, want uint8[%d]", i, tensor.Describe(c), device.StepConstBytes))
		}
	}
	return &StepRecord{consts: consts}
}

// StepConstants allocates n constants buffers on dev for NewStepRecord.
func StepConstants(dev device.Device, n int) ([]*tensor.Tensor, error) {
	out := make([]*tensor.Tensor, n)
	for i := range out {
		t, err := tensor.Empty(dev, tensor.Uint8, tensor.Shape{device.StepConstBytes})
		if err != nil {
			return nil, err
		}
		out[i] = t
	}
	return out, nil
}

// recordedStep is one device step of a record: where its constants live
// and the settings' structure its kernels were chosen for.
type recordedStep struct {
	consts *tensor.Tensor
	elem   int
	shape  stepShape
}

// stepShape is what of a step's settings its kernels depend on.
type stepShape struct {
	rule              device.StepRule
	nesterov, withMom bool
	factor            bool // a GradFactor, read where the capture found it
}

// Capture runs fn (which calls r's methods) while the device records.
func (r *StepRecord) Capture(fn func() error) error {
	r.capturing, r.next, r.steps = true, 0, nil
	defer func() { r.capturing = false }()
	return fn()
}

// Refresh runs fn (the same calls as Capture's) before a replay.
func (r *StepRecord) Refresh(fn func() error) error {
	r.next = 0
	if err := fn(); err != nil {
		return err
	}
	if r.next != len(r.steps) {
		return fmt.Errorf("tape: StepRecord: %d device steps recorded, %d refreshed", len(r.steps), r.next)
	}
	return nil
}

// Capturing reports whether r is inside Capture: its methods' steps are
// queued to be recorded, not taken (an optimizer counts no step).
func (r *StepRecord) Capturing() bool { return r != nil && r.capturing }

func structure(s device.StepSettings) stepShape {
	return stepShape{s.Rule, s.Nesterov, s.Momentum > 0, s.GradFactor != nil}
}

// step queues (Capture) or refreshes (Refresh) one device's step of
// elem-byte elements; dev is the variables' device.
func (r *StepRecord) step(dev device.Device, st device.Stepper, elem int, ts []device.StepTensor, s device.StepSettings) error {
	sr, ok := st.(device.StepRecorder)
	if !ok {
		return fmt.Errorf("%s does not record optimizer steps", dev.Name())
	}
	if r.capturing {
		k := slices.IndexFunc(r.consts, func(c *tensor.Tensor) bool {
			return c.Device() == dev && !slices.ContainsFunc(r.steps, func(rs recordedStep) bool { return rs.consts == c })
		})
		if k < 0 {
			return fmt.Errorf("%w: no constants buffer left on %s for a recorded step (%d given)", device.ErrCapture, dev.Name(), len(r.consts))
		}
		r.steps = append(r.steps, recordedStep{consts: r.consts[k], elem: elem, shape: structure(s)})
		r.next++
		return sr.StepAt(elem, ts, s, r.consts[k].Buffer())
	}
	if r.next >= len(r.steps) {
		return fmt.Errorf("more device steps than the %d recorded", len(r.steps))
	}
	rs := r.steps[r.next]
	if rs.elem != elem || rs.shape != structure(s) || rs.consts.Device() != dev {
		return fmt.Errorf("device step %d differs from the recorded one (rule, Nesterov, momentum, gradient factor, dtype or device changed)", r.next)
	}
	r.next++
	return sr.SetStepConstants(elem, s, rs.consts.Buffer())
}
