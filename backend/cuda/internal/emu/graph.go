package emu

import (
	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
)

// Stream capture and CUDA graphs: while a stream captures, the work
// queued on it is recorded (its checks run at the call, as always) and
// not run; a graph launch queues the recorded work again, as the driver
// replays a graph: the same kernels with the same arguments, the same
// copies between the same addresses. Waiting for a capturing stream fails
// and invalidates the capture, as on the driver.

// capture is a stream's capture in progress.
type capture struct {
	ops     []func() error
	invalid error // why the capture is invalidated
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
	st.capture = &capture{}
	return nil
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
	if cp.invalid != nil {
		return 0, cu.Errorf(call, cu.ErrorCaptureInvalidated, "%v", cp.invalid)
	}
	g := cu.GraphExec(c.handle())
	c.graphs[g] = cp.ops
	return g, nil
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

var _ cu.Graphs = (*Context)(nil)
