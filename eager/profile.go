package eager

import (
	"sync/atomic"

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

// executeProfiled is execute with h told of the call.
func executeProfiled(h ProfileHook, c *Call, specs []Out, buf []*tensor.Tensor) ([]*tensor.Tensor, *tensor.Tensor) {
	id := h.Begin(c)
	defer h.End(id)
	return executeOp(c, specs, buf)
}
