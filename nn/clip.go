package nn

import (
	"fmt"
	"slices"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// ClippedOptimizer clips its gradients to a joint L2 norm of at most
// MaxNorm before Inner's step (on the gradients' device, without waiting
// for them), as Keras's global_clipnorm and a PyTorch loop's
// clip_grad_norm_ do, so that TrainStep, the traced and recorded steps,
// the data-parallel step (after the all-reduce) and Fit clip without a
// step of one's own. Slots, steps and checkpoints are Inner's.
//
// Where Inner is nn's own (Adam, SGD, RMSProp) the clipping is part of
// its step: the norm is computed from the gradients as given (a
// mixed-precision model's half gradients summed in float32, no float32
// copy of each: tape.Options.HalfGradients) and the clip factor, a
// scalar on the device, is multiplied into each gradient in the step's
// own pass (ops.AdamParams.GradFactor), in the variable's dtype: the
// arithmetic of clipping float32 gradients, as PyTorch clips its master
// weights' gradients, without the gradients' float32 copies or a pass
// that writes the clipped ones. Another optimizer is given the clipped
// gradients (ClipByGlobalNormTensor), in their variables' dtypes where it
// is inside a LossScaleOptimizer.
type ClippedOptimizer struct {
	Inner   Optimizer
	MaxNorm float64
	norm    *tensor.Tensor // the last step's norm, before clipping
	// recorded: norm is a recording's (RecordedTrainStep), which each
	// replay rewrites; captured, each recording's norm and factor, which
	// its replays' refreshes hand on.
	recorded bool
	captured map[*tape.StepRecord][2]*tensor.Tensor
}

// NewClippedOptimizer wraps inner, clipping to maxNorm. It panics with a
// *tensor.Error for a nil inner, a maxNorm that is not above 0, or an
// inner LossScaleOptimizer: the gradients must be unscaled before they
// are clipped, so wrap the other way round
// (NewLossScaleOptimizer(NewClippedOptimizer(adam, 1))).
func NewClippedOptimizer(inner Optimizer, maxNorm float64) *ClippedOptimizer {
	mustArgs("NewClippedOptimizer", arg{"the inner optimizer", inner})
	if !(maxNorm > 0) {
		panic(tensor.NewError("nn", "NewClippedOptimizer", tensor.ErrAttr, nil, "", "the largest norm %v is not above 0", maxNorm))
	}
	if _, scaled := inner.(lossScaler); scaled {
		panic(tensor.NewError("nn", "NewClippedOptimizer", tensor.ErrAttr, nil, "", "a LossScaleOptimizer inside would be given scaled gradients to clip: wrap the clipping in it instead (NewLossScaleOptimizer(NewClippedOptimizer(...)))"))
	}
	return &ClippedOptimizer{Inner: inner, MaxNorm: maxNorm}
}

// Apply clips grads and takes Inner's step with them. It returns Inner's
// error, or one for lists of different lengths, a gradient that does not
// fit its variable, or gradients on more than one device.
func (o *ClippedOptimizer) Apply(vars []*tape.Variable, grads []*tensor.Tensor) error {
	return o.applyThrough(nil, vars, grads, unscaledGrads)
}

// recordable: the clipping and Inner's step are recorded together where
// Inner's step is a device's (RecordedTrainStep over Adam: the norm, the
// factor and the update all in the recording).
func (o *ClippedOptimizer) recordable() bool {
	inner, ok := o.Inner.(stepRecordable)
	return ok && inner.recordable()
}

// applyThrough is Apply of gradients scaled by sc (scaledStep: a
// LossScaleOptimizer's unscaling), clipping the gradients sc gives: the
// norm of the given ones times sc.by, exactly where sc.by is a power of
// two (a loss scale's inverse). Through rec, while it captures, the
// clipping's ops are recorded with Inner's step, the factor's buffer
// the recording's; when it refreshes before a replay, Inner's step is
// given that factor again and nothing is computed.
func (o *ClippedOptimizer) applyThrough(rec *tape.StepRecord, vars []*tape.Variable, grads []*tensor.Tensor, sc gradScale) error {
	if err := checkGrads(vars, grads); err != nil {
		return fmt.Errorf("nn: ClippedOptimizer: %w", err)
	}
	inner, fused := o.Inner.(scaledStep)
	if c, ok := o.captured[rec]; ok && !rec.Capturing() { // a replay's refresh
		o.keep(c[0], true)
		return inner.applyThrough(rec, vars, grads, gradScale{by: sc.by, factor: c[1]})
	}
	groups := byGroup(grads)
	switch {
	case len(groups) == 0: // nothing to clip
		if fused {
			return inner.applyThrough(rec, vars, grads, sc)
		}
		return o.Inner.Apply(vars, grads)
	case !fused || sc.factor != nil:
		// The clipped gradients themselves (an optimizer of one's own, or
		// a factor already given: a ClippedOptimizer inside another).
		if sc.by != 1 || sc.factor != nil || slices.ContainsFunc(grads, func(g *tensor.Tensor) bool { return g != nil && g.DType().IsHalf() }) {
			u := unscaled(vars, grads, sc)
			defer releaseAll(u)
			grads = u
		}
		var clipped []*tensor.Tensor
		var norm *tensor.Tensor
		if err := tensor.Catch(func() { clipped, norm = ClipByGlobalNormTensor(grads, o.MaxNorm) }); err != nil {
			return fmt.Errorf("nn: ClippedOptimizer: %w", err)
		}
		defer releaseAll(clipped)
		o.keep(norm, false)
		return o.Inner.Apply(vars, clipped)
	}
	var norm, factor *tensor.Tensor
	if err := tensor.Catch(func() {
		norm = globalNorm("ClippedOptimizer", groups)
		if sc.by != 1 && sc.by != 0 {
			norm = ops.Mul(norm, ops.ScalarLike(norm, sc.by))
		}
		factor = clipFactor(norm, o.MaxNorm)
	}); err != nil {
		return fmt.Errorf("nn: ClippedOptimizer: %w", err)
	}
	o.keep(norm, rec.Capturing())
	if rec.Capturing() { // the recording's: kept for its refreshes
		if o.captured == nil {
			o.captured = map[*tape.StepRecord][2]*tensor.Tensor{}
		}
		o.captured[rec] = [2]*tensor.Tensor{norm, factor}
	} else {
		defer factor.Release() // once the step is queued
	}
	return inner.applyThrough(rec, vars, grads, gradScale{by: sc.by, factor: factor})
}

// keep makes norm the last step's, a recording's where recorded (never
// released here: the recording holds it).
func (o *ClippedOptimizer) keep(norm *tensor.Tensor, recorded bool) {
	if o.norm != nil && !o.recorded && o.norm != norm {
		o.norm.Release()
	}
	o.norm, o.recorded = norm, recorded
}

// takesHalfGradients: a mixed-precision model's half gradients go to
// Inner's step as they are where Inner takes them so (its clipping is
// Inner's step's).
func (o *ClippedOptimizer) takesHalfGradients() bool {
	_, fused := o.Inner.(scaledStep)
	return fused && takesHalf(o.Inner)
}

// Norm is the joint norm of the last step's gradients before clipping
// (reading it waits for the device to compute it); 0 before any step.
func (o *ClippedOptimizer) Norm() float64 {
	if o.norm == nil {
		return 0
	}
	return o.norm.Float()
}

// Slots returns Inner's slots.
func (o *ClippedOptimizer) Slots() []*tape.Variable { return o.Inner.Slots() }

// Steps returns Inner's steps.
func (o *ClippedOptimizer) Steps() int { return o.Inner.Steps() }

// SetSteps sets Inner's step count.
func (o *ClippedOptimizer) SetSteps(n int) { o.Inner.SetSteps(n) }

// setSlot restores one of Inner's slots (RestoreCheckpoint).
func (o *ClippedOptimizer) setSlot(key string, t *tensor.Tensor) { restoreSlot(o.Inner, key, t) }

// checkpointMeta is Inner's checkpoint metadata.
func (o *ClippedOptimizer) checkpointMeta() map[string]string { return innerMeta(o.Inner) }

// restoreMeta restores Inner's state from a checkpoint's metadata.
func (o *ClippedOptimizer) restoreMeta(meta map[string]string) (func(), error) {
	return restoreInnerMeta(o.Inner, meta)
}

// restoreSlot restores slot key of opt where it keeps slots (a wrapper's
// inner optimizer, for RestoreCheckpoint).
func restoreSlot(opt Optimizer, key string, t *tensor.Tensor) {
	if s, ok := opt.(interface{ setSlot(string, *tensor.Tensor) }); ok {
		s.setSlot(key, t)
	}
}
