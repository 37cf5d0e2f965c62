package nn

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// AccumulatedOptimizer takes Inner's step once every Every calls of
// Apply, with the mean of the gradients those calls were given, and
// leaves the variables alone in between: gradient accumulation, so that
// a model trains on batches Every times the size that fits in memory
// (Keras's gradient_accumulation_steps; a PyTorch loop's backward over
// Every micro-batches, each loss divided by Every, then one step). With
// TrainStep, Fit and the traced steps, a step is then a micro-batch.
//
// The sums are kept in the variables' dtypes (float32 for a
// mixed-precision model's half gradients, widened) as slots named
// "optimizer/accumulated/<variable>", saved in checkpoints with Inner's
// slots and the count of gradients summed so far; Steps counts Inner's
// steps. A variable without a gradient in a call adds nothing to its sum,
// and one without a gradient in any call of a round gets none in the
// step (nil: Inner leaves it alone).
// To clip the mean gradient, wrap the ClippedOptimizer inside
// (NewAccumulatedOptimizer(NewClippedOptimizer(adam, 1), 4)); a
// LossScaleOptimizer goes outside, so that a micro-batch whose gradients
// are not finite is skipped before it is summed.
type AccumulatedOptimizer struct {
	Inner  Optimizer
	Every  int
	sums   slots           // the sums, by variable; sums.steps counts the calls summed
	summed map[string]bool // the variables (by name) with a sum this round
}

// NewAccumulatedOptimizer wraps inner, stepping every every calls. It
// panics with a *tensor.Error for a nil inner or every below 1.
func NewAccumulatedOptimizer(inner Optimizer, every int) *AccumulatedOptimizer {
	mustArgs("NewAccumulatedOptimizer", arg{"the inner optimizer", inner})
	if every < 1 {
		panic(tensor.NewError("nn", "NewAccumulatedOptimizer", tensor.ErrAttr, nil, "", "a step every %d calls: it must be 1 or more", every))
	}
	return &AccumulatedOptimizer{Inner: inner, Every: every}
}

// The slot of the sums.
const accumulatedSlot = "accumulated"

// Apply adds grads to the sums (the first gradient of a round takes its
// variable's sum's place) and, on every Every-th call, takes Inner's step
// with their means, ending the round. It returns Inner's
// error, or one for lists of different lengths or a gradient that does
// not fit its variable, having summed nothing.
func (o *AccumulatedOptimizer) Apply(vars []*tape.Variable, grads []*tensor.Tensor) error {
	return o.apply(vars, grads, nil)
}

// apply is Apply where, at the end of a round, reduce (nil: none) maps
// the sums (nil for a variable without one) to those the means are taken
// of: DistributedTrainStep sums them over the ranks there, once a round,
// where each micro-batch's gradients were summed over them (PyTorch DDP's
// no_sync).
func (o *AccumulatedOptimizer) apply(vars []*tape.Variable, grads []*tensor.Tensor, reduce func([]*tensor.Tensor) []*tensor.Tensor) error {
	if err := checkGrads(vars, grads); err != nil {
		return fmt.Errorf("nn: AccumulatedOptimizer: %w", err)
	}
	if o.Every < 1 {
		return fmt.Errorf("nn: AccumulatedOptimizer: a step every %d calls: it must be 1 or more", o.Every)
	}
	sums, err := o.sums.slotsFor(accumulatedSlot, vars, grads, nil)
	if err != nil {
		return err
	}
	if o.sums.steps == 0 || o.summed == nil { // a round begins
		o.summed = map[string]bool{}
	}
	if err := tensor.Catch(func() {
		for i, v := range vars {
			switch g := grads[i]; {
			case g != nil && !o.summed[v.Name()]:
				sums[i].Assign(gradIn(v, g, unscaledGrads))
			case g != nil:
				sums[i].AssignAdd(gradIn(v, g, unscaledGrads))
			}
		}
	}); err != nil {
		return fmt.Errorf("nn: AccumulatedOptimizer: %w", err)
	}
	for i, v := range vars {
		if grads[i] != nil {
			o.summed[v.Name()] = true
		}
	}
	if o.sums.steps++; o.sums.steps < o.Every {
		return nil
	}
	o.sums.steps = 0
	means := make([]*tensor.Tensor, len(vars))
	if err := tensor.Catch(func() {
		sums := make([]*tensor.Tensor, len(vars))
		for i, v := range vars {
			if o.summed[v.Name()] {
				sums[i] = o.sums.vars[o.sums.key(accumulatedSlot, v)].Value()
			}
		}
		if reduce != nil {
			sums = reduce(sums)
			defer releaseAll(sums)
		}
		for i, s := range sums {
			if s != nil {
				means[i] = ops.Mul(s, ops.ScalarLike(s, 1/float64(o.Every)))
			}
		}
	}); err != nil {
		return fmt.Errorf("nn: AccumulatedOptimizer: %w", err)
	}
	defer releaseAll(means)
	return o.Inner.Apply(vars, means)
}

// Pending is the number of calls whose gradients are summed and not yet
// stepped with (0 right after a step).
func (o *AccumulatedOptimizer) Pending() int { return o.sums.steps }

// Slots returns Inner's slots and the sums.
func (o *AccumulatedOptimizer) Slots() []*tape.Variable {
	return append(append([]*tape.Variable{}, o.Inner.Slots()...), o.sums.Slots()...)
}

// Steps returns Inner's steps (one per Every calls).
func (o *AccumulatedOptimizer) Steps() int { return o.Inner.Steps() }

// SetSteps sets Inner's step count.
func (o *AccumulatedOptimizer) SetSteps(n int) { o.Inner.SetSteps(n) }

// setSlot restores a sum or one of Inner's slots (RestoreCheckpoint).
func (o *AccumulatedOptimizer) setSlot(key string, t *tensor.Tensor) {
	if strings.HasPrefix(key, "optimizer/"+accumulatedSlot+"/") {
		o.sums.setSlot(key, t)
		return
	}
	restoreSlot(o.Inner, key, t)
}

// The checkpoint metadata of the calls summed and the variables summed.
const (
	metaAccumulated     = "accumulated_calls"
	metaAccumulatedVars = "accumulated_variables"
)

// checkpointMeta is the count of calls summed and the names of the
// variables summed (a JSON list), beside Inner's metadata.
func (o *AccumulatedOptimizer) checkpointMeta() map[string]string {
	meta := innerMeta(o.Inner)
	meta[metaAccumulated] = strconv.Itoa(o.sums.steps)
	names, _ := json.Marshal(slices.Sorted(maps.Keys(o.summed)))
	meta[metaAccumulatedVars] = string(names)
	return meta
}

// restoreMeta reads the count (and Inner's state) from a checkpoint's
// metadata, or returns an error naming a value that is not a count
// below Every, having changed nothing.
func (o *AccumulatedOptimizer) restoreMeta(meta map[string]string) (func(), error) {
	inner, err := restoreInnerMeta(o.Inner, meta)
	if err != nil {
		return nil, err
	}
	n, summed := o.sums.steps, o.summed
	if s, ok := meta[metaAccumulated]; ok {
		if n, err = strconv.Atoi(s); err != nil || n < 0 || n >= max(o.Every, 1) {
			return nil, fmt.Errorf("%s %q is not a count below %d", metaAccumulated, s, o.Every)
		}
		var names []string
		if s := meta[metaAccumulatedVars]; s != "" {
			if err := json.Unmarshal([]byte(s), &names); err != nil {
				return nil, fmt.Errorf("%s %q is not a list of names: %v", metaAccumulatedVars, s, err)
			}
		}
		summed = map[string]bool{}
		for _, name := range names {
			summed[name] = true
		}
	}
	return func() { inner(); o.sums.steps, o.summed = n, summed }, nil
}

// innerMeta is opt's checkpoint metadata (a copy), empty where it keeps
// none: a wrapper's inner optimizer's, saved beside its own.
func innerMeta(opt Optimizer) map[string]string {
	if m, ok := opt.(interface{ checkpointMeta() map[string]string }); ok {
		return maps.Clone(m.checkpointMeta())
	}
	return map[string]string{}
}

// restoreInnerMeta is opt's restoreMeta, or what restores nothing where
// opt keeps no metadata.
func restoreInnerMeta(opt Optimizer, meta map[string]string) (func(), error) {
	if r, ok := opt.(interface {
		restoreMeta(map[string]string) (func(), error)
	}); ok {
		return r.restoreMeta(meta)
	}
	return func() {}, nil
}
