package conformance

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/approx"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// T is the tensor type, shortened.
type T = *tensor.Tensor

// sample is one call of the public API that runs the op under test.
type sample struct {
	name string
	call func()
	// grad asks for the finite-difference check of the gradients (float64
	// inputs in a smooth region); second for second order too: the
	// gradient rules are ops, differentiable in their turn, and every
	// sample with a gradient check asks it (forcing it on found three
	// wrong second derivatives).
	grad, second bool
	// tol, where set, is the tolerance of another kind of device's
	// results (approx.Close), for every output dtype: an op whose kernels
	// round otherwise than the dtype's own tolerance allows (the FP8 GEMM).
	tol float64
}

// call is an op's call as captured: what the checks replay.
type call struct {
	op     *eager.Op
	attrs  any
	inputs []T
}

// captor is an observer that keeps the first call of one op.
type captor struct {
	mu     sync.Mutex
	target *eager.Op
	got    *call
}

func (c *captor) Observe(ec *eager.Call, _ []T) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.target != nil && c.got == nil && ec.Op == c.target {
		c.got = &call{op: ec.Op, attrs: ec.Attrs, inputs: slices.Clone(ec.Inputs)}
	}
}

var (
	capt        = &captor{}
	installOnce sync.Once
	captureMu   sync.Mutex // one capture at a time
)

// capture runs fn and returns op's first call in it (nil when none).
func capture(op *eager.Op, fn func()) (*call, error) {
	installOnce.Do(func() { eager.AddObserver(capt) })
	captureMu.Lock()
	defer captureMu.Unlock()
	capt.mu.Lock()
	capt.target, capt.got = op, nil
	capt.mu.Unlock()
	eager.Activate()
	err := tensor.Catch(fn)
	eager.Deactivate()
	capt.mu.Lock()
	defer capt.mu.Unlock()
	got := capt.got
	capt.target, capt.got = nil, nil
	return got, err
}

// run replays c on inputs (its own when nil).
func (c *call) run(inputs []T) []T {
	if inputs == nil {
		inputs = c.inputs
	}
	return eager.Run(c.op, c.attrs, inputs...)
}

// bytesOf is x's row-major bytes (nil for nil).
func bytesOf(x T) []byte {
	if x == nil {
		return nil
	}
	return slices.Clone(x.Contiguous().HostBytes())
}

// sameBits reports where got and want differ, bit for bit ("" if not).
func sameBits(got, want []T) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d outputs, want %d", len(got), len(want))
	}
	for i := range got {
		if got[i].DType() != want[i].DType() || !got[i].Shape().Equal(want[i].Shape()) {
			return fmt.Sprintf("output %d is %s, want %s", i, tensor.Describe(got[i]), tensor.Describe(want[i]))
		}
		if g, w := bytesOf(got[i]), bytesOf(want[i]); string(g) != string(w) {
			return fmt.Sprintf("output %d differs: %v, want %v", i, got[i], want[i])
		}
	}
	return ""
}

// poison leaves freed buffers of xs' sizes, filled with b, in the CPU
// device's cache, where the next outputs of those sizes come from: a
// kernel that leaves an element unwritten shows b there.
func poison(xs []T, b byte) {
	for _, x := range xs {
		n := x.NumElements() * x.DType().Size()
		if n == 0 {
			continue
		}
		buf, err := device.Host().Alloc(n)
		if err != nil {
			continue
		}
		device.Host().Fill(buf, 0, n, []byte{b})
		device.Host().Free(buf)
	}
}

// check runs every check of the table on one captured call.
func check(t *testing.T, c *call, s sample, pending []Pending) {
	t.Helper()
	before := make([][]byte, len(c.inputs))
	for i, x := range c.inputs {
		before[i] = bytesOf(x)
	}
	var first []T
	if err := tensor.Catch(func() { first = c.run(nil) }); err != nil {
		t.Fatalf("the sample fails: %v", err)
	}
	// Every element written: two more runs over poisoned buffers agree.
	for _, b := range []byte{0xff, 0x5a} {
		poison(first, b)
		if d := sameBits(c.run(nil), first); d != "" {
			t.Fatalf("a run over buffers poisoned with %#x: %s", b, d)
		}
	}
	for i, x := range c.inputs {
		if string(bytesOf(x)) != string(before[i]) {
			t.Fatalf("the op changed its input %d", i)
		}
	}
	checkDevices(t, c, first, pending, s.tol)
	checkTraced(t, c, first)
	checkTracedGradient(t, c)
	if s.grad {
		checkGradients(t, c, s.second)
	}
	checkBadInputs(t, c)
}

// devices are the devices every op must run on beside cpu:0: every
// registered one (cpu:1, and whatever a backend registers).
func devices() []device.Device {
	var out []device.Device
	for _, d := range device.Devices() {
		if d != device.Device(device.Host()) {
			out = append(out, d)
		}
	}
	return out
}

// checkDevices runs c on every other device and compares with cpu:0:
// another CPU device bit for bit, a device of another kind within the
// dtype's tolerance (approx.Tolerance: its kernels may round otherwise),
// or within tol where it is set (sample.tol).
func checkDevices(t *testing.T, c *call, want []T, pending []Pending, tol float64) {
	t.Helper()
	for _, dev := range devices() {
		p := pendingFor(pending, dev.Kind(), c)
		in := make([]T, len(c.inputs))
		for i, x := range c.inputs {
			var err error
			if in[i], err = x.To(dev); err != nil {
				t.Fatalf("moving input %d to %s: %v", i, dev.Name(), err)
			}
		}
		var got []T
		err := tensor.Catch(func() { got = c.run(in) })
		if p {
			if err == nil {
				t.Fatalf("on %s: %s runs, but the backend's test lists it as pending: take it off the list", dev.Name(), c.op.Name)
			}
			if !errors.Is(err, tensor.ErrNoKernel) {
				t.Fatalf("on %s (pending): %v, want a missing kernel", dev.Name(), err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("on %s: %v", dev.Name(), err)
		}
		on := dev // an op that copies to a device says which (opattr.DeviceAttrs)
		if p, ok := c.attrs.(interface{ TargetDevice() device.Device }); ok {
			on = p.TargetDevice()
		}
		for i, g := range got {
			if g.Device() != on {
				t.Fatalf("on %s, output %d is on %s, want %s", dev.Name(), i, g.Device().Name(), on.Name())
			}
		}
		var d string
		if dev.Kind() == device.CPU {
			d = sameBits(got, want)
		} else {
			d = sameWithin(got, want, tol)
		}
		if d != "" {
			t.Fatalf("on %s: %s", dev.Name(), d)
		}
	}
}

// sameWithin is sameBits within the dtype's tolerance (tol where it is
// set), for outputs of a device whose memory the host may not address.
func sameWithin(got, want []T, tol float64) string {
	if len(got) != len(want) {
		return fmt.Sprintf("%d outputs, want %d", len(got), len(want))
	}
	for i := range got {
		host, err := got[i].To(device.Host())
		if err != nil {
			return fmt.Sprintf("output %d: %v", i, err)
		}
		tol := cmp.Or(tol, approx.Tolerance(want[i].DType()))
		if approx.Tolerance(want[i].DType()) == 0 || host.DType() != want[i].DType() || !host.Shape().Equal(want[i].Shape()) {
			if d := sameBits([]T{host}, []T{want[i]}); d != "" {
				return fmt.Sprintf("output %d: %s", i, d)
			}
			continue
		}
		g := tensor.ToSlice[float64](ops.Cast(host, tensor.Float64))
		w := tensor.ToSlice[float64](ops.Cast(want[i], tensor.Float64))
		if d := approx.Diff(g, w, tol); d != "" {
			return fmt.Sprintf("output %d: %s", i, d)
		}
	}
	return ""
}

// checkTraced calls c traced twice (the trace, then the graph) and
// compares with eager.
func checkTraced(t *testing.T, c *call, want []T) {
	t.Helper()
	f := trace.NewFunction(func(in []T) []T { return c.run(in) })
	for n := range 2 {
		got, err := f.Call(c.inputs...)
		if err != nil {
			t.Fatalf("traced call %d: %v", n, err)
		}
		if d := sameBits(got, want); d != "" {
			t.Fatalf("traced call %d: %s", n, d)
		}
	}
}

// checkTracedGradient differentiates c with a tape inside a traced
// function (the gradient rule traced, its float32 chains fused) and
// compares with the eager gradient.
func checkTracedGradient(t *testing.T, c *call) {
	t.Helper()
	if c.op.NonDifferentiable {
		return
	}
	var idx []int
	for i, x := range c.inputs {
		if checkable(x.DType()) {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return
	}
	w := weights(c.run(nil))
	grad := func(in []T) []T {
		tp := tape.New()
		var src []T
		for _, i := range idx {
			src = append(src, in[i])
		}
		tp.Watch(src...)
		return tp.Gradient(loss(c, in, w), src...)
	}
	want := grad(c.inputs)
	f := trace.NewFunction(grad)
	for n := range 2 {
		got, err := f.Call(c.inputs...)
		if err != nil {
			t.Fatalf("traced gradient, call %d: %v", n, err)
		}
		for k := range want {
			if (got[k] == nil) != (want[k] == nil) {
				t.Fatalf("traced gradient %d, call %d: %v, eager %v", k, n, got[k], want[k])
			}
			if want[k] == nil {
				continue
			}
			tol := 1e-12
			if want[k].DType() == tensor.Float32 {
				tol = 2e-6 // fused chains round in another order
			}
			g, e := tensor.ToSlice[float64](ops.Cast(got[k], tensor.Float64)), tensor.ToSlice[float64](ops.Cast(want[k], tensor.Float64))
			for j := range e {
				if d := math.Abs(g[j] - e[j]); g[j] != e[j] && !(d <= tol*math.Max(1, math.Abs(e[j]))) && !(math.IsNaN(g[j]) && math.IsNaN(e[j])) { // equal infinities too
					t.Fatalf("traced gradient %d, call %d, element %d: %v, eager %v", k, n, j, g[j], e[j])
				}
			}
		}
	}
}

// checkable reports whether the harness differentiates values of dtype
// dt: the float dtypes but the half ones, in which the loss's own ops
// (Mul, Sum) do not compute yet.
func checkable(dt tensor.DType) bool { return dt.IsFloat() && !dt.IsHalf() }

// floatInputs are the indices of c's float64 inputs.
func floatInputs(c *call) []int {
	var out []int
	for i, x := range c.inputs {
		if x.DType() == tensor.Float64 && !slices.Contains(c.op.NoGrad, i) {
			out = append(out, i)
		}
	}
	return out
}

// weights returns fixed weights shaped like each float output of outs.
func weights(outs []T) []T {
	w := make([]T, len(outs))
	for i, o := range outs {
		if checkable(o.DType()) {
			w[i] = ops.Cast(tensor.RandUniform(tensor.NewRNG(uint64(11+i)), tensor.Float64, 0.5, 1.5, o.Shape()...), o.DType())
		}
	}
	return w
}

// loss is Σ sum(out_k · w_k) over the float outputs of c on inputs.
func loss(c *call, inputs []T, w []T) T {
	l := tensor.Scalar(0.0)
	for i, o := range c.run(inputs) {
		if w[i] != nil {
			// An output on another device (ops.ToDevice's) is weighed
			// there and its sum brought back.
			wi := ops.ToDevice(w[i], o.Device())
			l = ops.Add(l, ops.ToDevice(ops.Sum(ops.Cast(ops.Mul(o, wi), tensor.Float64)), l.Device()))
		}
	}
	return l
}

// fdCheck compares the tape's gradient of f at the float inputs of xs with
// central differences, relative to max(1, |numeric|).
func fdCheck(t *testing.T, what string, f func(in []T) T, xs []T, idx []int, tol float64) {
	t.Helper()
	tp := tape.New()
	var src []T
	for _, i := range idx {
		src = append(src, xs[i])
	}
	tp.Watch(src...)
	analytic := tp.Gradient(f(xs), src...)
	for k, i := range idx {
		base := tensor.ToSlice[float64](xs[i])
		a := make([]float64, len(base))
		if analytic[k] != nil {
			a = tensor.ToSlice[float64](analytic[k])
		}
		for j, v := range base {
			if math.IsInf(v, 0) || math.IsNaN(v) {
				continue // no finite difference at an infinity (a pool's -Inf init)
			}
			h := 1e-6 * math.Max(1, math.Abs(v))
			at := func(x float64) float64 {
				moved := slices.Clone(base)
				moved[j] = x
				in := slices.Clone(xs)
				in[i] = tensor.FromSlice(moved, xs[i].Shape()...).View(xs[i].Shape(), nil)
				return f(in).Float()
			}
			num := (at(v+h) - at(v-h)) / (2 * h)
			if err := math.Abs(a[j]-num) / math.Max(1, math.Abs(num)); !(err <= tol) {
				t.Fatalf("%s: input %d element %d: analytic %.9g, numeric %.9g", what, i, j, a[j], num)
			}
		}
	}
}

// checkGradients checks c's gradients in its float64 inputs against finite
// differences, and the gradients of the gradients where asked.
func checkGradients(t *testing.T, c *call, second bool) {
	t.Helper()
	idx := floatInputs(c)
	if len(idx) == 0 || c.op.NonDifferentiable {
		t.Fatal("a gradient check asked of a sample with no float64 input or of a non-differentiable op")
	}
	w := weights(c.run(nil))
	fdCheck(t, "gradient", func(in []T) T { return loss(c, in, w) }, c.inputs, idx, 1e-6)
	if !second {
		return
	}
	// d/dx Σ v·(∂loss/∂x): the rule differentiated in its turn.
	v := make([]T, len(c.inputs))
	for _, i := range idx {
		v[i] = tensor.RandUniform(tensor.NewRNG(uint64(31+i)), tensor.Float64, -1, 1, c.inputs[i].Shape()...)
	}
	fdCheck(t, "second derivative", func(in []T) T {
		tp := tape.New()
		var src []T
		for _, i := range idx {
			src = append(src, in[i])
		}
		tp.Watch(src...)
		g := tp.Gradient(loss(c, in, w), src...)
		s := tensor.Scalar(0.0)
		for k, i := range idx {
			if g[k] != nil {
				s = ops.Add(s, ops.Sum(ops.Mul(g[k], v[i])))
			}
		}
		return s
	}, c.inputs, idx, 1e-5)
}

var allDTypes = []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Bool}

// checkBadInputs: an extra input, a nil input and an undeclared dtype of
// the key input each give a typed error and change no input.
func checkBadInputs(t *testing.T, c *call) {
	t.Helper()
	before := make([][]byte, len(c.inputs))
	for i, x := range c.inputs {
		before[i] = bytesOf(x)
	}
	var bad [][]T
	if c.op.Inputs >= 0 {
		bad = append(bad, append(slices.Clone(c.inputs), c.inputs[0]))
	}
	if len(c.inputs) > 0 {
		in := slices.Clone(c.inputs)
		in[0] = nil
		bad = append(bad, in)
	}
	if c.op.DTypes != nil && c.op.KeyInput < len(c.inputs) {
		for _, dt := range allDTypes {
			if !slices.Contains(c.op.DTypes, dt) {
				in := slices.Clone(c.inputs)
				in[c.op.KeyInput] = ops.Cast(in[c.op.KeyInput], dt)
				bad = append(bad, in)
				break
			}
		}
	}
	for k, in := range bad {
		err := tensor.Catch(func() { c.run(in) })
		var te *tensor.Error
		if !errors.As(err, &te) || errors.Is(err, tensor.ErrInternal) {
			t.Fatalf("bad input %d: %v, want a typed error", k, err)
		}
	}
	for i, x := range c.inputs {
		if string(bytesOf(x)) != string(before[i]) {
			t.Fatalf("a bad call changed input %d", i)
		}
	}
}

// Pending is what a backend in progress does not run yet: on devices of
// Kind, the ops named in Ops, for the key dtypes listed (none listed: every
// dtype). The table expects a missing kernel there (tensor.ErrNoKernel) and
// fails when one runs after all, or when an entry is never met, so that
// the list stays true as kernels land.
type Pending struct {
	Kind device.Kind
	Ops  map[string][]tensor.DType
	seen map[string]bool
}

// pendingFor reports whether pending covers c on kind (marking the op met).
func pendingFor(pending []Pending, kind device.Kind, c *call) bool {
	for i := range pending {
		p := &pending[i]
		dts, ok := p.Ops[c.op.Name]
		if p.Kind != kind || !ok {
			continue
		}
		key := c.inputs[c.op.KeyInput].DType()
		if len(dts) > 0 && !slices.Contains(dts, key) {
			continue
		}
		if p.seen == nil {
			p.seen = map[string]bool{}
		}
		p.seen[c.op.Name] = true
		return true
	}
	return false
}

// Run runs the table in a test: every registered op has samples, and
// every sample passes every check on every registered device, but for
// what pending lists. A backend's own tests call it after registering
// their device.
func Run(t *testing.T, pending ...Pending) {
	byName := samples()
	for _, op := range eager.Ops() {
		list := byName[op.Name]
		if len(list) == 0 {
			t.Errorf("op %s has no samples in the conformance table (conformance/table.go)", op.Name)
			continue
		}
		t.Run(op.Name, func(t *testing.T) {
			grads := 0
			for _, s := range list {
				t.Run(s.name, func(t *testing.T) {
					c, err := capture(op, s.call)
					if err != nil {
						t.Fatalf("the sample's call fails: %v", err)
					}
					if c == nil {
						t.Fatalf("the sample never calls %s", op.Name)
					}
					check(t, c, s, pending)
				})
				if s.grad {
					grads++
				}
			}
			if !op.NonDifferentiable && grads == 0 {
				t.Errorf("differentiable op %s has no sample with a gradient check", op.Name)
			}
		})
	}
	for name := range byName {
		if eager.Lookup(name) == nil {
			t.Errorf("the table has samples for %s, which is not a registered op", name)
		}
	}
	for _, p := range pending {
		for name := range p.Ops {
			if !p.seen[name] {
				t.Errorf("pending on %v: %s was never met (no sample, or not a registered op): take it off the list", p.Kind, name)
			}
		}
	}
}
