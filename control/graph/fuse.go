package graph

import (
	"slices"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/fusion"
	"github.com/eagerflow/eagerflow/tensor"
)

// Elementwise fusion: a chain of float32 elementwise ops (each consuming
// the previous one's output, which nothing else reads) becomes one node
// with one dispatch and one buffer for the whole chain, its kernel
// internal/fusion's (host loops over blocks of the output on the CPU, the
// kind's eager.Fuser elsewhere; bitwise the ops' one by one).

// fusible reports whether n can join a chain on devices of kind: a float32
// elementwise op of one output that kind fuses (fusion.StepFusible), with inputs
// of known shapes, each the output's shape or a single value.
func fusible(n *Node, kind device.Kind) bool {
	if n.Kind != OpNode || n.Op == nil || len(n.Specs) != 1 ||
		n.Specs[0].DType != tensor.Float32 || len(n.Control) > 0 || n.Fused != nil || !fusion.StepFusible(n.Op, len(n.Inputs), kind) {
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
// nil where it cannot be compiled. Its inputs are the chain's inputs from
// outside it, each once.
func fuse(c []*Node, kind device.Kind) *Node {
	tail := c[len(c)-1]
	f := &Node{Kind: OpNode, Outputs: 1, Specs: tail.Specs, Fused: c}
	inputIndex := map[Output]int{}
	shape := tail.Specs[0].Shape
	steps := make([]fusion.Step, len(c))
	for i, m := range c {
		steps[i] = fusion.Step{Op: m.Op, Attrs: m.Attrs}
		for _, in := range m.Inputs {
			if i > 0 && in.Node == c[i-1] {
				steps[i].Args = append(steps[i].Args, fusion.Operand{Chain: true})
				continue
			}
			k, ok := inputIndex[in]
			if !ok {
				k = len(f.Inputs)
				inputIndex[in] = k
				f.Inputs = append(f.Inputs, in)
			}
			s, _ := in.Spec()
			steps[i].Args = append(steps[i].Args, fusion.Operand{Input: k, Single: !s.Shape.Equal(shape)})
		}
	}
	f.fused = fusion.Compile(kind, steps, len(f.Inputs))
	if f.fused == nil {
		return nil
	}
	f.Op, f.Name = f.fused.Op, f.fused.Op.Name
	return f
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
	return n.fused.Replay(args)
}

// SameFusedOperands reports whether the fused nodes x and y read their
// inputs alike at every step (each input full, or a single value).
func SameFusedOperands(x, y *Node) bool { return fusion.SameOperands(x.fused, y.fused) }
