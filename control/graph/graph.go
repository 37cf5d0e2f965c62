package graph

import (
	"fmt"
	"github.com/eagerflow/eagerflow/internal/fusion"
	"sync/atomic"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Traced graphs: nodes, edges and TensorFlow's five control-flow primitives
// ("Implementation of Control Flow in TensorFlow", the README's map). The
// tracer builds these graphs from the same Cond and While calls that run
// eagerly; Execute runs them.

// NodeKind is what a node does: OpNode (the zero value: an eager.Op),
// Placeholder, Const, TensorFlow's control-flow primitives Switch, Merge,
// Enter, Exit and NextIteration, and the gradient stacks' Stack,
// StackPush and StackPop.
type NodeKind uint8

// The node kinds.
const (
	OpNode        NodeKind = iota // runs an eager.Op
	Placeholder                   // a graph input
	Const                         // a fixed tensor
	Switch                        // (data, pred) -> (false, true): the untaken output is dead
	Merge                         // forwards its live input (and the index of it)
	Enter                         // moves a value into a child frame
	Exit                          // moves a value from a frame to its parent
	NextIteration                 // moves a value to the next iteration of its frame
	Stack                         // makes an empty stack; its output is the stack's handle
	StackPush                     // (handle, data) -> data, pushing data onto the stack
	StackPop                      // (handle) -> the value on top of the stack, taken off
)

var kindNames = [...]string{"Op", "Placeholder", "Const", "Switch", "Merge", "Enter", "Exit", "NextIteration",
	"Stack", "StackPush", "StackPop"}

func (k NodeKind) String() string { return kindNames[min(int(k), len(kindNames)-1)] }

// Output names one output of a node.
type Output struct {
	Node  *Node
	Index int
}

// Node is one vertex of a graph.
type Node struct {
	ID      int
	Kind    NodeKind
	Name    string
	Op      *eager.Op // OpNode
	Attrs   any       // OpNode
	Inputs  []Output
	Control []*Node // control edges: run after these, and die with them
	// After are ordering edges: run after these whether they were dead or
	// not (a loop's NextIterations after its stack pushes and pops).
	After []*Node
	// Enter's child frame, whether the value is a loop invariant (visible at
	// every iteration), and how many iterations of the frame may run at once.
	Frame              string
	IsConstant         bool
	ParallelIterations int
	Value              *tensor.Tensor // Const
	Outputs            int            // number of outputs
	// Specs are the outputs' dtypes and shapes where the tracer saw them
	// (OpNode); optimisation passes rely on them.
	Specs []eager.Out
	// Fused is the chain of elementwise op nodes a fused node stands for
	// (their inputs name the graph's values and each other).
	Fused []*Node
	// Keep says the node runs though nothing reads it: a check (a trace's
	// guard that a decision goes as it did), which pruning keeps.
	Keep bool
	// Capacity, on a Stack, is the most values its pushes leave on it at
	// once (0: not known), where the tracer knows it (a loop bounded by
	// MaxIterations): a device's recording keeps that many (Record).
	Capacity int
	// Depth, on a Stack whose Capacity is not known, is how many values
	// its pushes left on it at most when it was traced (0: not known): a
	// recording's first guess at its buffer, grown when a run goes deeper
	// (Record).
	Depth int
	// Cond, on a Switch or a Merge, names the Cond whose branch it routes
	// a value into or whose branches' values it joins: one number, above
	// 0, per Cond the tracer built (0 for a loop's Switches and Merges).
	// Recording a graph with its Conds as conditional nodes needs it
	// (Record).
	Cond int
	// Device is where an op node ran when it was traced (nil: not
	// known); Placement takes it as the node's device.
	Device device.Device
	fused  *fusion.Chain // its kernel's steps
}

// Out returns output i of n.
func (n *Node) Out(i int) Output { return Output{Node: n, Index: i} }

func (n *Node) String() string {
	if n.Name != "" {
		return fmt.Sprintf("%s#%d(%s)", n.Kind, n.ID, n.Name)
	}
	return fmt.Sprintf("%s#%d", n.Kind, n.ID)
}

// Graph is a dataflow graph with frames.
type Graph struct {
	Nodes  []*Node
	Inputs []*Node  // placeholders, in argument order
	Result []Output // what Execute returns
	// Device is where the graph runs: its arguments' device, which the
	// tracer records (nil means the host). Fusion fuses what this device's
	// kind has loops for, and the executor runs independent ops at once on
	// its workers when it is a CPU device.
	Device device.Device

	sched   atomic.Pointer[schedule] // the executor's view, made on first use
	planned atomic.Pointer[plan]     // the straight-line plan, made on first use
	// nodes is len(Nodes) while a trace builds the graph, for goroutines
	// that read where the trace stands without its lock.
	nodes atomic.Int64
}

// Size is len(g.Nodes), read without racing the goroutine that adds them
// (a tracer's, while it builds g).
func (g *Graph) Size() int { return int(g.nodes.Load()) }

// Truncate drops the nodes from ID n on (a tracer undoing what it
// recorded).
func (g *Graph) Truncate(n int) {
	clear(g.Nodes[n:])
	g.Nodes = g.Nodes[:n]
	g.nodes.Store(int64(n))
}

// device is g.Device, or the host when that is nil.
func (g *Graph) device() device.Device {
	if g.Device == nil {
		return device.Host()
	}
	return g.Device
}

// workers is the CPU device that runs g's independent ops at once, or nil
// when g's device is not a CPU (an asynchronous device orders its kernels
// itself) or has one worker.
func (g *Graph) workers() *device.CPUDevice {
	if cpu, ok := g.device().(*device.CPUDevice); ok && cpu.Workers() > 1 {
		return cpu
	}
	return nil
}

func (g *Graph) add(n *Node) *Node {
	n.ID = len(g.Nodes)
	g.Nodes = append(g.Nodes, n)
	g.nodes.Store(int64(len(g.Nodes)))
	return n
}

// Input adds a placeholder for the next argument.
func (g *Graph) Input(name string) Output {
	n := g.add(&Node{Kind: Placeholder, Name: name, Outputs: 1})
	g.Inputs = append(g.Inputs, n)
	return n.Out(0)
}

// Constant adds a fixed tensor.
func (g *Graph) Constant(t *tensor.Tensor) Output {
	return g.add(&Node{Kind: Const, Value: t, Outputs: 1}).Out(0)
}

// Apply adds an op node with the given inputs; it has outputs outputs.
func (g *Graph) Apply(op *eager.Op, attrs any, outputs int, inputs ...Output) *Node {
	return g.add(&Node{Kind: OpNode, Op: op, Name: op.Name, Attrs: attrs, Inputs: inputs, Outputs: outputs})
}

// Switch adds a Switch: output 0 carries data when pred is false, output 1
// when it is true; the other is dead.
func (g *Graph) Switch(data, pred Output) *Node {
	return g.add(&Node{Kind: Switch, Inputs: []Output{data, pred}, Outputs: 2})
}

// Merge adds a Merge: output 0 is the first live input, output 1 its index
// (an Int32 scalar). Inputs from NextIteration are back edges: a Merge in a
// loop takes its forward inputs at iteration 0 and its back edges after.
func (g *Graph) Merge(inputs ...Output) *Node {
	return g.add(&Node{Kind: Merge, Inputs: inputs, Outputs: 2})
}

// Enter adds an Enter into frame; a constant enters once and is visible at
// every iteration (a loop invariant).
func (g *Graph) Enter(data Output, frame string, isConstant bool, parallelIterations int) Output {
	return g.add(&Node{Kind: Enter, Inputs: []Output{data}, Frame: frame, IsConstant: isConstant,
		ParallelIterations: parallelIterations, Outputs: 1}).Out(0)
}

// Exit adds an Exit from the frame data lives in to its parent.
func (g *Graph) Exit(data Output) Output {
	return g.add(&Node{Kind: Exit, Inputs: []Output{data}, Outputs: 1}).Out(0)
}

// NextIteration adds a NextIteration; connect its output to a loop Merge
// with SetBackEdge (the Merge exists before the body that feeds it).
func (g *Graph) NextIteration(data Output) Output {
	return g.add(&Node{Kind: NextIteration, Inputs: []Output{data}, Outputs: 1}).Out(0)
}

// SetBackEdge appends a NextIteration output to a loop Merge's inputs.
func (g *Graph) SetBackEdge(merge *Node, next Output) {
	merge.Inputs = append(merge.Inputs, next)
}

// NewStack adds a Stack: each execution of the graph gets an empty stack
// of its own. A loop's gradient shares one between the forward loop, which
// pushes a value it computes at every iteration, and the backward loop,
// which pops them in reverse (both see the handle through constant
// Enters).
func (g *Graph) NewStack() Output {
	return g.add(&Node{Kind: Stack, Outputs: 1}).Out(0)
}

// Push adds a StackPush of data onto the stack handle names; its output is
// data. A dead data or handle pushes nothing.
func (g *Graph) Push(handle, data Output) *Node {
	return g.add(&Node{Kind: StackPush, Inputs: []Output{handle, data}, Outputs: 1})
}

// Pop adds a StackPop from the stack handle names. Popping an empty stack
// panics: the graph's pushes and pops do not match.
func (g *Graph) Pop(handle Output) *Node {
	return g.add(&Node{Kind: StackPop, Inputs: []Output{handle}, Outputs: 1})
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
