package graph

import (
	"fmt"
	"slices"
)

// eliminateCommonSubexpressions makes every op node that repeats an
// earlier one (the same op, attributes and inputs) read the earlier one's
// outputs instead, then prunes it. Ops are pure functions of their inputs
// and attributes (randomness comes from seeded generators outside ops), so
// this changes no value; ordered ops (eager.Op.Ordered: collectives,
// which communicate on every call) are left alone. Attributes are compared by their Go syntax
// representation: equal attribute values of pointer or function type
// count as equal only when they are the same pointer or function.
func (g *Graph) eliminateCommonSubexpressions() {
	seen := map[string]*Node{}
	same := map[*Node]*Node{}
	for _, n := range g.Nodes {
		for i, in := range n.Inputs {
			if r, ok := same[in.Node]; ok {
				n.Inputs[i] = r.Out(in.Index)
			}
		}
		if n.Kind != OpNode || len(n.Control) > 0 || n.Op.Ordered {
			continue
		}
		key := fmt.Sprintf("%p|%#v|%v", n.Op, n.Attrs, n.Inputs)
		if first, ok := seen[key]; ok {
			same[n] = first
			continue
		}
		seen[key] = n
	}
	if len(same) == 0 {
		return
	}
	for i, r := range g.Result {
		if f, ok := same[r.Node]; ok {
			g.Result[i] = f.Out(r.Index)
		}
	}
	g.Prune()
}

// stackOf returns the Stack a push or pop works on: its handle input,
// followed back through the Enters and Switches that brought it there.
func stackOf(n *Node) *Node {
	h := n.Inputs[0].Node
	for h.Kind != Stack {
		h = h.Inputs[0].Node
	}
	return h
}

// dropUnreadStacks removes the stacks whose pops nothing reads (a gradient
// rule ran on a popped value whose result no gradient needed): the pop and
// its push go from the control edges that ordered them, and prune then
// drops them with the stack. It reports whether it removed any; g must be
// pruned before (so that a pop read only by unused nodes counts as unread).
func (g *Graph) dropUnreadStacks() bool {
	read := map[*Node]bool{}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			read[in.Node] = true
		}
	}
	for _, r := range g.Result {
		read[r.Node] = true
	}
	unread := map[*Node]bool{} // Stack nodes
	for _, n := range g.Nodes {
		if n.Kind == StackPop && !read[n] {
			unread[stackOf(n)] = true
		}
	}
	if len(unread) == 0 {
		return false
	}
	gone := func(c *Node) bool {
		return (c.Kind == StackPop || c.Kind == StackPush) && unread[stackOf(c)]
	}
	for _, n := range g.Nodes {
		n.After = slices.DeleteFunc(n.After, gone)
	}
	return true
}

// Optimize prepares a traced graph to run: it prunes what no result needs
// (and the stacks nothing pops), computes repeated ops once, takes sums
// of matrix products as one product (mergeProductSums: a shared weight's
// gradient in an unrolled loop) and fuses chains of elementwise ops for
// the graph's device.
func (g *Graph) Optimize() {
	g.Prune()
	if g.dropUnreadStacks() {
		g.Prune()
	}
	g.eliminateCommonSubexpressions()
	g.mergeProductSums()
	g.fuseElementwise()
}

// Prune drops the nodes no result depends on (values computed and
// discarded), keeping placeholders and Keep nodes, and numbers the rest in
// order.
func (g *Graph) Prune() {
	keep := map[*Node]bool{}
	var visit func(n *Node)
	visit = func(n *Node) {
		if keep[n] {
			return
		}
		keep[n] = true
		for _, in := range n.Inputs {
			visit(in.Node)
		}
		for _, c := range n.Control {
			visit(c)
		}
		for _, c := range n.After {
			visit(c)
		}
	}
	for _, r := range g.Result {
		visit(r.Node)
	}
	for _, n := range g.Nodes {
		if n.Keep {
			visit(n)
		}
	}
	for _, p := range g.Inputs {
		keep[p] = true
	}
	nodes := g.Nodes[:0]
	for _, n := range g.Nodes {
		if keep[n] {
			n.ID = len(nodes)
			nodes = append(nodes, n)
		}
	}
	clear(g.Nodes[len(nodes):])
	g.Nodes = nodes
}
