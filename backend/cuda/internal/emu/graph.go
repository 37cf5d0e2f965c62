package emu

import (
	"cmp"
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
)

// Stream capture and CUDA graphs: while a stream captures, the work
// queued on it is recorded (its checks run at the call, as always) and
// not run; a graph launch queues the recorded work again, as the driver
// replays a graph: the same kernels with the same arguments, the same
// copies between the same addresses. Waiting for a capturing stream fails
// and invalidates the capture, as on the driver.

// capture is a stream's capture in progress: the work recorded into the
// graph (or into a loop's body, whose node the enclosing capture, outer,
// holds on cond).
type capture struct {
	ops     []func() error
	invalid error // why the capture is invalidated
	outer   *capture
	cond    cu.CondHandle
	loop    bool // the body is a WHILE node's (an IF node's otherwise)
	// conds are the graph's conditions (the outermost capture's), set to
	// 0 at each launch.
	conds []cu.CondHandle
}

// root is the outermost capture of a nest of loop bodies.
func (cp *capture) root() *capture {
	for cp.outer != nil {
		cp = cp.outer
	}
	return cp
}

// BeginCapture starts recording s.
func (c *Context) BeginCapture(s cu.Stream) error {
	const call = "cuStreamBeginCapture"
	if err := c.enter(call); err != nil {
		return err
	}
	defer c.mu.Unlock()
	st, err := c.stream(call, s)
	if err != nil {
		return err
	}
	if st.capture != nil {
		return cu.Errorf(call, cu.ErrorInvalidValue, "stream %#x is capturing already", uintptr(s))
	}
	if c.refuse > 0 {
		c.refuse--
		return cu.Errorf(call, cu.ErrorOutOfMemory, "refused, as a test asked (RefuseCaptures)")
	}
	st.capture = &capture{}
	return nil
}

// RefuseCaptures makes the next n captures fail to begin, as out of
// memory, for tests of what a recording that cannot be made does.
func (c *Context) RefuseCaptures(n int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refuse = n
}

// EndCapture ends the capture of s and instantiates what it recorded.
func (c *Context) EndCapture(s cu.Stream) (cu.GraphExec, error) {
	const call = "cuStreamEndCapture"
	if err := c.enter(call); err != nil {
		return 0, err
	}
	defer c.mu.Unlock()
	st, err := c.stream(call, s)
	if err != nil {
		return 0, err
	}
	cp := st.capture
	if cp == nil {
		return 0, cu.Errorf(call, cu.ErrorInvalidValue, "stream %#x is not capturing", uintptr(s))
	}
	st.capture = nil
	if cp.outer != nil {
		// The driver ends the body's capture and leaves the graph with it.
		for ; cp.outer != nil; cp = cp.outer {
			cp.outer.invalid = cmp.Or(cp.outer.invalid, cp.invalid)
		}
		return 0, cu.Errorf(call, cu.ErrorCaptureInvalidated, "the capture ended inside a conditional node's body (no EndBody)")
	}
	if cp.invalid != nil {
		return 0, cu.Errorf(call, cu.ErrorCaptureInvalidated, "%v", cp.invalid)
	}
	g := cu.GraphExec(c.handle())
	ops := cp.ops
	if len(cp.conds) > 0 {
		// Each launch starts its conditions at their default, 0.
		conds := cp.conds
		ops = append([]func() error{func() error {
			for _, h := range conds {
				c.conds[h] = 0
			}
			return nil
		}}, ops...)
	}
	c.graphs[g] = ops
	return g, nil
}

// NewCondition makes a condition of the graph s captures into.
func (c *Context) NewCondition(s cu.Stream) (cu.CondHandle, error) {
	const call = "cuGraphConditionalHandleCreate"
	st, err := c.capturing(call, s)
	if err != nil {
		return 0, err
	}
	defer c.mu.Unlock()
	h := cu.CondHandle(c.handle())
	c.conds[h] = 0
	root := st.capture.root()
	root.conds = append(root.conds, h)
	return h, nil
}

// BeginWhile adds a loop on h and captures s into its body.
func (c *Context) BeginWhile(s cu.Stream, h cu.CondHandle) error { return c.beginBody(s, h, true) }

// BeginIf adds a branch on h and captures s into its body.
func (c *Context) BeginIf(s cu.Stream, h cu.CondHandle) error { return c.beginBody(s, h, false) }

// beginBody adds a WHILE (loop) or IF node on h and captures s into its
// body.
func (c *Context) beginBody(s cu.Stream, h cu.CondHandle, loop bool) error {
	const call = "cuGraphAddNode"
	st, err := c.capturing(call, s)
	if err != nil {
		return err
	}
	defer c.mu.Unlock()
	if !slices.Contains(st.capture.root().conds, h) {
		return cu.Errorf(call, cu.ErrorInvalidValue, "condition %#x is not one of the graph's", uint64(h))
	}
	st.capture = &capture{outer: st.capture, cond: h, loop: loop}
	return nil
}

// EndBody ends the innermost body's capture: its node joins the
// enclosing capture as one op that runs the body while the condition is
// nonzero (a loop), or once if it is (a branch).
func (c *Context) EndBody(s cu.Stream) error {
	const call = "cuStreamEndCapture"
	st, err := c.capturing(call, s)
	if err != nil {
		return err
	}
	defer c.mu.Unlock()
	body := st.capture
	if body.outer == nil {
		return cu.Errorf(call, cu.ErrorInvalidValue, "stream %#x captures no conditional node's body", uintptr(s))
	}
	st.capture = body.outer
	if body.invalid != nil {
		st.capture.invalid = cmp.Or(st.capture.invalid, body.invalid)
		return nil
	}
	h, ops, loop := body.cond, body.ops, body.loop
	st.capture.ops = append(st.capture.ops, func() error {
		for c.conds[h] != 0 {
			if loop {
				c.LoopPasses++
			} else {
				c.BranchesTaken++
			}
			for _, op := range ops {
				if err := op(); err != nil {
					return err
				}
			}
			if !loop {
				break
			}
		}
		return nil
	})
	return nil
}

// capturing locks the context and returns s, which must be capturing;
// the caller unlocks where err is nil.
func (c *Context) capturing(call string, s cu.Stream) (*stream, error) {
	if err := c.enter(call); err != nil {
		return nil, err
	}
	st, err := c.stream(call, s)
	if err == nil && st.capture == nil {
		err = cu.Errorf(call, cu.ErrorInvalidValue, "stream %#x is not capturing", uintptr(s))
	}
	if err != nil {
		c.mu.Unlock()
		return nil, err
	}
	return st, nil
}

// GraphLaunch queues the graph's recorded work on s.
func (c *Context) GraphLaunch(g cu.GraphExec, s cu.Stream) error {
	const call = "cuGraphLaunch"
	var ops []func() error
	return c.enqueueAll(call, s, func() error {
		var ok bool
		if ops, ok = c.graphs[g]; !ok {
			return cu.Errorf(call, cu.ErrorInvalidHandle, "graph %#x", uintptr(g))
		}
		c.GraphLaunches++
		return nil
	}, func() []func() error { return ops })
}

// GraphDestroy frees a graph.
func (c *Context) GraphDestroy(g cu.GraphExec) error {
	const call = "cuGraphExecDestroy"
	if err := c.enter(call); err != nil {
		return err
	}
	defer c.mu.Unlock()
	if _, ok := c.graphs[g]; !ok {
		return cu.Errorf(call, cu.ErrorInvalidHandle, "graph %#x", uintptr(g))
	}
	delete(c.graphs, g)
	return nil
}

// enqueueAll is enqueue of several ops at once, which ops gives once
// check has passed.
func (c *Context) enqueueAll(call string, s cu.Stream, check func() error, ops func() []func() error) error {
	if err := c.enter(call); err != nil {
		return err
	}
	defer c.mu.Unlock()
	st, err := c.stream(call, s)
	if err != nil {
		return err
	}
	if err := check(); err != nil {
		return err
	}
	if st.capture != nil {
		st.capture.ops = append(st.capture.ops, ops()...)
		return nil
	}
	st.queue = append(st.queue, ops()...)
	c.Queued++
	return nil
}

var _ cu.GraphLoops = (*Context)(nil)
