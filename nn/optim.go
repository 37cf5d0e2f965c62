package nn

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Optimizer updates variables in place from their gradients.
type Optimizer interface {
	// Apply takes one step: grads[i] is the gradient of vars[i] (nil: the
	// variable is left alone). It returns an error if the lists differ in
	// length or a gradient's shape does not match its variable. nn's
	// optimizers also take a float variable's gradient in a half type
	// (tape.Options.HalfGradients), as its exact widening. It must
	// not keep the gradients past its return: TrainStep and
	// DistributedTrainStep release their buffers afterwards, for the next
	// step to reuse.
	Apply(vars []*tape.Variable, grads []*tensor.Tensor) error
	// Slots returns the optimizer's state as variables named
	// "optimizer/<slot>/<variable>", and the step count, for checkpoints.
	Slots() []*tape.Variable
	// Steps returns how many steps have been applied.
	Steps() int
	// SetSteps restores the step count (from a checkpoint).
	SetSteps(n int)
}

// Schedule gives the learning rate at a step (counting from 0).
type Schedule func(step int) float64

// Constant is a fixed learning rate.
func Constant(lr float64) Schedule { return func(int) float64 { return lr } }

// StepDecay multiplies lr by factor every `every` steps.
func StepDecay(lr float64, every int, factor float64) Schedule {
	return func(step int) float64 { return lr * math.Pow(factor, float64(step/max(every, 1))) }
}

// Cosine decays lr to minLR along half a cosine over steps, then stays.
func Cosine(lr float64, steps int, minLR float64) Schedule {
	return func(step int) float64 {
		if step >= steps {
			return minLR
		}
		return minLR + (lr-minLR)*0.5*(1+math.Cos(math.Pi*float64(step)/float64(steps)))
	}
}

// Warmup ramps linearly from 0 to the schedule's rate over warmup steps,
// then follows the schedule (shifted by warmup).
func Warmup(s Schedule, warmup int) Schedule {
	mustArgs("Warmup", arg{"the schedule", s})
	return func(step int) float64 {
		if step < warmup {
			return s(0) * float64(step+1) / float64(warmup)
		}
		return s(step - warmup)
	}
}

// ClipByGlobalNorm scales grads so that their joint L2 norm is at most
// maxNorm, returning the scaled gradients and the norm before clipping.
// Nil gradients stay nil. The norm is read on the host, which waits for
// the device to compute it: on a GPU, ClipByGlobalNormTensor does not;
// inside a traced function, where the read becomes a guard that fails
// whenever the norm changes (trace.Function), use it too.
func ClipByGlobalNorm(grads []*tensor.Tensor, maxNorm float64) ([]*tensor.Tensor, float64) {
	total := 0.0
	for _, g := range byGroup(grads) {
		total += ops.SumOfSquaresAs(tensor.Float64, g.ts...).Float()
	}
	norm := math.Sqrt(total)
	if norm <= maxNorm || norm == 0 {
		return grads, norm
	}
	out := make([]*tensor.Tensor, len(grads))
	for _, g := range byGroup(grads) {
		g.scale(out, ops.ScalarLike(g.ts[0], maxNorm/norm))
	}
	return out, norm
}

// ClipByGlobalNormTensor is ClipByGlobalNorm computed on the gradients'
// device with no read on the host, as PyTorch's clip_grad_norm_ and
// TensorFlow's clip_by_global_norm do: the norm is a scalar tensor there
// (float64 where a gradient is float64, else float32: the half types'
// squares are summed in float32, as clip_grad_norm_ sums them), and
// every gradient is multiplied by maxNorm / max(norm, maxNorm), 1 when
// the norm is within bounds (TensorFlow's formula; PyTorch's divides by
// the norm plus 1e-6, a relative difference of 1e-6/norm), so that a
// GPU's step queues its update without waiting for its backward pass.
// The clipped values equal ClipByGlobalNorm's to rounding (the scale is
// computed in the norm's dtype and rounded to each gradient's). The
// non-nil gradients must be on one device; it panics with a
// *tensor.Error otherwise, or for none.
func ClipByGlobalNormTensor(grads []*tensor.Tensor, maxNorm float64) ([]*tensor.Tensor, *tensor.Tensor) {
	groups := byGroup(grads)
	norm := globalNorm("ClipByGlobalNormTensor", groups)
	scale := clipFactor(norm, maxNorm)
	out := make([]*tensor.Tensor, len(grads))
	for _, g := range groups {
		g.scale(out, scale)
	}
	return out, norm
}

// globalNorm is the joint L2 norm of groups' gradients (all on one
// device; op names the caller in errors) as a scalar on their device:
// float64 where a group is, else float32. One group's squares are summed
// in float64 and rounded once (SumOfSquaresAs); several groups' sums are
// added in float64 and rounded once.
func globalNorm(op string, groups []*gradGroup) *tensor.Tensor {
	if len(groups) == 0 {
		panic(tensor.NewError("nn", op, tensor.ErrArity, nil, "", "no gradient to clip"))
	}
	dt := tensor.Float32
	for _, g := range groups {
		if g.dev != groups[0].dev {
			panic(tensor.NewError("nn", op, tensor.ErrDevice, g.ts[:1], "", "gradients on %s and %s", groups[0].dev.Name(), g.dev.Name()))
		}
		if g.dt == tensor.Float64 {
			dt = tensor.Float64
		}
	}
	if len(groups) == 1 {
		return ops.Sqrt(ops.SumOfSquaresAs(dt, groups[0].ts...))
	}
	var total *tensor.Tensor
	for _, g := range groups {
		s := ops.SumOfSquaresAs(tensor.Float64, g.ts...)
		if total == nil {
			total = s
		} else {
			total = ops.Add(total, s)
		}
	}
	if dt != tensor.Float64 {
		total = ops.Cast(total, dt)
	}
	return ops.Sqrt(total)
}

// clipFactor is maxNorm / max(norm, maxNorm), in norm's dtype on its
// device.
func clipFactor(norm *tensor.Tensor, maxNorm float64) *tensor.Tensor {
	bound := ops.ScalarLike(norm, maxNorm)
	return ops.Div(bound, ops.Maximum(norm, bound))
}

// gradGroup is the gradients of one dtype on one device, and where they
// stand in the list.
type gradGroup struct {
	dt  tensor.DType
	dev device.Device
	ts  []*tensor.Tensor
	at  []int
}

// byGroup groups the non-nil grads by dtype and device, in order.
func byGroup(grads []*tensor.Tensor) []*gradGroup {
	var groups []*gradGroup
	for i, g := range grads {
		if g == nil {
			continue
		}
		k := slices.IndexFunc(groups, func(gr *gradGroup) bool { return gr.dt == g.DType() && gr.dev == g.Device() })
		if k < 0 {
			groups = append(groups, &gradGroup{dt: g.DType(), dev: g.Device()})
			k = len(groups) - 1
		}
		groups[k].ts = append(groups[k].ts, g)
		groups[k].at = append(groups[k].at, i)
	}
	return groups
}

// scale puts g's gradients times s (a scalar of g's dtype, or float32 for
// the half types, rounded to theirs) at their places in out: one pass for
// all of them (ScaleEach).
func (g *gradGroup) scale(out []*tensor.Tensor, s *tensor.Tensor) {
	if s.DType() != g.dt {
		s = ops.Cast(s, g.dt)
	}
	for i, t := range ops.ScaleEach(s, g.ts...) {
		out[g.at[i]] = t
	}
}

// slots keeps per-variable state tensors (as variables, so they can be
// checkpointed) by slot and variable name.
type slots struct {
	vars  map[string]*tape.Variable // "optimizer/<slot>/<variable>"
	keys  map[slotKey]string        // those names, built once
	order []*tape.Variable
	steps int
}

// slotsFor returns slot's variable for each vars[i] with a gradient (nil
// elsewhere). While rec captures, a slot not yet made is an error: its
// zeros would be recorded, and every replay would zero it again.
func (s *slots) slotsFor(slot string, vars []*tape.Variable, grads []*tensor.Tensor, rec *tape.StepRecord) ([]*tape.Variable, error) {
	out := make([]*tape.Variable, len(vars))
	for i, v := range vars {
		if grads[i] == nil {
			continue
		}
		if rec.Capturing() && s.vars[s.key(slot, v)] == nil {
			return nil, fmt.Errorf("nn: the optimizer's %s slot of %q is made while a step is recorded", slot, v.Name())
		}
		out[i] = s.get(slot, v)
	}
	return out, nil
}

// counted ends a step: the count grows unless rec only captures it.
func (s *slots) counted(rec *tape.StepRecord) {
	if !rec.Capturing() {
		s.steps++
	}
}

// key is slot's name for v, "optimizer/<slot>/<variable>", built once.
func (s *slots) key(slot string, v *tape.Variable) string {
	k := slotKey{slot, v}
	if name, ok := s.keys[k]; ok {
		return name
	}
	if s.keys == nil {
		s.keys = map[slotKey]string{}
	}
	name := "optimizer/" + slot + "/" + v.Name()
	s.keys[k] = name
	return name
}

// slotKey is a slot of a variable, as slots.key caches its name.
type slotKey struct {
	slot string
	v    *tape.Variable
}

func (s *slots) get(slot string, v *tape.Variable) *tape.Variable {
	key := s.key(slot, v)
	if s.vars == nil {
		s.vars = map[string]*tape.Variable{}
	}
	sv, ok := s.vars[key]
	if !ok {
		zeros := ops.ZerosLike(v.Value())
		sv = tape.NewVariable(key, zeros) // a copy
		zeros.Release()
		s.vars[key] = sv
		s.order = append(s.order, sv)
	}
	return sv
}

// Slots returns the optimizer's state (momentum, moment estimates...) as
// variables named "optimizer/<slot>/<variable>", in the order they were
// made, for checkpoints.
func (s *slots) Slots() []*tape.Variable { return s.order }

// Steps returns how many steps Apply has taken (the step a Schedule is
// asked about next).
func (s *slots) Steps() int { return s.steps }

// SetSteps sets the step count, as RestoreCheckpoint does from a
// checkpoint.
func (s *slots) SetSteps(n int) { s.steps = n }

// checkGrads checks that each gradient fits its variable: its shape, and
// its dtype or, for a float32 or float64 variable, a half type (a
// mixed-precision step's gradient: tape.Options.HalfGradients).
func checkGrads(vars []*tape.Variable, grads []*tensor.Tensor) error {
	if len(vars) != len(grads) {
		return fmt.Errorf("nn: %d variables and %d gradients", len(vars), len(grads))
	}
	for i, g := range grads {
		if g == nil {
			continue
		}
		v := vars[i].Value()
		dtypeFits := g.DType() == v.DType() || g.DType().IsHalf() && (v.DType() == tensor.Float32 || v.DType() == tensor.Float64)
		if !g.Shape().Equal(v.Shape()) || !dtypeFits {
			return fmt.Errorf("nn: gradient %s does not fit variable %q (%s)", tensor.Describe(g), vars[i].Name(), tensor.Describe(vars[i].Value()))
		}
	}
	return nil
}

func scalar(like *tensor.Tensor, v float64) *tensor.Tensor { return ops.ScalarLike(like, v) }

// gradScale is what a step multiplies each gradient by before its rule
// reads it, each product rounded to the variable's dtype: the constant by
// (a loss scale's inverse; 1 for none) and then, where not nil, the
// scalar factor on the gradients' device (a clip's), as
// ops.AdamParams.GradScale and GradFactor.
type gradScale struct {
	by     float64
	factor *tensor.Tensor
}

// unscaledGrads is the gradScale of gradients taken as they are.
var unscaledGrads = gradScale{by: 1}

// gradIn is g in v's dtype (a half gradient of a float variable cast,
// exactly) times sc's scale and factor where they are not 1, for the
// steps written in ops.
func gradIn(v *tape.Variable, g *tensor.Tensor, sc gradScale) *tensor.Tensor {
	if g == nil {
		return nil
	}
	if g.DType() != v.Value().DType() {
		g = ops.Cast(g, v.Value().DType())
	}
	if sc.by != 1 && sc.by != 0 {
		g = ops.Mul(g, scalar(g, sc.by))
	}
	if f := sc.factor; f != nil {
		if f.Device() != g.Device() {
			moved, err := f.To(g.Device())
			if err != nil {
				panic(tensor.NewError("nn", "optimizer step", err, []*tensor.Tensor{f}, "", "copying the gradients' factor to %s: %v", g.Device().Name(), err))
			}
			f = moved
		}
		if f.DType() != g.DType() {
			f = ops.Cast(f, g.DType())
		}
		g = ops.Mul(g, f)
	}
	return g
}

// scaledStep is an optimizer that takes its gradients scaled (nn's
// own): applyThrough is Apply with each gradient multiplied by sc first
// (each product rounded to its variable's dtype), in the step's own pass
// where the step is fused (ops.AdamParams.GradScale and GradFactor), its
// device steps through rec where not nil (tape.StepRecord).
// LossScaleOptimizer unscales so, and ClippedOptimizer clips so.
type scaledStep interface {
	applyThrough(rec *tape.StepRecord, vars []*tape.Variable, grads []*tensor.Tensor, sc gradScale) error
}

// halfGradients says the optimizer takes half gradients of its float
// variables (nn's own do), so that the train steps ask their tapes for
// them.
type halfGradients interface{ takesHalfGradients() bool }

// takesHalf reports whether opt takes half gradients: then a mixed-
// precision model's weights get their gradients in the half type (their
// casts' outputs'), which the optimizer's step widens.
func takesHalf(opt Optimizer) bool {
	h, ok := opt.(halfGradients)
	return ok && h.takesHalfGradients()
}

func (*SGD) takesHalfGradients() bool     { return true }
func (*Adam) takesHalfGradients() bool    { return true }
func (*RMSProp) takesHalfGradients() bool { return true }

// average sets slot = decay·slot + (1-decay)·x, a moving average.
func average(slot *tape.Variable, x *tensor.Tensor, decay float64) {
	slot.Assign(ops.Add(ops.Mul(slot.Value(), scalar(x, decay)), ops.Mul(x, scalar(x, 1-decay))))
}

// accumulate sets slot = decay·slot + x, a momentum buffer.
func accumulate(slot *tape.Variable, x *tensor.Tensor, decay float64) {
	slot.Assign(ops.Add(ops.Mul(slot.Value(), scalar(x, decay)), x))
}

// SGD is stochastic gradient descent, with optional momentum (heavy ball,
// v = μv + g; w -= lr v) and Nesterov's variant (w -= lr (g + μv)).
type SGD struct {
	LR       Schedule
	Momentum float64
	Nesterov bool
	slots
}

// NewSGD returns plain SGD at rate lr (set Momentum and Nesterov for the
// others), as NewAdam and NewRMSProp return theirs.
func NewSGD(lr Schedule) *SGD { return &SGD{LR: lr} }

// Apply takes one step: grads[i] is the gradient of vars[i] (nil leaves
// it alone), at the rate the schedule gives for Steps(). It returns an
// error, changing nothing, if the lists differ in length or a gradient's
// shape or dtype does not match its variable.
func (o *SGD) Apply(vars []*tape.Variable, grads []*tensor.Tensor) error {
	return o.applyThrough(nil, vars, grads, unscaledGrads)
}

// recordable: SGD's step is a device's (momentum's) where Momentum is set.
func (o *SGD) recordable() bool { return o.Momentum != 0 }

// applyThrough is Apply with each gradient scaled by sc (scaledStep),
// its device steps through rec (tape.StepRecord).
func (o *SGD) applyThrough(rec *tape.StepRecord, vars []*tape.Variable, grads []*tensor.Tensor, sc gradScale) error {
	if err := checkGrads(vars, grads); err != nil {
		return err
	}
	if rec != nil && !o.recordable() {
		return errors.New("nn: SGD without momentum takes no device step to record")
	}
	lr := o.LR(o.steps)
	var done []bool
	if o.Momentum != 0 {
		// One fused pass per variable on the CPU, one launch for the model
		// on a GPU; ops for the rest.
		vels, err := o.slotsFor("momentum", vars, grads, rec)
		if err != nil {
			return err
		}
		done = rec.MomentumUpdateAll(vars, vels, grads, ops.MomentumParams{LR: lr, Momentum: o.Momentum, Nesterov: o.Nesterov, GradScale: sc.by, GradFactor: sc.factor})
	}
	for i, v := range vars {
		g := grads[i]
		if g == nil || done != nil && done[i] {
			continue
		}
		g = gradIn(v, g, sc)
		if o.Momentum == 0 {
			v.AssignScaled(-lr, g)
			continue
		}
		vel := o.get("momentum", v)
		accumulate(vel, g, o.Momentum)
		step := vel.Value()
		if o.Nesterov {
			step = ops.Add(g, ops.Mul(vel.Value(), scalar(g, o.Momentum)))
		}
		v.AssignScaled(-lr, step)
	}
	o.counted(rec)
	return nil
}

// Adam is Kingma & Ba's optimizer: m = β1 m + (1-β1) g; v = β2 v + (1-β2) g²;
// w -= lr m̂ / (sqrt(v̂) + ε) with bias-corrected m̂, v̂. WeightDecay > 0
// makes it AdamW (decoupled: w -= lr·wd·w as well), for every variable,
// or for those Decays reports where it is set (nanoGPT's groups:
// DecayMatrices).
type Adam struct {
	LR                Schedule
	Beta1, Beta2, Eps float64
	WeightDecay       float64
	Decays            func(*tape.Variable) bool // nil: every variable decays
	slots
}

// DecayMatrices reports whether v has two or more dimensions: the
// kernels and embeddings nanoGPT decays, not the biases and norms' gains.
// It is a value for Adam.Decays.
func DecayMatrices(v *tape.Variable) bool { return v != nil && v.Value().Rank() >= 2 }

// NewAdam returns Adam with β1 0.9, β2 0.999, ε 1e-7 (Keras's defaults).
func NewAdam(lr Schedule) *Adam { return &Adam{LR: lr, Beta1: 0.9, Beta2: 0.999, Eps: 1e-7} }

// NewAdamW returns AdamW: Adam with decoupled weight decay.
func NewAdamW(lr Schedule, weightDecay float64) *Adam {
	a := NewAdam(lr)
	a.WeightDecay = weightDecay
	return a
}

// Apply takes one step: grads[i] is the gradient of vars[i] (nil leaves
// it alone), at the rate the schedule gives for Steps(). It returns an
// error, changing nothing, if the lists differ in length or a gradient's
// shape or dtype does not match its variable.
func (o *Adam) Apply(vars []*tape.Variable, grads []*tensor.Tensor) error {
	return o.applyThrough(nil, vars, grads, unscaledGrads)
}

// recordable: Adam's steps are always a device's.
func (o *Adam) recordable() bool { return true }

// applyThrough is Apply with each gradient scaled by sc (scaledStep),
// its device steps through rec (tape.StepRecord).
func (o *Adam) applyThrough(rec *tape.StepRecord, vars []*tape.Variable, grads []*tensor.Tensor, sc gradScale) error {
	if err := checkGrads(vars, grads); err != nil {
		return err
	}
	lr := o.LR(o.steps)
	t := float64(o.steps + 1)
	p := ops.AdamParams{LR: lr, Beta1: o.Beta1, Beta2: o.Beta2, C1: 1 - math.Pow(o.Beta1, t), C2: 1 - math.Pow(o.Beta2, t), Eps: o.Eps, WeightDecay: o.WeightDecay, GradScale: sc.by, GradFactor: sc.factor}
	if o.WeightDecay == 0 || o.Decays == nil {
		if err := o.update(rec, vars, grads, p); err != nil {
			return err
		}
	} else {
		var dv, kv []*tape.Variable // the decayed group and the kept
		var dg, kg []*tensor.Tensor
		for i, v := range vars {
			if o.Decays(v) {
				dv, dg = append(dv, v), append(dg, grads[i])
			} else {
				kv, kg = append(kv, v), append(kg, grads[i])
			}
		}
		if err := o.update(rec, dv, dg, p); err != nil {
			return err
		}
		p.WeightDecay = 0
		if err := o.update(rec, kv, kg, p); err != nil {
			return err
		}
	}
	o.counted(rec)
	return nil
}

// update steps vars by p, its device steps through rec.
func (o *Adam) update(rec *tape.StepRecord, vars []*tape.Variable, grads []*tensor.Tensor, p ops.AdamParams) error {
	ms, err := o.slotsFor("m", vars, grads, rec)
	if err != nil {
		return err
	}
	ss, err := o.slotsFor("v", vars, grads, rec)
	if err != nil {
		return err
	}
	// One fused pass per variable on the CPU, one launch for the model on
	// a GPU; ops for the rest.
	done := rec.AdamUpdateAll(vars, ms, ss, grads, p)
	for i, v := range vars {
		g := grads[i]
		if g == nil || done[i] {
			continue
		}
		g = gradIn(v, g, gradScale{p.GradScale, p.GradFactor})
		m, s := ms[i], ss[i]
		average(m, g, p.Beta1)
		average(s, ops.Square(g), p.Beta2)
		mhat := ops.Div(m.Value(), scalar(g, p.C1))
		vhat := ops.Div(s.Value(), scalar(g, p.C2))
		update := ops.Div(mhat, ops.Add(ops.Sqrt(vhat), scalar(g, p.Eps)))
		if p.WeightDecay > 0 {
			update = ops.Add(update, ops.Mul(v.Value(), scalar(g, p.WeightDecay)))
		}
		v.AssignScaled(-p.LR, update)
	}
	return nil
}

// RMSProp keeps a running mean of squared gradients: s = ρs + (1-ρ)g²;
// w -= lr g / (sqrt(s) + ε), with optional momentum on the update.
type RMSProp struct {
	LR                 Schedule
	Rho, Momentum, Eps float64
	slots
}

// NewRMSProp returns RMSProp with ρ 0.9 and ε 1e-7.
func NewRMSProp(lr Schedule) *RMSProp { return &RMSProp{LR: lr, Rho: 0.9, Eps: 1e-7} }

// Apply takes one step: grads[i] is the gradient of vars[i] (nil leaves
// it alone), at the rate the schedule gives for Steps(). It returns an
// error, changing nothing, if the lists differ in length or a gradient's
// shape or dtype does not match its variable.
func (o *RMSProp) Apply(vars []*tape.Variable, grads []*tensor.Tensor) error {
	return o.applyThrough(nil, vars, grads, unscaledGrads)
}

// recordable: RMSProp's steps are always a device's.
func (o *RMSProp) recordable() bool { return true }

// applyThrough is Apply with each gradient scaled by sc (scaledStep),
// its device steps through rec (tape.StepRecord).
func (o *RMSProp) applyThrough(rec *tape.StepRecord, vars []*tape.Variable, grads []*tensor.Tensor, sc gradScale) error {
	if err := checkGrads(vars, grads); err != nil {
		return err
	}
	lr := o.LR(o.steps)
	// One fused pass per variable on the CPU, one launch for the model on
	// a GPU; ops for the rest.
	ss, err := o.slotsFor("rms", vars, grads, rec)
	if err != nil {
		return err
	}
	var moms []*tape.Variable
	if o.Momentum > 0 {
		if moms, err = o.slotsFor("momentum", vars, grads, rec); err != nil {
			return err
		}
	}
	done := rec.RMSPropUpdateAll(vars, ss, moms, grads, ops.RMSPropParams{LR: lr, Rho: o.Rho, Eps: o.Eps, Momentum: o.Momentum, GradScale: sc.by, GradFactor: sc.factor})
	for i, v := range vars {
		g := grads[i]
		if g == nil || done[i] {
			continue
		}
		g = gradIn(v, g, sc)
		s := o.get("rms", v)
		average(s, ops.Square(g), o.Rho)
		update := ops.Div(g, ops.Add(ops.Sqrt(s.Value()), scalar(g, o.Eps)))
		if o.Momentum > 0 {
			mom := o.get("momentum", v)
			accumulate(mom, update, o.Momentum)
			update = mom.Value()
		}
		v.AssignScaled(-lr, update)
	}
	o.counted(rec)
	return nil
}
