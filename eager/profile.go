package eager

import (
	"sync"
	"sync/atomic"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/tensor"
)

// ProfileHook sees every op that runs while it is set (package profile
// installs one): Begin before the op's view or kernel runs, with the call
// checked and its inputs on their device; End after, with the value Begin
// returned, also when the op fails. Ops run by a traced graph's executor
// are seen too. With no hook set an op pays one atomic load.
type ProfileHook interface {
	Begin(c *Call) int
	End(id int)
}

var profileHook atomic.Pointer[ProfileHook]

// SetProfileHook installs h (nil removes the hook) and returns the hook
// it replaced: one at a time.
func SetProfileHook(h ProfileHook) ProfileHook {
	var next *ProfileHook
	if h != nil {
		next = &h
	}
	if old := profileHook.Swap(next); old != nil {
		return *old
	}
	return nil
}

// Profiling reports whether a profile hook is set.
func Profiling() bool { return profileHook.Load() != nil }

// executeProfiled is execute with h told of the call.
func executeProfiled(h ProfileHook, c *Call, specs []Out, buf []*tensor.Tensor) ([]*tensor.Tensor, *tensor.Tensor) {
	id := h.Begin(c)
	defer h.End(id)
	return executeOp(c, specs, buf)
}

// Profiled runs fn, shown to the profile hook (when one is set) as an op
// named name on dev with inputs: work that is not an op's kernel but runs
// on a device, such as an optimizer's step over a whole model
// (tape.AdamUpdateAll).
func Profiled(name string, dev device.Device, inputs []*tensor.Tensor, fn func()) {
	if fn == nil {
		panic(tensor.NewError("eager", "Profiled", tensor.ErrArity, nil, "", "the function to run as %q is nil", name))
	}
	h := profileHook.Load()
	if h == nil {
		fn()
		return
	}
	id := (*h).Begin(&Call{Op: pseudoOp(name), Device: dev, Inputs: inputs})
	defer (*h).End(id)
	fn()
}

// pseudoOps are the ops Profiled names, made on first use (not
// registered: they run no kernel).
var pseudoOps sync.Map

func pseudoOp(name string) *Op {
	if op, ok := pseudoOps.Load(name); ok {
		return op.(*Op)
	}
	op, _ := pseudoOps.LoadOrStore(name, &Op{Name: name})
	return op.(*Op)
}
