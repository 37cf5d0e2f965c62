package graph

import (
	"slices"
	"strings"

	"github.com/eagerflow/eagerflow/backend"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Elementwise fusion: a chain of float32 elementwise ops (each consuming
// the previous one's output, which nothing else reads) becomes one node
// with one dispatch and one buffer for the whole chain. On devices whose
// backend registered host loops (eager.ElementwiseF32: the CPU) its kernel
// runs every step over one block of the output before moving to the next
// block, so the intermediate values stay in the L1 cache; each step calls
// the op's own loop, so the fused result is bitwise the eager one. On
// other devices the kind's eager.Fuser compiles the chain into one kernel
// (the GPU's: generated PTX, each step the code of the op's own kernel).

// fuseBlock is the elements one block holds: 2 KiB of float32, well inside
// L1 next to the inputs' blocks.
const fuseBlock = 512

// operand is where one input of a step comes from: the chain (on the
// host, the block of the output being computed) or an input of the fused
// node, full or a single broadcast value.
type operand = eager.FuseOperand

type fuseStep struct {
	loops *eager.ElementwiseF32 // nil where the kind's Fuser compiles the chain
	args  []operand             // 1 (unary) or 2
}

// fusedOp is a synthesised op running steps.
type fusedOp struct {
	steps []fuseStep
	shape tensor.Shape
}

// fusible reports whether n can join a chain on devices of kind: a float32
// elementwise op of one output that kind fuses (stepFusible), with inputs
// of known shapes, each the output's shape or a single value.
func fusible(n *Node, kind device.Kind) bool {
	if n.Kind != OpNode || n.Op == nil || len(n.Specs) != 1 ||
		n.Specs[0].DType != tensor.Float32 || len(n.Control) > 0 || n.Fused != nil || !stepFusible(n.Op, len(n.Inputs), kind) {
		return false
	}
	full := 0
	for _, in := range n.Inputs {
		s, ok := in.Spec()
		if !ok || s.DType != tensor.Float32 {
			return false
		}
		switch {
		case s.Shape.Equal(n.Specs[0].Shape):
			full++
		case s.Shape.NumElements() != 1:
			return false
		}
	}
	return full > 0
}

// stepFusible reports whether op with that many inputs (one or two) can be
// a step of a chain on devices of kind: it has host loops for the kind, or
// the kind's Fuser takes it.
func stepFusible(op *eager.Op, inputs int, kind device.Kind) bool {
	if loops := op.Elementwise(kind); loops != nil {
		return (inputs == 1 && loops.Unary != nil) || (inputs == 2 && loops.VV != nil)
	}
	f := eager.FuserFor(kind)
	return f != nil && (inputs == 1 || inputs == 2) && f.CanFuse(op.Name, inputs)
}

// Spec returns the dtype and shape of o where the tracer recorded them.
func (o Output) Spec() (eager.Out, bool) {
	if o.Index < len(o.Node.Specs) {
		return o.Node.Specs[o.Index], true
	}
	return eager.Out{}, false
}

// fuseElementwise replaces every chain of two or more fusible nodes with
// one node, for the kind of g's device: only ops whose backend registered
// elementwise loops for that kind (eager.RegisterElementwise) or that the
// kind's Fuser takes join a chain, and the fused node has a kernel for
// that kind alone. Nodes must be in an order where inputs come first (as
// traced).
func (g *Graph) fuseElementwise() {
	kind := g.device().Kind()
	for _, n := range g.Nodes {
		// A graph whose values move to a device of another kind (a CPU
		// graph feeding a GPU) is not fused: its chains would mix kinds.
		if p, ok := n.Attrs.(interface{ TargetDevice() device.Device }); ok && p.TargetDevice().Kind() != kind {
			return
		}
	}
	uses := map[Output]int{}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			uses[in]++
		}
		for _, c := range slices.Concat(n.Control, n.After) {
			uses[c.Out(0)] += 2 // ordered against: not internal to a chain
		}
	}
	for _, r := range g.Result {
		uses[r] += 2
	}
	var chains [][]*Node
	tailOf := map[*Node]int{} // chain tail -> index in chains
	for _, n := range g.Nodes {
		if !fusible(n, kind) {
			continue
		}
		joined := false
		for _, in := range n.Inputs {
			ci, ok := tailOf[in.Node]
			if ok && uses[in] == 1 && in.Node.Specs[0].Shape.Equal(n.Specs[0].Shape) {
				delete(tailOf, in.Node)
				chains[ci] = append(chains[ci], n)
				tailOf[n] = ci
				joined = true
				break
			}
		}
		if !joined {
			tailOf[n] = len(chains)
			chains = append(chains, []*Node{n})
		}
	}
	replaced := map[*Node]*Node{} // chain member -> the fused node (at the tail)
	for _, c := range chains {
		if len(c) < 2 {
			continue
		}
		f := fuse(c, kind)
		if f == nil {
			continue
		}
		for _, m := range c {
			replaced[m] = nil
		}
		replaced[c[len(c)-1]] = f
	}
	if len(replaced) == 0 {
		return
	}
	tails := map[*Node]*Node{}
	nodes := g.Nodes[:0]
	for _, n := range g.Nodes {
		f, member := replaced[n]
		switch {
		case !member:
			nodes = append(nodes, n)
		case f != nil:
			tails[n] = f
			nodes = append(nodes, f)
		}
	}
	clear(g.Nodes[len(nodes):])
	g.Nodes = nodes
	redirect := func(o Output) Output {
		if f, ok := tails[o.Node]; ok {
			return f.Out(0)
		}
		return o
	}
	for i, n := range g.Nodes {
		n.ID = i
		for j, in := range n.Inputs {
			n.Inputs[j] = redirect(in)
		}
	}
	for i, r := range g.Result {
		g.Result[i] = redirect(r)
	}
}

// fuse builds the node that runs chain c on devices of kind, or returns
// nil where the kind's Fuser cannot compile it. Its inputs are the chain's
// inputs from outside it, each once.
func fuse(c []*Node, kind device.Kind) *Node {
	tail := c[len(c)-1]
	f := &Node{Kind: OpNode, Outputs: 1, Specs: tail.Specs, Fused: c}
	inputIndex := map[Output]int{}
	op := &fusedOp{shape: tail.Specs[0].Shape}
	names := make([]string, len(c))
	for i, m := range c {
		names[i] = m.Op.Name
		st := fuseStep{loops: m.Op.Elementwise(kind)}
		for _, in := range m.Inputs {
			if i > 0 && in.Node == c[i-1] {
				st.args = append(st.args, operand{Chain: true})
				continue
			}
			k, ok := inputIndex[in]
			if !ok {
				k = len(f.Inputs)
				inputIndex[in] = k
				f.Inputs = append(f.Inputs, in)
			}
			s, _ := in.Spec()
			st.args = append(st.args, operand{Input: k, Single: !s.Shape.Equal(op.shape)})
		}
		op.steps = append(op.steps, st)
	}
	f.Name = "Fused(" + strings.Join(names, ",") + ")"
	f.Op = &eager.Op{Name: f.Name, Inputs: len(f.Inputs), DTypes: []tensor.DType{tensor.Float32},
		Infer:             op.infer,
		NonDifferentiable: true, // a tape sees the chain's own ops: see runNode
	}
	kernel := eager.Kernel(op.kernel)
	if !op.onHost() {
		steps := make([]eager.FuseStep, len(op.steps))
		for i, st := range op.steps {
			steps[i] = eager.FuseStep{Op: names[i], Args: st.args}
		}
		fuser := eager.FuserFor(kind)
		if fuser == nil {
			return nil
		}
		var err error
		if kernel, err = fuser.Fuse(steps); err != nil {
			return nil
		}
	}
	f.Op.AttachKernel(kind, tensor.Float32, kernel)
	f.fused = op
	return f
}

// onHost reports whether every step has host loops (else the kind's Fuser
// compiles the chain).
func (op *fusedOp) onHost() bool {
	for _, st := range op.steps {
		if st.loops == nil {
			return false
		}
	}
	return true
}

// infer gives the chain's output the shape of its full inputs (the traced
// shape on the traced sizes; another size where a signature's unknown dims
// differ), which must agree, and checks that single inputs hold one value.
func (op *fusedOp) infer(c *eager.Call) []eager.Out {
	var shape tensor.Shape
	for _, st := range op.steps {
		for _, a := range st.args {
			if a.Chain {
				continue
			}
			s := c.Inputs[a.Input].Shape()
			switch {
			case a.Single && s.NumElements() != 1:
				c.Fail(tensor.ErrShape, "input %d has shape %v where the trace had a single value", a.Input, s)
			case a.Single:
			case shape == nil:
				shape = s
			case !s.Equal(shape):
				c.Fail(tensor.ErrShape, "inputs of shapes %v and %v where the trace had equal shapes", shape, s)
			}
		}
	}
	return c.Out1(tensor.Float32, shape)
}

// fusedStepCost is the work per element of one step, in device.Parallel's
// units, for sharding: chains of a few thousand elements and more are split,
// shorter ones would lose more to waking a worker than they gain.
const fusedStepCost = 1

func (op *fusedOp) kernel(c *eager.Call, outs []*tensor.Tensor) {
	out := backend.HostData[float32](outs[0])
	var buf [4][]float32
	ins := buf[:0]
	for _, x := range c.Inputs {
		ins = append(ins, backend.HostData[float32](x))
	}
	if cost := float64(len(out) * len(op.steps) * fusedStepCost); cost < backend.MinShardCost {
		op.blocks(out, ins, 0, len(out)) // inline: no closure to allocate
		return
	}
	cpu, ok := c.Device.(*device.CPUDevice)
	if !ok {
		cpu = device.Host()
	}
	ins = slices.Clone(ins)
	cpu.Parallel(len(out), float64(len(op.steps)*fusedStepCost), func(lo, hi int) { op.blocks(out, ins, lo, hi) })
}

// blocks runs the chain over out[lo:hi] in blocks of fuseBlock.
func (op *fusedOp) blocks(out []float32, ins [][]float32, lo, hi int) {
	for b := lo; b < hi; b += fuseBlock {
		op.block(out[b:min(b+fuseBlock, hi)], ins, b)
	}
}

// block runs every step on o, the output's elements from lo.
func (op *fusedOp) block(o []float32, ins [][]float32, lo int) {
	full := func(a operand) []float32 {
		if a.Chain {
			return o
		}
		return ins[a.Input][lo : lo+len(o)]
	}
	for _, st := range op.steps {
		if len(st.args) == 1 {
			st.loops.Unary(o, full(st.args[0]))
			continue
		}
		a, b := st.args[0], st.args[1]
		switch {
		case a.Single:
			st.loops.SV(o, ins[a.Input][0], full(b))
		case b.Single:
			st.loops.VS(o, full(a), ins[b.Input][0])
		default:
			st.loops.VV(o, full(a), full(b))
		}
	}
}

// runNode runs an op node on args. A fused node runs its chain's own ops
// instead while a tape (or any observer) records, so that gradients flow
// through the ops the user wrote.
func runNode(n *Node, args, dst []*tensor.Tensor) []*tensor.Tensor {
	if n.Fused == nil || !eager.Observing() {
		if dst != nil && !eager.Observing() {
			return eager.RunTo(dst, n.Op, n.Attrs, args...)
		}
		return eager.RunPlaced(n.Op, n.Attrs, args...)
	}
	// Each step's operands as the fused kernel takes them (the previous
	// step's output, or an input of the fused node): not by the steps'
	// own input nodes, which a later fusion (of a chain feeding this one)
	// or a graph rebuilt for other sizes (generalize.go) replaced.
	var last []*tensor.Tensor
	for i, m := range n.Fused {
		ops := n.fused.steps[i].args
		ins := make([]*tensor.Tensor, len(ops))
		for j, o := range ops {
			if o.Chain {
				ins[j] = last[0]
			} else {
				ins[j] = args[o.Input]
			}
		}
		last = eager.RunPlaced(m.Op, m.Attrs, ins...)
	}
	return last
}

// SameFusedOperands reports whether the fused nodes x and y read their
// inputs alike at every step (each input full, or a single value).
func SameFusedOperands(x, y *Node) bool {
	if x.fused == nil || y.fused == nil {
		return x.fused == y.fused
	}
	return slices.EqualFunc(x.fused.steps, y.fused.steps, func(p, q fuseStep) bool { return slices.Equal(p.args, q.args) })
}
