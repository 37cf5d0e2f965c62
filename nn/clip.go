package nn

import (
	"fmt"

	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// ClippedOptimizer clips its gradients to a joint L2 norm of at most
// MaxNorm before Inner's step (ClipByGlobalNormTensor: on the gradients'
// device, without waiting for them), as Keras's global_clipnorm and a
// PyTorch loop's clip_grad_norm_ do, so that TrainStep, the traced and
// recorded steps, the data-parallel step (after the all-reduce) and Fit
// clip without a step of one's own. It takes float32 gradients from a
// mixed-precision model's tape (the clipping in the variables' dtype, as
// PyTorch clips its master weights' gradients). Slots, steps and
// checkpoints are Inner's.
type ClippedOptimizer struct {
	Inner   Optimizer
	MaxNorm float64
	norm    *tensor.Tensor // the last step's norm, before clipping
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
	if err := checkGrads(vars, grads); err != nil {
		return fmt.Errorf("nn: ClippedOptimizer: %w", err)
	}
	if len(byGroup(grads)) == 0 {
		return o.Inner.Apply(vars, grads) // nothing to clip
	}
	var clipped []*tensor.Tensor
	var norm *tensor.Tensor
	if err := tensor.Catch(func() { clipped, norm = ClipByGlobalNormTensor(grads, o.MaxNorm) }); err != nil {
		return fmt.Errorf("nn: ClippedOptimizer: %w", err)
	}
	defer releaseAll(clipped)
	if o.norm != nil {
		o.norm.Release()
	}
	o.norm = norm
	return o.Inner.Apply(vars, clipped)
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

// restoreSlot restores slot key of opt where it keeps slots (a wrapper's
// inner optimizer, for RestoreCheckpoint).
func restoreSlot(opt Optimizer, key string, t *tensor.Tensor) {
	if s, ok := opt.(interface{ setSlot(string, *tensor.Tensor) }); ok {
		s.setSlot(key, t)
	}
}
