package tape

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"weak"

	"github.com/eagerflow/eagerflow/backend"
	"github.com/eagerflow/eagerflow/backend/cpu"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/castcache"
	"github.com/eagerflow/eagerflow/internal/plumb"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Variable is the one mutable kind of tensor: a named buffer that optimizers
// update in place. Every tape watches variables without being asked. Ops
// read the variable's value when they run; views of it (Reshape, Transpose,
// Identity) are snapshot copies, so later assignments do not change them.
//
// Assignments are not recorded on tapes and are not synchronized: do not
// assign while another goroutine runs ops on the variable. Each one is
// counted, so a tape asked for a gradient whose rules would read values
// of the variable that changed since its ops ran (the forward pass's w in
// the gradient of w·x) refuses with a *tensor.Error naming the variable,
// rather than use the new values, as PyTorch's version counters do.
type Variable struct {
	name string
	t    *tensor.Tensor
}

// NewVariable returns a variable named name holding a copy of init, on
// init's device.
func NewVariable(name string, init *tensor.Tensor) *Variable {
	need("NewVariable", "the initial value of "+name, init)
	t, err := tensor.Empty(init.Device(), init.DType(), init.Shape().Clone())
	if err != nil {
		panic(err)
	}
	writeInto(t, init.Contiguous())
	plumb.Tensor.SetFlags(t, tensor.FlagVariable)
	variableNames.Store(weak.Make(t), name)
	return &Variable{name: name, t: t}
}

// variableNames maps each variable's tensor to the variable's name, for
// errors that have only the tensor (weakly: the names of variables
// collected stay, a string each).
var variableNames sync.Map // weak.Pointer[tensor.Tensor] -> string

func init() { plumb.VariableName = func(t any) string { return variableName(t.(*tensor.Tensor)) } }

// variableName is the name of the variable whose tensor t is, or "".
func variableName(t *tensor.Tensor) string {
	if n, ok := variableNames.Load(weak.Make(t)); ok {
		return n.(string)
	}
	return ""
}

// bump counts an assignment: the tapes that recorded ops reading the
// variable know its values changed since (node.versions), and a trace
// running on this goroutine that its graph would not repeat it.
func (v *Variable) bump() {
	plumb.Tensor.Bump(v.t)
	if plumb.AssignedHere != nil {
		plumb.AssignedHere(v.t)
	}
}

// MarkChanged counts an assignment that none of the variable's methods
// made: a device recording (a CUDA graph) that writes the variable's
// buffer each time it is replayed, such as nn.RecordedTrainStep's copies
// of BatchNorm's running statistics. Call it before each replay, so that
// tapes (which refuse gradients from values changed since their ops ran)
// and kept casts (ops.Cast's copies of a variable) know the values
// changed.
func (v *Variable) MarkChanged() { v.bump() }

// Name returns the variable's name.
func (v *Variable) Name() string { return v.name }

// Value returns the tensor that holds the variable. It is the same tensor
// for the variable's whole life (so tapes and traced functions can refer to
// it); its elements change on assignment.
func (v *Variable) Value() *tensor.Tensor { return v.t }

// String formats the variable's name and value.
func (v *Variable) String() string { return v.name + " = " + v.t.String() }

func (v *Variable) check(op string, x *tensor.Tensor) { v.checkAs(op, x, false) }

// checkGrad is check for a gradient, which may also be of a half type
// where the variable is float32 or float64 (Options.HalfGradients).
func (v *Variable) checkGrad(op string, g *tensor.Tensor) {
	v.checkAs(op, g, g != nil && g.DType().IsHalf() && (v.t.DType() == tensor.Float32 || v.t.DType() == tensor.Float64))
}

// checkAs is check, any dtype passing where anyDType is set.
func (v *Variable) checkAs(op string, x *tensor.Tensor, anyDType bool) {
	in := []*tensor.Tensor{v.t, x}
	switch {
	case x != nil && x != v.t && !x.IsVariable() && plumb.VariesInTrace != nil && x.Traced() != nil && plumb.VariesInTrace(x):
		panic(tensor.NewError("tape", op, tensor.ErrValue, in, "",
			"the value for variable %q is computed inside a traced function (trace.Function): an assignment is not an op, so the graph would not repeat it on later calls; return the value and assign it after the call (nn.TracedTrainStep does so for a training step)", v.name))
	case x == nil:
		panic(tensor.NewError("tape", op, tensor.ErrArity, in, "", "the value for variable %q is nil", v.name))
	case x.DType() != v.t.DType() && !anyDType:
		panic(tensor.NewError("tape", op, tensor.ErrDType, in, "", "variable %q is %v, value is %v", v.name, v.t.DType(), x.DType()))
	case !x.Shape().Equal(v.t.Shape()):
		panic(tensor.NewError("tape", op, tensor.ErrShape, in, "", "variable %q has shape %v, value has %v", v.name, v.t.Shape(), x.Shape()))
	case x.Device() != v.t.Device():
		panic(tensor.NewError("tape", op, tensor.ErrDevice, in, "", "variable %q is on %s, value on %s", v.name, v.t.Device().Name(), x.Device().Name()))
	}
}

// here returns x on the variable's device: a variable's updates stay
// where it lives, so a value that a placement scope (device.With) made
// on another device is copied there. Outside scopes x is returned as it
// is, for check to refuse another device.
func (v *Variable) here(op string, x *tensor.Tensor) *tensor.Tensor {
	if x == nil || x.Device() == v.t.Device() {
		return x
	}
	if d, _ := device.Scope(); d == nil {
		return x
	}
	moved, err := x.To(v.t.Device())
	if err != nil {
		panic(tensor.NewError("tape", op, err, []*tensor.Tensor{v.t, x}, "", "copying the value for variable %q to %s: %v", v.name, v.t.Device().Name(), err))
	}
	return moved
}

// onDevice runs fn, whose ops read the variable, on the variable's device
// while a placement scope for another device is in force.
func (v *Variable) onDevice(fn func()) {
	if d, _ := device.Scope(); d == nil || d == v.t.Device() {
		fn()
		return
	}
	if err := device.With(v.t.Device(), fn); err != nil {
		panic(err)
	}
}

// writeInto copies src's elements (row-major, same dtype, shape and
// device) into dst's buffer, on their device.
func writeInto(dst, src *tensor.Tensor) {
	n := src.NumElements()
	if err := dst.Device().Copy(dst.Buffer(), 0, []int{1}, src.Buffer(), 0, []int{1}, []int{n}, src.DType().Size()); err != nil {
		panic(err)
	}
}

// Assign sets the variable to x (same dtype, shape and device; panics with a
// *tensor.Error otherwise, leaving the variable unchanged). In a placement
// scope (device.With) x may be on the scope's device: it is copied to the
// variable's, where the variable's updates stay.
func (v *Variable) Assign(x *tensor.Tensor) {
	x = v.here("Assign", x)
	v.check("Assign", x)
	v.bump()
	writeInto(v.t, x.Contiguous())
}

// AssignAdd adds x to the variable in place.
func (v *Variable) AssignAdd(x *tensor.Tensor) { v.assignScaled("AssignAdd", 1, x) }

// AssignSub subtracts x from the variable in place.
func (v *Variable) AssignSub(x *tensor.Tensor) { v.assignScaled("AssignSub", -1, x) }

// AssignScaled adds alpha*x to the variable in place (the SGD update with
// alpha = -learning rate), without allocating on the CPU for float dtypes.
// It runs on the variable's device, taking x there as Assign does.
func (v *Variable) AssignScaled(alpha float64, x *tensor.Tensor) {
	v.assignScaled("AssignScaled", alpha, x)
}

// assignScaled is AssignScaled, its errors naming op (the method called).
func (v *Variable) assignScaled(op string, alpha float64, x *tensor.Tensor) {
	x = v.here(op, x)
	v.check(op, x)
	v.bump()
	x = x.Contiguous()
	if _, onHost := v.t.Buffer().(interface{ Bytes() []byte }); onHost {
		switch v.t.DType() {
		case tensor.Float32:
			cpu.AxpyInPlace(backend.HostData[float32](v.t), float32(alpha), backend.HostData[float32](x))
			return
		case tensor.Float64:
			cpu.AxpyInPlace(backend.HostData[float64](v.t), alpha, backend.HostData[float64](x))
			return
		}
	}
	v.onDevice(func() {
		if alpha != 1 { // x·1 is x: one pass fewer
			x = ops.Mul(x, ops.ScalarLike(x, alpha))
		}
		writeInto(v.t, ops.Add(v.t, x))
	})
}

// AdamUpdateAll takes one Adam step on each vars[i] in place with its
// moment slots ms[i] and ss[i] and gradient grads[i] (a nil gradient
// skips the variable): on the host a fused pass each (AdamUpdate's), on a
// device that takes whole steps (device.Stepper: a GPU) one call for all
// its variables of a dtype, the same formula to the bit. done[i] reports
// which it updated (p.GradScale applied); the caller takes the others'
// steps with ops, the scale too. A
// float32 or float64 variable's gradient may be of a half type
// (Options.HalfGradients): the step is its widening's, and on a Stepper
// it also writes the variable's kept cast to that type (ops.Cast). It
// panics with a *tensor.Error, before changing anything, on lists of
// different lengths or a gradient or slot that does not match its
// variable, and with the device's error if its step fails.
func AdamUpdateAll(vars, ms, ss []*Variable, grads []*tensor.Tensor, p ops.AdamParams) (done []bool) {
	return (*StepRecord)(nil).AdamUpdateAll(vars, ms, ss, grads, p)
}

// AdamUpdateAll is the package's AdamUpdateAll through r (StepRecord).
func (r *StepRecord) AdamUpdateAll(vars, ms, ss []*Variable, grads []*tensor.Tensor, p ops.AdamParams) (done []bool) {
	s := device.StepSettings{Rule: device.StepAdam, LR: p.LR, Beta1: p.Beta1, Beta2: p.Beta2, C1: p.C1, C2: p.C2, Eps: p.Eps, WeightDecay: p.WeightDecay, GradScale: p.GradScale}
	return updateAll(r, "AdamUpdateAll", vars, [][]*Variable{ms, ss}, grads, s, p.GradFactor, func(i int, g, f *tensor.Tensor) bool {
		q := p
		q.GradFactor = f
		return vars[i].AdamUpdate(ms[i], ss[i], g, q)
	})
}

// MomentumUpdateAll takes one step of SGD with momentum on each vars[i]
// in place with its velocity vels[i] and gradient grads[i] (a nil
// gradient skips the variable), by ops.MomentumParams' formula: on the
// host a fused pass each (cpu.MomentumInPlace), on a device that takes
// whole steps (device.Stepper: a GPU) one call for all its variables of
// a dtype, the same formula to the bit. done[i] reports which it
// updated (the float dtypes on such devices); the caller takes the
// others' steps with ops. It panics as AdamUpdateAll does.
func MomentumUpdateAll(vars, vels []*Variable, grads []*tensor.Tensor, p ops.MomentumParams) (done []bool) {
	return (*StepRecord)(nil).MomentumUpdateAll(vars, vels, grads, p)
}

// MomentumUpdateAll is the package's MomentumUpdateAll through r
// (StepRecord).
func (r *StepRecord) MomentumUpdateAll(vars, vels []*Variable, grads []*tensor.Tensor, p ops.MomentumParams) (done []bool) {
	s := device.StepSettings{Rule: device.StepMomentum, LR: p.LR, Momentum: p.Momentum, Nesterov: p.Nesterov, GradScale: p.GradScale}
	return updateAll(r, "MomentumUpdateAll", vars, [][]*Variable{vels}, grads, s, p.GradFactor, func(i int, g, f *tensor.Tensor) bool {
		q := p
		q.GradFactor = f
		return hostUpdate(vars[i], []*Variable{vels[i]}, g, func(w []float32, sl [][]float32, g []float32) {
			cpu.MomentumInPlace(w, sl[0], g, q)
		}, func(w []float64, sl [][]float64, g []float64) {
			cpu.MomentumInPlace(w, sl[0], g, q)
		})
	})
}

// RMSPropUpdateAll takes one RMSProp step on each vars[i] in place with
// its mean square ss[i], its momentum moms[i] (moms is nil where
// p.Momentum is 0) and gradient grads[i] (a nil gradient skips the
// variable), by ops.RMSPropParams' formula, as MomentumUpdateAll does
// (cpu.RMSPropInPlace on the host); it panics as AdamUpdateAll does.
func RMSPropUpdateAll(vars, ss, moms []*Variable, grads []*tensor.Tensor, p ops.RMSPropParams) (done []bool) {
	return (*StepRecord)(nil).RMSPropUpdateAll(vars, ss, moms, grads, p)
}

// RMSPropUpdateAll is the package's RMSPropUpdateAll through r
// (StepRecord).
func (r *StepRecord) RMSPropUpdateAll(vars, ss, moms []*Variable, grads []*tensor.Tensor, p ops.RMSPropParams) (done []bool) {
	s := device.StepSettings{Rule: device.StepRMSProp, LR: p.LR, Rho: p.Rho, Eps: p.Eps, Momentum: p.Momentum, GradScale: p.GradScale}
	slots := [][]*Variable{ss}
	if p.Momentum > 0 {
		slots = append(slots, moms)
	}
	return updateAll(r, "RMSPropUpdateAll", vars, slots, grads, s, p.GradFactor, func(i int, g, f *tensor.Tensor) bool {
		var sl []*Variable
		for _, list := range slots {
			sl = append(sl, list[i])
		}
		q := p
		q.GradFactor = f
		return hostUpdate(vars[i], sl, g, func(w []float32, sl [][]float32, g []float32) {
			cpu.RMSPropInPlace(w, sl[0], at(sl, 1), g, q)
		}, func(w []float64, sl [][]float64, g []float64) {
			cpu.RMSPropInPlace(w, sl[0], at(sl, 1), g, q)
		})
	})
}

// at returns xs[i], or nil past its end.
func at[T any](xs [][]T, i int) []T {
	if i < len(xs) {
		return xs[i]
	}
	return nil
}

// hostUpdate runs a fused host kernel on v, its slots and g when all are
// in host memory and of a float dtype, and reports whether it did.
func hostUpdate(v *Variable, slots []*Variable, g *tensor.Tensor, f32 func(w []float32, slots [][]float32, g []float32), f64 func(w []float64, slots [][]float64, g []float64)) bool {
	for _, t := range append([]*Variable{v}, slots...) {
		if _, onHost := t.t.Buffer().(interface{ Bytes() []byte }); !onHost {
			return false
		}
	}
	g = g.Contiguous()
	if _, onHost := g.Buffer().(interface{ Bytes() []byte }); !onHost {
		return false
	}
	switch v.t.DType() {
	case tensor.Float32:
		f32(backend.HostData[float32](v.t), hostSlots[float32](slots), backend.HostData[float32](g))
	case tensor.Float64:
		f64(backend.HostData[float64](v.t), hostSlots[float64](slots), backend.HostData[float64](g))
	default:
		return false
	}
	return true
}

// hostSlots returns the slots' elements.
func hostSlots[T float32 | float64](slots []*Variable) [][]T {
	out := make([][]T, len(slots))
	for i, s := range slots {
		out[i] = backend.HostData[T](s.t)
	}
	return out
}

// updateAll is the *UpdateAll functions (named name in errors): it checks
// every variable with a gradient against its gradient and its slots
// (slots[k][i] is variable i's slot k), then updates each, on a
// device.Stepper one call per device, dtype and gradient format by s,
// elsewhere by host (which reports whether it could) with the gradient
// it is given; through rec where not nil (StepRecord), where every update
// must be a device's. A half gradient of a float variable
// (Options.HalfGradients) goes to a Stepper as it is, which writes the
// variable's half copy (internal/castcache) in the same pass; elsewhere
// it is widened first. factor, where not nil, is the ops parameters'
// GradFactor: each step is given it on its variable's device in its dtype
// (gradFactors), the host's too (host's f).
func updateAll(rec *StepRecord, name string, vars []*Variable, slots [][]*Variable, grads []*tensor.Tensor, s device.StepSettings, factor *tensor.Tensor, host func(i int, g, f *tensor.Tensor) bool) (done []bool) {
	lengths := ""
	for _, list := range slots {
		if len(list) != len(vars) {
			lengths += fmt.Sprintf(", %d slots", len(list))
		}
	}
	if len(grads) != len(vars) || lengths != "" {
		panic(tensor.NewError("tape", name, tensor.ErrArity, nil, "", "%d variables%s, %d gradients", len(vars), lengths, len(grads)))
	}
	factors := newGradFactors(name, factor)
	defer factors.release()
	grads = slices.Clone(grads) // never write into the caller's slice
	for i, v := range vars {
		if grads[i] == nil {
			continue
		}
		if v == nil {
			panic(tensor.NewError("tape", name, tensor.ErrArity, nil, "", "variable %d is nil", i))
		}
		grads[i] = v.here(name, grads[i])
		v.checkGrad(name, grads[i])
		for _, list := range slots {
			if list[i] == nil {
				panic(tensor.NewError("tape", name, tensor.ErrArity, nil, "", "a slot of variable %q is nil", v.name))
			}
			list[i].check(name, v.t)
		}
	}
	for i, v := range vars {
		if grads[i] != nil {
			v.bump()
			for _, list := range slots {
				list[i].bump()
			}
		}
	}
	type group struct {
		stepper device.Stepper
		elem    int
		idx     []int
		ts      []device.StepTensor
		commits []func() // the half copies written
	}
	var groups []*group
	var widened []*tensor.Tensor // released once the steps are queued
	defer func() {
		for _, w := range widened {
			w.Release()
		}
	}()
	done = make([]bool, len(vars))
	for i, v := range vars {
		g := grads[i]
		if g == nil {
			continue
		}
		st, ok := v.t.Device().(device.Stepper)
		dt := v.t.DType()
		half := device.StepNoHalf
		if g.DType() != dt {
			half = stepHalf(g.DType()) // a float variable's half gradient (checkGrad)
		}
		if half != device.StepNoHalf && (!ok || dt != tensor.Float32 || rec != nil) {
			// Widened where the device takes no half gradients (exactly:
			// the float gradient the cast's own rule would have given).
			v.onDevice(func() { g = ops.Cast(g, dt) })
			widened = append(widened, g)
			half = device.StepNoHalf
		}
		if !ok || (dt != tensor.Float32 && dt != tensor.Float64) {
			if rec != nil {
				panic(tensor.NewError("tape", name, device.ErrCapture, nil, "", "variable %q (%v on %s) cannot be stepped by a recording", v.name, dt, v.t.Device().Name()))
			}
			done[i] = host(i, g, factors.of(v))
			continue
		}
		g = g.Contiguous()
		k := slices.IndexFunc(groups, func(gr *group) bool { return gr.stepper == st && gr.elem == dt.Size() })
		if k < 0 {
			groups = append(groups, &group{stepper: st, elem: dt.Size()})
			k = len(groups) - 1
		}
		gr := groups[k]
		gr.idx = append(gr.idx, i)
		t := device.StepTensor{W: v.t.Buffer(), G: g.Buffer(), N: v.t.NumElements(), Half: half}
		if half != device.StepNoHalf {
			if c, commit := castcache.Writable(v.t, g.DType()); c != nil {
				t.Copy = c.Buffer()
				gr.commits = append(gr.commits, commit)
			}
		}
		for k, list := range slots {
			t.Slots[k] = list[i].t.Buffer()
		}
		gr.ts = append(gr.ts, t)
	}
	for _, gr := range groups {
		var err error
		v0 := vars[gr.idx[0]]
		dev := v0.t.Device()
		if f := factors.of(v0); f != nil {
			s.GradFactor = f.Buffer()
		}
		if rec != nil {
			err = rec.step(dev, gr.stepper, gr.elem, gr.ts, s)
		} else {
			eager.Profiled(strings.TrimSuffix(name, "UpdateAll")+"Step", dev, nil, func() { err = gr.stepper.Step(gr.elem, gr.ts, s) })
		}
		if err != nil {
			panic(tensor.NewError("tape", name, err, nil, "", "%v", err))
		}
		for _, commit := range gr.commits {
			commit()
		}
		for _, i := range gr.idx {
			done[i] = true
		}
	}
	return done
}

// gradFactors is a step's GradFactor as each variable's step reads it: a
// scalar on the variable's device in its dtype, moved and cast once for
// each device and dtype where the given one is not so.
type gradFactors struct {
	name  string
	f     *tensor.Tensor
	made  map[factorKey]*tensor.Tensor
	temps []*tensor.Tensor
}

type factorKey struct {
	dev device.Device
	dt  tensor.DType
}

// newGradFactors checks f (nil for none): a scalar of a float dtype.
func newGradFactors(name string, f *tensor.Tensor) *gradFactors {
	if f != nil && (f.Rank() != 0 || !f.DType().IsFloat()) {
		panic(tensor.NewError("tape", name, tensor.ErrDType, []*tensor.Tensor{f}, "", "the gradient factor must be a scalar of a float dtype, got %s", tensor.Describe(f)))
	}
	return &gradFactors{name: name, f: f}
}

// of is the factor for v's step: nil where there is none.
func (fs *gradFactors) of(v *Variable) *tensor.Tensor {
	if fs.f == nil {
		return nil
	}
	k := factorKey{v.t.Device(), v.t.DType()}
	if k.dev == fs.f.Device() && k.dt == fs.f.DType() {
		return fs.f
	}
	if t, ok := fs.made[k]; ok {
		return t
	}
	t := fs.f
	if t.Device() != k.dev {
		moved, err := t.To(k.dev)
		if err != nil {
			panic(tensor.NewError("tape", fs.name, err, []*tensor.Tensor{v.t, t}, "", "copying the gradient factor for variable %q to %s: %v", v.name, k.dev.Name(), err))
		}
		fs.temps = append(fs.temps, moved)
		t = moved
	}
	if t.DType() != k.dt {
		v.onDevice(func() { t = ops.Cast(t, k.dt) })
		fs.temps = append(fs.temps, t)
	}
	if fs.made == nil {
		fs.made = map[factorKey]*tensor.Tensor{}
	}
	fs.made[k] = t
	return t
}

// release hands back the copies of made, once the steps are queued.
func (fs *gradFactors) release() {
	for _, t := range fs.temps {
		t.Release()
	}
}

// stepHalf is a gradient dtype's format for a Stepper.
func stepHalf(dt tensor.DType) device.StepHalf {
	switch dt {
	case tensor.BFloat16:
		return device.StepBFloat16
	case tensor.Float16:
		return device.StepFloat16
	}
	return device.StepNoHalf
}

// AdamUpdate takes one Adam step on the variable in place (cpu.AdamInPlace)
// with its moment slots m and v (variables of its dtype and shape) and the
// gradient g: one pass, no temporaries. It reports false, changing
// nothing, where the fused kernel does not apply (off the CPU, or not a
// float dtype); the caller then computes the step with ops.
func (v *Variable) AdamUpdate(m, s *Variable, g *tensor.Tensor, p ops.AdamParams) bool {
	g = v.here("AdamUpdate", g)
	v.check("AdamUpdate", g)
	if m == nil || s == nil {
		panic(tensor.NewError("tape", "AdamUpdate", tensor.ErrArity, nil, "", "a moment slot of variable %q is nil", v.name))
	}
	m.check("AdamUpdate", v.t)
	s.check("AdamUpdate", v.t)
	for _, x := range []*Variable{v, m, s} {
		x.bump()
	}
	for _, t := range []*tensor.Tensor{v.t, m.t, s.t} {
		if _, onHost := t.Buffer().(interface{ Bytes() []byte }); !onHost {
			return false
		}
	}
	g = g.Contiguous()
	factors := newGradFactors("AdamUpdate", p.GradFactor)
	defer factors.release()
	p.GradFactor = factors.of(v)
	switch v.t.DType() {
	case tensor.Float32:
		cpu.AdamInPlace(backend.HostData[float32](v.t), backend.HostData[float32](m.t), backend.HostData[float32](s.t), backend.HostData[float32](g), p)
	case tensor.Float64:
		cpu.AdamInPlace(backend.HostData[float64](v.t), backend.HostData[float64](m.t), backend.HostData[float64](s.t), backend.HostData[float64](g), p)
	default:
		return false
	}
	return true
}
