//go:build linux && (amd64 || arm64)

package libcuda

import (
	"fmt"
	"strings"
	"unsafe"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
)

// Stream capture and CUDA graphs (cu.Graphs), through the driver API:
// cuStreamBeginCapture_v2 in relaxed mode, cuStreamEndCapture,
// cuGraphInstantiateWithFlags (CUDA 11.4 and later), cuGraphLaunch.

// captureRelaxed is CU_STREAM_CAPTURE_MODE_RELAXED: calls the driver
// deems potentially unsafe during a capture (cuMemAlloc) stay allowed.
const captureRelaxed = 2

// graphs reports an error where the driver lacks the graph entry points.
func (c *Context) graphs() error {
	f := c.d.f
	if f.beginCapture == 0 || f.endCapture == 0 || f.graphInstantiate == 0 || f.graphLaunch == 0 || f.graphDestroy == 0 || f.graphExecDestroy == 0 {
		return fmt.Errorf("cuda: the driver (%s) has no stream capture or CUDA graphs", strings.Join(c.d.files, ", "))
	}
	return nil
}

// BeginCapture starts capturing s.
func (c *Context) BeginCapture(s cu.Stream) error {
	if err := c.graphs(); err != nil {
		return err
	}
	return c.d.call("cuStreamBeginCapture_v2", c.d.f.beginCapture, uintptr(s), captureRelaxed)
}

// EndCapture ends the capture of s and instantiates the graph (which the
// instantiation keeps; the graph itself is freed).
func (c *Context) EndCapture(s cu.Stream) (cu.GraphExec, error) {
	if err := c.graphs(); err != nil {
		return 0, err
	}
	g, exec := new(uintptr), new(uintptr) // on the heap: their addresses go to the driver as integers
	if err := c.d.call("cuStreamEndCapture", c.d.f.endCapture, uintptr(s), uintptr(unsafe.Pointer(g))); err != nil {
		c.destroyGraph(c.abandonLoops(s))
		return 0, err
	}
	if outer := c.abandonLoops(s); outer != 0 {
		// The capture ended inside a loop's body (which its node owns):
		// the graph that holds the loop goes, unfinished.
		c.destroyGraph(outer)
		return 0, cu.Errorf("cuStreamEndCapture", cu.ErrorCaptureInvalidated, "the capture ended inside a loop's body")
	}
	defer c.d.call("cuGraphDestroy", c.d.f.graphDestroy, *g)
	if err := c.d.call("cuGraphInstantiateWithFlags", c.d.f.graphInstantiate, uintptr(unsafe.Pointer(exec)), *g, 0); err != nil {
		return 0, err
	}
	return cu.GraphExec(*exec), nil
}

// destroyGraph frees a graph that was not instantiated (0: none).
func (c *Context) destroyGraph(g uintptr) {
	if g != 0 {
		_ = c.d.call("cuGraphDestroy", c.d.f.graphDestroy, g)
	}
}

// GraphLaunch queues g on s.
func (c *Context) GraphLaunch(g cu.GraphExec, s cu.Stream) error {
	return c.d.call("cuGraphLaunch", c.d.f.graphLaunch, uintptr(g), uintptr(s))
}

// GraphDestroy frees g.
func (c *Context) GraphDestroy(g cu.GraphExec) error {
	return c.d.call("cuGraphExecDestroy", c.d.f.graphExecDestroy, uintptr(g))
}

var _ cu.Graphs = (*Context)(nil)
