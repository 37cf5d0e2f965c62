package eager

import (
	"errors"
	"reflect"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/plumb"
	"github.com/eagerflow/eagerflow/tensor"
)

// Observer is told about every op that runs while it is active. Package
// tape installs one to record ops for differentiation; the tracer installs
// one too. Observe runs after the kernel, on the calling goroutine.
type Observer interface {
	Observe(c *Call, outs []*tensor.Tensor)
}

type observerSet struct{ list []Observer }

var (
	observers atomic.Pointer[observerSet]
	// activeObservers counts observers that want to see ops now; when it is
	// zero, dispatch skips observation with one atomic load.
	activeObservers atomic.Int32
)

// AddObserver installs o; it sees ops while Activate has been called more
// times than Deactivate (by anyone). The count only gates observation, so
// that an op no one observes costs one atomic load: what an observer
// records follows from the tensors an op reads (a tape's tracked tensors,
// a trace's values), not from the count or the goroutine.
func AddObserver(o Observer) {
	if o == nil {
		panic("eager: AddObserver of a nil observer")
	}
	for {
		old := observers.Load()
		next := &observerSet{}
		if old != nil {
			next.list = append(slices.Clone(old.list), o)
		} else {
			next.list = []Observer{o}
		}
		if observers.CompareAndSwap(old, next) {
			return
		}
	}
}

// Activate turns observation on (counted); Deactivate undoes one Activate.
func Activate()   { activeObservers.Add(1) }
func Deactivate() { activeObservers.Add(-1) }

// Observing reports whether any observer is active: one may keep the
// tensors of the ops it sees, so code that would release intermediates
// early keeps them.
func Observing() bool { return activeObservers.Load() > 0 }

// Activations returns how many Activate calls are not yet undone.
//
// Deprecated: use Observing, which says whether any are.
func Activations() int { return int(activeObservers.Load()) }

// Run executes op on inputs with attrs and returns its outputs. It checks
// arity, dtypes, devices and shapes before anything runs, and panics with a
// *tensor.Error naming what was wrong; recover it with Catch. The slice
// is the caller's to change: an observer (a tape) keeps its own.
func Run(op *Op, attrs any, inputs ...*tensor.Tensor) []*tensor.Tensor {
	c := newCall(op, attrs, inputs)
	specs := prepare(c)
	outs, _ := execute(c, specs, make([]*tensor.Tensor, 0, len(specs)))
	if Observing() {
		return slices.Clone(outs) // a tape may hold outs as its record of the call
	}
	return outs
}

// RunPlaced is Run for a caller whose ops are placed already (a graph's
// executor: the trace recorded its copies between devices): a placement
// scope in force (device.With, which is the whole process's) does not
// move its inputs.
func RunPlaced(op *Op, attrs any, inputs ...*tensor.Tensor) []*tensor.Tensor {
	c := newCall(op, attrs, inputs)
	c.placed = true
	specs := prepare(c)
	outs, _ := execute(c, specs, make([]*tensor.Tensor, 0, len(specs)))
	if Observing() {
		return slices.Clone(outs) // a tape may hold outs as its record of the call
	}
	return outs
}

// RunTo is Run appending the outputs to dst[:0], so that a caller running
// many ops (a graph's executor) reuses one slice; the result may instead
// be a view op's own slice. Only when no observer is active (Observing):
// a tape keeps the slice it is handed. Like RunPlaced, it ignores
// placement scopes.
func RunTo(dst []*tensor.Tensor, op *Op, attrs any, inputs ...*tensor.Tensor) []*tensor.Tensor {
	c := newCall(op, attrs, inputs)
	c.placed = true
	specs := prepare(c)
	outs, _ := execute(c, specs, dst[:0])
	return outs
}

// Run1 is Run for ops with exactly one output.
func Run1(op *Op, attrs any, inputs ...*tensor.Tensor) *tensor.Tensor {
	c := newCall(op, attrs, inputs)
	specs := prepare(c)
	if len(specs) != 1 {
		c.Fail(tensor.ErrArity, "op has %d outputs, Run1 needs one", len(specs))
	}
	_, out := execute(c, specs, c.outT[:0])
	return out
}

// execute runs a prepared call: the op's view when it has one, else its
// kernel into outputs allocated in buf; then the call goes back to the
// pool unless an observer kept it (a viewed call is left to the
// collector). It returns the outputs and the first of them, read before
// the release, since buf may be the call's own storage.
func execute(c *Call, specs []Out, buf []*tensor.Tensor) ([]*tensor.Tensor, *tensor.Tensor) {
	if h := profileHook.Load(); h != nil {
		return executeProfiled(*h, c, specs, buf)
	}
	return executeOp(c, specs, buf)
}

// executeOp is execute without the profile hook.
func executeOp(c *Call, specs []Out, buf []*tensor.Tensor) ([]*tensor.Tensor, *tensor.Tensor) {
	if o := view(c, specs); o != nil {
		observe(c, o)
		if len(o) == 0 { // an op for its effect alone (a send)
			return o, nil
		}
		return o, o[0]
	}
	outs := allocate(c, specs, buf)
	finish(c, outs)
	var first *tensor.Tensor
	if len(outs) > 0 {
		first = outs[0]
	}
	release(c)
	return outs, first
}

// calls recycles the Call records that no observer kept, so that the
// common, unobserved op allocates only its output.
var calls = sync.Pool{New: func() any { return new(Call) }}

// release returns c to the pool unless an observer kept it.
func release(c *Call) {
	if c.kept {
		return
	}
	*c = Call{}
	calls.Put(c)
}

// view returns the op's view outputs, or nil when the op has no view or an
// input is a variable.
func view(c *Call, specs []Out) []*tensor.Tensor {
	if c.Op.View == nil {
		return nil
	}
	if c.Op.ViewOwns {
		return c.Op.View(c, specs)
	}
	for _, x := range c.Inputs {
		if x.IsVariable() {
			return nil
		}
	}
	return c.Op.View(c, specs)
}

// newCall copies up to three inputs into the call itself, so the caller's
// variadic slice stays on its stack.
func newCall(op *Op, attrs any, inputs []*tensor.Tensor) *Call {
	if op == nil {
		panic(tensor.NewError("eager", "Run", tensor.ErrAttr, inputs, "", "the op is nil"))
	}
	c := calls.Get().(*Call)
	c.Op, c.Attrs = op, attrs
	if len(inputs) <= len(c.inBuf) {
		c.Inputs = c.inBuf[:copy(c.inBuf[:], inputs)]
	} else {
		c.Inputs = slices.Clone(inputs)
	}
	return c
}

// prepare validates the call and returns the output specs.
func prepare(c *Call) []Out {
	op := c.Op
	if op.Inputs >= 0 && len(c.Inputs) != op.Inputs {
		c.Fail(tensor.ErrArity, "takes %d inputs, got %d", op.Inputs, len(c.Inputs))
	}
	if op.Inputs < 0 && len(c.Inputs) == 0 {
		c.Fail(tensor.ErrArity, "takes one or more inputs, got none")
	}
	for i, x := range c.Inputs {
		if x == nil {
			c.Fail(tensor.ErrArity, "input %d is nil (%s)", i, plumb.NilHint)
		}
	}
	if len(c.Inputs) > 0 {
		if d, soft := device.Scope(); d != nil && !c.placed {
			place(c, d, soft)
		}
		promoteWeak(c)
		c.Device = c.Inputs[0].Device()
		for _, x := range c.Inputs[1:] {
			if d := x.Device(); d != c.Device {
				c.Fail(tensor.ErrDevice, "inputs are on %s and %s; copy one with To", c.Device.Name(), d.Name())
			}
		}
		if op.KeyInput < len(c.Inputs) && op.DTypes != nil && !slices.Contains(op.DTypes, c.Inputs[op.KeyInput].DType()) {
			c.Fail(tensor.ErrDType, "dtype %v is not one of %v", c.Inputs[op.KeyInput].DType(), op.DTypes)
		}
		if op.SameDTypes && len(c.Inputs) > op.SameFrom {
			dt := c.Inputs[op.SameFrom].DType()
			for _, x := range c.Inputs[op.SameFrom+1:] {
				if x.DType() != dt {
					c.Fail(tensor.ErrDType, "inputs must share a dtype, got %v and %v", dt, x.DType())
				}
			}
		}
	} else {
		c.Device = device.Default()
	}
	specs := op.Infer(c)
	for i, s := range specs {
		if _, ok := tensor.ByteSize(s.DType, s.Shape); !ok {
			c.Fail(tensor.ErrShape, "output %d would be %v%v: a negative dimension, or more elements or bytes than an int can count", i, s.DType, s.Shape)
		}
	}
	if !op.AnyLayout {
		cloned := false
		for i, x := range c.Inputs {
			if !x.IsRowMajor() {
				if !cloned { // never write into the caller's slice
					c.orig = c.Inputs
					c.Inputs, cloned = slices.Clone(c.Inputs), true
				}
				c.Inputs[i] = plumb.Tensor.RowMajor(x).(*tensor.Tensor) // the op's record covers the copy
			}
		}
	}
	return specs
}

func allocate(c *Call, specs []Out, outs []*tensor.Tensor) []*tensor.Tensor {
	for _, s := range specs {
		t, err := tensor.Empty(c.Device, s.DType, s.Shape)
		if err != nil {
			// Kind is the device's error, so errors.Is finds
			// device.ErrOutOfMemory and Catch recovers it.
			c.Fail(err, "cannot allocate its output %v%v on %s: %v", s.DType, s.Shape, c.Device.Name(), err)
		}
		outs = append(outs, t)
	}
	return outs
}

// finish runs the kernel and tells the observers.
func finish(c *Call, outs []*tensor.Tensor) {
	compute(c, outs)
	observe(c, outs)
}

// compute runs c's kernel into outs.
func compute(c *Call, outs []*tensor.Tensor) {
	key := tensor.Invalid
	if c.Op.KeyInput < len(c.Inputs) {
		key = c.Inputs[c.Op.KeyInput].DType()
	} else if len(outs) > 0 {
		key = outs[0].DType()
	}
	k := c.Op.Kernel(c.Device.Kind(), key)
	if k == nil {
		k = halfKernel(c, key) // half.go
	}
	if k == nil {
		noKernel(c, key)
	}
	runKernel(c, k, key, outs)
}

// Compute allocates the call's outputs on its device by specs and runs
// its kernel into them, telling no observer: for a View that makes its
// outputs with the op's own kernel and keeps them (Cast's copies of a
// variable, internal/castcache). It fails as Run does.
func (c *Call) Compute(specs []Out) []*tensor.Tensor {
	outs := allocate(c, specs, make([]*tensor.Tensor, 0, len(specs)))
	compute(c, outs)
	return outs
}

// linkedKinds holds the kinds of device a backend registered kernels for
// (RegisterKernel; the portable kernels packages such as control/trace
// register do not count), so that a program that links no backend for its
// device is told which to import.
var linkedKinds sync.Map // device.Kind -> true

// noKernel fails c for want of a kernel for its device and dtype, naming
// the kinds of device that have one.
func noKernel(c *Call, key tensor.DType) {
	where := "no device has one"
	if _, ok := linkedKinds.Load(c.Device.Kind()); !ok {
		where = "no " + c.Device.Kind().String() + " backend is linked into this program"
		if c.Device.Kind() == device.CPU {
			where = `no CPU backend is linked into this program: import _ "github.com/eagerflow/eagerflow/backend/cpu" ` +
				"(packages tape, control, control/trace and nn link it; a program that imports none of them must)"
		}
	}
	if kinds := c.Op.KernelKinds(key); len(kinds) > 0 {
		names := make([]string, len(kinds))
		for i, k := range kinds {
			names[i] = k.String()
		}
		where = "devices with one: " + strings.Join(names, ", ")
	}
	c.Fail(tensor.ErrNoKernel, "no %v kernel on %s (%s); %s", key, c.Device.Name(), c.Device.Kind(), where)
}

// runKernel runs k, turning a runtime error inside it (an index out of
// range, a nil dereference: a bug in the kernel, never the caller's input)
// into a *tensor.Error of kind ErrInternal, so that Catch recovers it and
// the process goes on. The kernel's own typed errors pass unchanged.
func runKernel(c *Call, k Kernel, key tensor.DType, outs []*tensor.Tensor) {
	defer func() {
		if r := recover(); r != nil {
			var rt runtime.Error
			if err, ok := r.(error); ok && errors.As(err, &rt) {
				var te *tensor.Error
				if !errors.As(err, &te) {
					e := failure(c, tensor.ErrInternal, "its %s %v kernel failed: %v (a bug in eagerflow: please report it)", c.Device.Kind(), key, rt)
					e.Stack = string(debug.Stack())
					panic(e)
				}
			}
			panic(r)
		}
	}()
	k(c, outs)
}

// observe tells the active observers about the call. They see the caller's
// tensors, not the row-major copies the kernel or view read; those are
// released here (an output that views one holds its buffer itself), not
// left to the collector.
func observe(c *Call, outs []*tensor.Tensor) {
	if c.orig != nil {
		for i, x := range c.Inputs {
			if x != c.orig[i] && x.Traced() == nil && !slices.Contains(outs, x) {
				x.Release()
			}
		}
		c.Inputs, c.orig = c.orig, nil
	}
	if activeObservers.Load() > 0 {
		c.kept = true // observers may keep the call (the tape does)
		if set := observers.Load(); set != nil {
			for _, o := range set.list {
				o.Observe(c, outs)
			}
		}
	}
}

// Catch runs fn and returns the *tensor.Error it panicked with, or nil.
//
// Deprecated: use tensor.Catch; a program needs nothing of package eager,
// the engine ops, tapes and backends are built on.
func Catch(fn func()) error { return tensor.Catch(fn) }

// place moves c's inputs to d, the device of the placement scope in
// force (device.With), as recorded copies: unless they are all there
// already, all small integer or bool scalars (a loop's counter and
// predicate stay with the loop), or the op moves values itself (a copy,
// a transfer); an op with no kernel on d fails naming the scope, or under
// a soft scope runs on another device that has one (softDevice).
func place(c *Call, d device.Device, soft bool) {
	op := c.Op
	if op.Ordered || op.Name == "ToDevice" {
		return
	}
	counters := true
	for _, x := range c.Inputs {
		counters = counters && x.Rank() == 0 && (x.DType() == tensor.Int32 || x.DType() == tensor.Int64 || x.DType() == tensor.Bool || x.DType() == tensor.Uint8)
	}
	if counters {
		return
	}
	if op.View == nil && op.KeyInput < len(c.Inputs) {
		key := c.Inputs[op.KeyInput].DType()
		if !hasKernel(op, d, key) {
			if !soft {
				if !awayFrom(c.Inputs, d) {
					return // the op's own error names the device
				}
				c.Fail(tensor.ErrNoKernel, "no %v kernel on %s, the device scope's (device.With); device.WithSoft runs it on a device that has one", key, d.Name())
			}
			if d = softDevice(c.Inputs, op, key); d == nil {
				return // no device has it: the op's own error
			}
		}
	}
	if !awayFrom(c.Inputs, d) {
		return
	}
	// The observers (a tape, a trace) see the copies as the op's inputs:
	// the copies are recorded ops of their own, the path back to the
	// caller's tensors.
	c.Inputs = slices.Clone(c.Inputs) // never write into the caller's slice
	for i, x := range c.Inputs {
		if x.Device() != d {
			moved, err := plumb.RecordedTo(x, d)
			if err != nil {
				c.Fail(err, "copying input %d to %s, the device scope's: %v", i, d.Name(), err)
			}
			c.Inputs[i] = moved.(*tensor.Tensor)
		}
	}
}

// awayFrom reports whether any of xs is on a device other than d.
func awayFrom(xs []*tensor.Tensor, d device.Device) bool {
	for _, x := range xs {
		if x.Device() != d {
			return true
		}
	}
	return false
}

// hasKernel reports whether op computes dtype key on d (the half types
// also through its float32 kernel).
func hasKernel(op *Op, d device.Device, key tensor.DType) bool {
	return op.Kernel(d.Kind(), key) != nil || (key.IsHalf() && op.Kernel(d.Kind(), tensor.Float32) != nil)
}

// softDevice is where a soft scope runs an op its device has no kernel
// for: the device its inputs share, when that has one, else the host,
// when that has one; nil when neither does.
func softDevice(xs []*tensor.Tensor, op *Op, key tensor.DType) device.Device {
	if d := xs[0].Device(); !awayFrom(xs, d) && hasKernel(op, d, key) {
		return d
	}
	if h := device.Host(); hasKernel(op, h, key) {
		return h
	}
	return nil
}

// Every kernel runs in runKernel's frame: a host read with it on the
// stack is a kernel's (plumb.KernelFrame).
func init() {
	plumb.KernelFrame = runtime.FuncForPC(reflect.ValueOf(runKernel).Pointer()).Name()
}
