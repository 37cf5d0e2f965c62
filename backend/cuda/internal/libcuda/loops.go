//go:build linux && (amd64 || arm64)

package libcuda

import (
	"fmt"
	"runtime"
	"strings"
	"unsafe"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
)

// Loops and branches in a stream's capture (cu.GraphLoops): conditional
// WHILE and IF nodes, CUDA 12.4 and later. BeginWhile (BeginIf) reads the graph the stream captures
// into and the nodes its next work would depend on
// (cuStreamGetCaptureInfo), ends that capture, adds the node after those
// nodes (cuGraphAddNode) and captures the stream into the node's body
// (cuStreamBeginCaptureToGraph); EndBody ends the body's capture and
// captures the stream into the graph again, after the node. So one
// stream records the whole nest, and the work queued on it lands in the
// body it belongs to.

// The driver's values for conditional nodes.
const (
	nodeTypeConditional = 13 // CU_GRAPH_NODE_TYPE_CONDITIONAL
	condTypeIf          = 0  // CU_GRAPH_COND_TYPE_IF
	condTypeWhile       = 1  // CU_GRAPH_COND_TYPE_WHILE
	condAssignDefault   = 1  // CU_GRAPH_COND_ASSIGN_DEFAULT: the default at each launch
)

// condNodeParams is CUgraphNodeParams holding CUDA_CONDITIONAL_NODE_PARAMS:
// the node's type, reserved ints, the 232-byte union (the conditional
// node's handle, type, size, the driver's array of body graphs and the
// context, then padding), and a reserved long long: 256 bytes.
type condNodeParams struct {
	typ      int32
	_        [3]int32
	handle   uint64
	condType uint32
	size     uint32
	bodies   *uintptr // CUgraph*: the driver's array, size long
	ctx      uintptr
	_        [25]int64
	_        int64
}

var _ [256 - unsafe.Sizeof(condNodeParams{})]byte
var _ [unsafe.Sizeof(condNodeParams{}) - 256]byte

// openLoop is a loop whose body a stream captures: the graph the stream
// captured into before, and the loop's node in it.
type openLoop struct{ graph, node uintptr }

// captureState is where a stream's capture stands: its graph, and the
// nodes (with their edge data, where the driver has it) its next work
// depends on, copied out of the driver's arrays.
type captureState struct {
	graph uintptr
	deps  []uintptr
	edges []uint64 // CUgraphEdgeData, 8 bytes each; nil from _v2
}

// loopCalls reports an error where the driver lacks what loops need.
func (c *Context) loopCalls() error {
	f := c.d.f
	if f.condHandleCreate == 0 || f.beginCaptureToGraph == 0 || (f.captureInfoV3 == 0 || f.addNodeV2 == 0) && (f.captureInfoV2 == 0 || f.addNode == 0) {
		return fmt.Errorf("cuda: the driver (%s) has no conditional nodes (CUDA 12.4 or later has)", strings.Join(c.d.files, ", "))
	}
	return c.graphs()
}

// captureInfo returns where s's capture stands.
func (c *Context) captureInfo(s cu.Stream) (captureState, error) {
	status, id, graph, n := new(int32), new(uint64), new(uintptr), new(uintptr)
	deps, edges := new(*uintptr), new(*uint64)
	var err error
	if c.d.f.captureInfoV3 != 0 && c.d.f.addNodeV2 != 0 {
		err = c.d.call("cuStreamGetCaptureInfo_v3", c.d.f.captureInfoV3, uintptr(s), uintptr(unsafe.Pointer(status)),
			uintptr(unsafe.Pointer(id)), uintptr(unsafe.Pointer(graph)), uintptr(unsafe.Pointer(deps)), uintptr(unsafe.Pointer(edges)), uintptr(unsafe.Pointer(n)))
	} else {
		err = c.d.call("cuStreamGetCaptureInfo_v2", c.d.f.captureInfoV2, uintptr(s), uintptr(unsafe.Pointer(status)),
			uintptr(unsafe.Pointer(id)), uintptr(unsafe.Pointer(graph)), uintptr(unsafe.Pointer(deps)), uintptr(unsafe.Pointer(n)))
		*edges = nil
	}
	if err != nil {
		return captureState{}, err
	}
	const active = 1 // CU_STREAM_CAPTURE_STATUS_ACTIVE
	if *status != active {
		return captureState{}, cu.Errorf("cuStreamGetCaptureInfo", cu.ErrorInvalidValue, "stream %#x is not capturing (status %d)", uintptr(s), *status)
	}
	st := captureState{graph: *graph}
	if *n > 0 {
		st.deps = append([]uintptr(nil), unsafe.Slice(*deps, *n)...)
		if *edges != nil {
			st.edges = append([]uint64(nil), unsafe.Slice(*edges, *n)...)
		}
	}
	return st, nil
}

// NewCondition makes a condition of the graph s captures into.
func (c *Context) NewCondition(s cu.Stream) (cu.CondHandle, error) {
	if err := c.loopCalls(); err != nil {
		return 0, err
	}
	st, err := c.captureInfo(s)
	if err != nil {
		return 0, err
	}
	h := new(uint64)
	err = c.d.call("cuGraphConditionalHandleCreate", c.d.f.condHandleCreate, uintptr(unsafe.Pointer(h)), st.graph, c.h, 0, condAssignDefault)
	return cu.CondHandle(*h), err
}

// BeginWhile adds a WHILE node on h after s's captured work and captures
// s into its body.
func (c *Context) BeginWhile(s cu.Stream, h cu.CondHandle) error {
	return c.beginBody(s, h, condTypeWhile)
}

// BeginIf adds an IF node on h after s's captured work and captures s
// into its body.
func (c *Context) BeginIf(s cu.Stream, h cu.CondHandle) error { return c.beginBody(s, h, condTypeIf) }

// beginBody adds a conditional node of type typ on h after s's captured
// work and captures s into its body.
func (c *Context) beginBody(s cu.Stream, h cu.CondHandle, typ uint32) error {
	if err := c.loopCalls(); err != nil {
		return err
	}
	st, err := c.captureInfo(s)
	if err != nil {
		return err
	}
	defer runtime.KeepAlive(st) // the driver reads st's arrays by address until the end
	ended := new(uintptr)
	if err := c.d.call("cuStreamEndCapture", c.d.f.endCapture, uintptr(s), uintptr(unsafe.Pointer(ended))); err != nil {
		return err
	}
	p := &condNodeParams{typ: nodeTypeConditional, handle: uint64(h), condType: typ, size: 1, ctx: c.h}
	node := new(uintptr)
	deps, edges := slicePtr(st.deps), slicePtr(st.edges)
	if st.edges != nil || c.d.f.captureInfoV3 != 0 && c.d.f.addNodeV2 != 0 {
		err = c.d.call("cuGraphAddNode_v2", c.d.f.addNodeV2, uintptr(unsafe.Pointer(node)), st.graph, deps, edges, uintptr(len(st.deps)), uintptr(unsafe.Pointer(p)))
	} else {
		err = c.d.call("cuGraphAddNode", c.d.f.addNode, uintptr(unsafe.Pointer(node)), st.graph, deps, uintptr(len(st.deps)), uintptr(unsafe.Pointer(p)))
	}
	if err == nil && p.bodies == nil {
		err = cu.Errorf("cuGraphAddNode", cu.ErrorInvalidValue, "the conditional node came with no body graph")
	}
	if err != nil {
		// Capture the graph again where it stood: the capture goes on (and
		// the caller abandons it).
		_ = c.captureInto(s, st.graph, deps, edges, len(st.deps))
		return err
	}
	if err := c.captureInto(s, *p.bodies, 0, 0, 0); err != nil {
		_ = c.captureInto(s, st.graph, uintptr(unsafe.Pointer(node)), 0, 1)
		return err
	}
	if c.loops == nil {
		c.loops = map[cu.Stream][]openLoop{}
	}
	c.loops[s] = append(c.loops[s], openLoop{graph: st.graph, node: *node})
	return nil
}

// EndBody ends the innermost body's capture on s and captures s into
// the enclosing graph after its node.
func (c *Context) EndBody(s cu.Stream) error {
	open := c.loops[s]
	if len(open) == 0 {
		return cu.Errorf("cuStreamEndCapture", cu.ErrorInvalidValue, "stream %#x captures no conditional node's body", uintptr(s))
	}
	l := open[len(open)-1]
	c.loops[s] = open[:len(open)-1]
	body := new(uintptr)
	endErr := c.d.call("cuStreamEndCapture", c.d.f.endCapture, uintptr(s), uintptr(unsafe.Pointer(body)))
	node := new(uintptr)
	*node = l.node
	if err := c.captureInto(s, l.graph, uintptr(unsafe.Pointer(node)), 0, 1); err != nil {
		return err
	}
	return endErr
}

// captureInto captures s into graph after n dependencies (deps and
// edges: C arrays, or 0).
func (c *Context) captureInto(s cu.Stream, graph, deps, edges uintptr, n int) error {
	return c.d.call("cuStreamBeginCaptureToGraph", c.d.f.beginCaptureToGraph, uintptr(s), graph, deps, edges, uintptr(n), captureRelaxed)
}

// abandonLoops forgets the loops s left open at the end of its capture
// and returns the outermost graph, which the caller destroys (0: none).
func (c *Context) abandonLoops(s cu.Stream) uintptr {
	open := c.loops[s]
	delete(c.loops, s)
	if len(open) == 0 {
		return 0
	}
	return open[0].graph
}

// slicePtr is the address of a slice's first element, 0 for an empty one.
func slicePtr[T any](s []T) uintptr {
	if len(s) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(&s[0]))
}

var _ cu.GraphLoops = (*Context)(nil)
