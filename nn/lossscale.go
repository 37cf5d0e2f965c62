package nn

import (
	"cmp"
	"fmt"
	"math"
	"strconv"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// LossScaleOptimizer is dynamic loss scaling for float16 training, as
// Keras' LossScaleOptimizer and PyTorch's GradScaler do it: the train
// steps (TrainStep, TracedTrainStep, RecordedTrainStep) multiply the loss
// by Scale before they differentiate, so that small gradients do not
// flush to zero in float16; Apply divides the gradients by the scale and
// updates the variables through Inner, unless a gradient holds an
// infinity or NaN: then the step is skipped (Inner never sees it) and the
// scale halves. After GrowthInterval finite steps in a row the scale
// doubles. The scale and the count of finite steps are saved in
// checkpoints with Inner's state. bfloat16, whose range is float32's,
// needs no scaling.
type LossScaleOptimizer struct {
	Inner Optimizer
	// GrowthInterval is the finite steps in a row after which the scale
	// doubles (2000, Keras' and PyTorch's default).
	GrowthInterval int
	scale          float64
	good, skipped  int
}

// The initial loss scale, Keras' (PyTorch's GradScaler starts at 2^16).
const initialLossScale = 1 << 15

// NewLossScaleOptimizer wraps inner with dynamic loss scaling from a
// scale of 2^15.
func NewLossScaleOptimizer(inner Optimizer) *LossScaleOptimizer {
	mustArgs("NewLossScaleOptimizer", arg{"the inner optimizer", inner})
	return &LossScaleOptimizer{Inner: inner, GrowthInterval: 2000, scale: initialLossScale}
}

// Scale is the factor the train steps multiply the loss by now.
func (o *LossScaleOptimizer) Scale() float64 { return o.scale }

// Skipped is the number of steps skipped for a gradient that was not
// finite.
func (o *LossScaleOptimizer) Skipped() int { return o.skipped }

// lossScale is what the train steps ask an optimizer for: the factor to
// multiply the loss by (LossScaleOptimizer's Scale).
type lossScaler interface{ Scale() float64 }

// Apply unscales grads and takes Inner's step with them, or skips the step
// when one of them is not finite (see the type). It returns Inner's
// error, or one for lists that differ in length or a gradient that does
// not fit its variable.
//
// Where Inner is nn's own (Adam, SGD, RMSProp) the unscaling is part of
// its step (ops.AdamParams.GradScale: on a GPU, in the one launch that
// updates the model), as PyTorch's fused Adam takes GradScaler's scale,
// and it takes a mixed-precision model's half gradients as they are
// (tape.Options.HalfGradients); another optimizer is given the
// gradients unscaled, in their variables' dtypes. Either way the
// gradients are multiplied by 1/Scale rounded to the variable's dtype,
// the product rounded as Mul rounds it.
func (o *LossScaleOptimizer) Apply(vars []*tape.Variable, grads []*tensor.Tensor) error {
	return o.apply(vars, grads, nil, nil)
}

// apply is Apply where agree (nil: none) turns this process's finding
// (whether grads are all finite) into every rank's, and inner (nil:
// Inner's Apply) takes the unscaled gradients in Inner's place:
// DistributedTrainStep's no_sync rounds of an AccumulatedOptimizer inside,
// whose ranks must skip the same micro-batches.
func (o *LossScaleOptimizer) apply(vars []*tape.Variable, grads []*tensor.Tensor, agree func(finite bool) (bool, error), inner func(vars []*tape.Variable, grads []*tensor.Tensor) error) error {
	if len(vars) != len(grads) {
		return fmt.Errorf("nn: LossScaleOptimizer: %d variables and %d gradients", len(vars), len(grads))
	}
	if err := checkGrads(vars, grads); err != nil {
		return fmt.Errorf("nn: LossScaleOptimizer: %w", err)
	}
	finite := allFinite(grads)
	if agree != nil {
		var err error
		if finite, err = agree(finite); err != nil {
			return fmt.Errorf("nn: LossScaleOptimizer: %w", err)
		}
	}
	if !finite {
		o.scale, o.good = math.Max(o.scale/2, 1), 0
		o.skipped++
		return nil
	}
	if s, ok := o.Inner.(scaledStep); ok && inner == nil {
		if err := s.applyThrough(nil, vars, grads, gradScale{by: 1 / o.scale}); err != nil {
			return err
		}
	} else {
		if inner == nil {
			inner = o.Inner.Apply
		}
		u := unscaled(vars, grads, gradScale{by: 1 / o.scale})
		defer releaseAll(u)
		if err := inner(vars, u); err != nil {
			return err
		}
	}
	if o.good++; o.GrowthInterval > 0 && o.good >= o.GrowthInterval {
		o.scale, o.good = o.scale*2, 0
	}
	return nil
}

// takesHalfGradients: the unscaling is Inner's step's where Inner takes
// half gradients.
func (o *LossScaleOptimizer) takesHalfGradients() bool {
	_, scales := o.Inner.(scaledStep)
	return scales && takesHalf(o.Inner)
}

// allFinite reports whether every element of grads is finite: each times
// 0 is 0 where it is finite and NaN where it is not, so the squares' sum
// is 0 or NaN whatever the magnitudes; a pass a dtype and device for each
// (ScaleEach, SumOfSquares), half gradients as they are.
func allFinite(grads []*tensor.Tensor) bool {
	zeros := make([]*tensor.Tensor, len(grads))
	defer releaseAll(zeros)
	groups := byGroup(grads)
	for _, g := range groups {
		g.scale(zeros, ops.ScalarLike(g.ts[0], 0))
	}
	finite := true
	for _, g := range byGroup(zeros) {
		s := ops.SumOfSquares(g.ts...)
		finite = finite && s.Float() == 0
		s.Release()
	}
	return finite
}

// unscaled is grads in their variables' dtypes (a half gradient of a
// float variable widened, exactly) times sc's scale and then its factor,
// a pass a dtype and device for each (ScaleEach; one by 1 where sc
// scales by neither, so that every result is the caller's to release),
// for an optimizer that is not nn's own.
func unscaled(vars []*tape.Variable, grads []*tensor.Tensor, sc gradScale) []*tensor.Tensor {
	out := make([]*tensor.Tensor, len(grads))
	for i, g := range grads {
		if out[i] = gradIn(vars[i], g, unscaledGrads); out[i] != g {
			defer out[i].Release()
		}
	}
	var factors []func(g *gradGroup) *tensor.Tensor
	if sc.by != 1 && sc.by != 0 || sc.factor == nil {
		by := cmp.Or(sc.by, 1)
		factors = append(factors, func(g *gradGroup) *tensor.Tensor { return ops.ScalarLike(g.ts[0], by) })
	}
	if sc.factor != nil {
		factors = append(factors, func(*gradGroup) *tensor.Tensor { return sc.factor })
	}
	for k, f := range factors {
		in := out
		out = make([]*tensor.Tensor, len(grads))
		for _, g := range byGroup(in) {
			g.scale(out, f(g))
		}
		if k > 0 {
			defer releaseAll(in)
		}
	}
	return out
}

// Slots returns Inner's slots.
func (o *LossScaleOptimizer) Slots() []*tape.Variable { return o.Inner.Slots() }

// Steps returns Inner's steps (skipped steps are not counted).
func (o *LossScaleOptimizer) Steps() int { return o.Inner.Steps() }

// SetSteps sets Inner's step count.
func (o *LossScaleOptimizer) SetSteps(n int) { o.Inner.SetSteps(n) }

// setSlot restores one of Inner's slots (RestoreCheckpoint).
func (o *LossScaleOptimizer) setSlot(key string, t *tensor.Tensor) { restoreSlot(o.Inner, key, t) }

// The checkpoint metadata of the scaling state.
const (
	metaLossScale = "loss_scale"
	metaGoodSteps = "loss_scale_good_steps"
)

// checkpointMeta is the scaling state for a checkpoint's metadata.
func (o *LossScaleOptimizer) checkpointMeta() map[string]string {
	meta := innerMeta(o.Inner) // an AccumulatedOptimizer's, say
	meta[metaLossScale] = strconv.FormatFloat(o.scale, 'g', -1, 64)
	meta[metaGoodSteps] = strconv.Itoa(o.good)
	return meta
}

// restoreMeta reads the scaling state from a checkpoint's metadata and
// returns what sets it (a checkpoint without it leaves the state as it
// is), or an error naming a value that is not one, having changed
// nothing.
func (o *LossScaleOptimizer) restoreMeta(meta map[string]string) (func(), error) {
	inner, err := restoreInnerMeta(o.Inner, meta)
	if err != nil {
		return nil, err
	}
	scale, good := o.scale, o.good
	if s, ok := meta[metaLossScale]; ok {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || !(v >= 1) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("%s %q is not a scale of 1 or more", metaLossScale, s)
		}
		scale = v
	}
	if s, ok := meta[metaGoodSteps]; ok {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%s %q is not a count", metaGoodSteps, s)
		}
		good = n
	}
	return func() { inner(); o.scale, o.good = scale, good }, nil
}
