package graph

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/eagerflow/eagerflow/eager"
)

// Control flow recorded on the device. A graph whose control flow is the
// loops and branches a tracer builds from While and Cond (frames of Enter,
// Merge, Switch, NextIteration and Exit; Switches and Merges of a Cond,
// marked by Node.Cond; nested in any way; a Cond's gradient reading its
// branches' values through lifted Switches, record_lift.go) runs,
// on a device that records them (device.LoopCapturer), as regions: the
// graph's top level, a region per frame whose steps are its body, and two
// per Cond, its branches. Each region's steps (op nodes, and the frames
// and Conds inside it) run in an order that respects their edges, once,
// while the device records (record_loops.go): a frame as a WHILE node, a
// Cond as two IF nodes, one per branch, on the predicate and on its
// negation.

// regionKind is what a region is.
type regionKind uint8

const (
	topRegion    regionKind = iota
	loopRegion              // a While's frame
	branchRegion            // one side of a Cond
)

// region is the graph's top level, one frame, or one branch of a Cond.
type region struct {
	kind   regionKind
	parent *region
	key    int    // the least node ID in it: where it stands among its parent's steps
	steps  []step // in an order that respects the data and control edges
	nodes  []*Node
	// A frame's parts: its loop values' Merges, the Enters of its loop
	// constants, the predicate its Switches test, the nodes computing it
	// (op nodes, and every node of the Conds and frames inside the
	// condition) and the steps that run them, its NextIterations and
	// Exits by loop value.
	frame     string
	merges    []*Node
	consts    []*Node
	pred      Output
	inCond    map[*Node]bool
	condSteps []step
	nexts     []*Node
	exits     []*Node
	// recond says the body reads values of the condition's nodes: they
	// are computed again at the start of each pass.
	recond bool
	// A branch's Cond and side (0: false, 1: true).
	of   *branching
	side int
}

// branching is one Cond: the region it lies in, its predicate, the
// Switches that route values into its branches and the Merges that join
// their values.
type branching struct {
	parent   *region
	key      int
	pred     Output
	switches []*Node
	merges   []*Node
	branches [2]*region // false, true (a Switch's outputs)
}

// step is an op node or loop Switch of a region, or a frame or Cond
// inside it.
type step struct {
	node *Node
	loop *region
	cond *branching
}

func (s step) key() int {
	switch {
	case s.loop != nil:
		return s.loop.key
	case s.cond != nil:
		return s.cond.key
	}
	return s.node.ID
}

// lowering is a graph being lowered to regions.
type lowering struct {
	g        *Graph
	top      *region
	regionOf []*region // by node ID: a Cond's Switch lies where its inputs do
	frames   map[string]*region
	conds    map[int]*branching
	lifted   map[*Node]int        // Cond Switches reading another Cond's branch: the side they may be read on
	owed     map[*Node][]decision // what a lifted Switch's readers must decide too (record_lift.go)
	stacks   map[*Node]eager.Out  // each Stack's element (its push's)
	// The frames and Conds in the order they begin, and the nodes inside
	// each region (in it or in a region inside it), made once placed.
	frameOrder []*region
	condOrder  []*branching
	inside     map[*region][]*Node
}

// outRegion is the region an output's value lives in: a Cond Switch's
// outputs in its branches.
func (lw *lowering) outRegion(o Output) *region {
	if n := o.Node; n.Kind == Switch && n.Cond != 0 {
		if c := lw.conds[n.Cond]; c != nil {
			return c.branches[o.Index]
		}
	}
	return lw.regionOf[o.Node.ID]
}

// deepest is the innermost region n reads from (by data and control
// edges), or why there is none.
func (lw *lowering) deepest(n *Node) (*region, string) {
	return lw.deepestOf(n, func(in Output) *region { return lw.outRegion(in) })
}

// deepestOf is deepest with the region of each data input given by at.
func (lw *lowering) deepestOf(n *Node, at func(Output) *region) (*region, string) {
	r := lw.top
	visit := func(q *region, p *Node) string {
		switch {
		case q == nil:
			return fmt.Sprintf("%v reads %v, which comes after it", n, p)
		case within(r, q):
		case within(q, r):
			r = q
		default:
			return fmt.Sprintf("%v reads from two unrelated frames or branches", n)
		}
		return ""
	}
	for _, in := range n.Inputs {
		if why := visit(at(in), in.Node); why != "" {
			return nil, why
		}
	}
	for _, c := range n.Control {
		if why := visit(lw.regionOf[c.ID], c); why != "" {
			return nil, why
		}
	}
	return r, ""
}

// lowerRegions lowers g to regions, or says why it cannot be ("" when it
// can).
func lowerRegions(g *Graph) (*lowering, string) {
	lw := &lowering{g: g, top: &region{}, regionOf: make([]*region, len(g.Nodes)), frames: map[string]*region{}, conds: map[int]*branching{},
		lifted: map[*Node]int{}, owed: map[*Node][]decision{}, stacks: map[*Node]eager.Out{}}
	for _, n := range g.Nodes {
		r, why := lw.place(n)
		if why != "" {
			return nil, why
		}
		lw.regionOf[n.ID] = r
		r.nodes = append(r.nodes, n)
	}
	if why := lw.settleOwed(); why != "" {
		return nil, why
	}
	lw.frameOrder = slices.SortedFunc(maps.Values(lw.frames), func(a, b *region) int { return cmp.Compare(a.key, b.key) })
	lw.condOrder = slices.SortedFunc(maps.Values(lw.conds), func(a, b *branching) int { return cmp.Compare(a.key, b.key) })
	lw.inside = map[*region][]*Node{}
	for _, n := range g.Nodes {
		for r := lw.regionOf[n.ID]; r != nil; r = r.parent {
			lw.inside[r] = append(lw.inside[r], n)
		}
	}
	for _, r := range lw.frameOrder {
		if why := r.check(lw); why != "" {
			return nil, why
		}
	}
	for _, n := range g.Nodes {
		if _, pushed := lw.stacks[n]; n.Kind == Stack && !pushed {
			return nil, fmt.Sprintf("%v has no push", n)
		}
	}
	for _, c := range lw.condOrder {
		for _, m := range c.merges {
			for b, in := range m.Inputs {
				if !within(lw.outRegion(in), c.branches[b]) {
					return nil, fmt.Sprintf("%v joins a value from outside its Cond's branch %d", m, b)
				}
			}
		}
	}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			switch p := in.Node; {
			case p.Kind == Merge && in.Index == 1:
				return nil, fmt.Sprintf("%v reads %v's index", n, p)
			case p.Kind == Switch && p.Cond == 0 && in.Index == 0 && n.Kind != Exit:
				return nil, fmt.Sprintf("%v reads %v's false side", n, p)
			case p.Kind == Switch && p.Cond != 0 && lw.liftedOther(p, in.Index):
				return nil, fmt.Sprintf("%v reads %v on the side its value is dead", n, p)
			}
		}
	}
	for _, res := range g.Result {
		if lw.outRegion(res) != lw.top {
			return nil, fmt.Sprintf("result %v lies inside a frame or branch", res.Node)
		}
	}
	lw.top.steps = lw.stepsOf(lw.top)
	for _, r := range lw.frameOrder {
		r.steps = lw.stepsOf(r)
	}
	for _, c := range lw.condOrder {
		for _, b := range c.branches {
			b.steps = lw.stepsOf(b)
		}
	}
	return lw, ""
}

// place returns the region node n lies in, making frames and Conds as
// their first nodes come.
func (lw *lowering) place(n *Node) (*region, string) {
	switch n.Kind {
	case Placeholder, Const:
		return lw.top, ""
	case Stack:
		// A loop gradient's stack: made once, at the top level (its
		// depth bounded, or guessed and checked: record_stacks.go).
		return lw.top, ""
	case Enter:
		parent := lw.outRegion(n.Inputs[0])
		r := lw.frames[n.Frame]
		if r == nil {
			r = &region{kind: loopRegion, parent: parent, frame: n.Frame, key: n.ID}
			lw.frames[n.Frame] = r
		} else if r.parent != parent {
			return nil, fmt.Sprintf("frame %s is entered from two places", n.Frame)
		}
		if n.IsConstant {
			r.consts = append(r.consts, n)
		}
		return r, ""
	case Exit:
		in := lw.outRegion(n.Inputs[0])
		if in == nil || in.kind != loopRegion {
			return nil, fmt.Sprintf("%v leaves no frame", n)
		}
		in.exits = append(in.exits, n)
		return in.parent, ""
	case Merge:
		if n.Cond != 0 {
			c := lw.conds[n.Cond]
			if c == nil || len(n.Inputs) != 2 {
				return nil, fmt.Sprintf("%v joins no Cond's two branches", n)
			}
			c.merges = append(c.merges, n)
			return c.parent, ""
		}
		if len(n.Inputs) != 2 || n.Inputs[0].Node.Kind != Enter || n.Inputs[0].Node.IsConstant || n.Inputs[1].Node.Kind != NextIteration {
			return nil, fmt.Sprintf("%v is not a loop's Merge, nor marked as a Cond's", n)
		}
		r := lw.regionOf[n.Inputs[0].Node.ID]
		r.merges = append(r.merges, n)
		r.nexts = append(r.nexts, n.Inputs[1].Node)
		return r, ""
	case StackPush, StackPop:
		if n.Kind == StackPush {
			st := stackOf(n)
			if len(n.Specs) == 0 {
				return nil, fmt.Sprintf("%v pushes a value of no known shape", n)
			}
			if _, dup := lw.stacks[st]; dup {
				return nil, fmt.Sprintf("%v is one of two pushes onto %v", n, st)
			}
			lw.stacks[st] = n.Specs[0]
		}
		return lw.deepest(n)
	case OpNode, Switch, NextIteration:
		if n.Kind == OpNode && n.Op.Ordered {
			return nil, fmt.Sprintf("%v (%s) is an ordered op", n, n.Op.Name)
		}
		if len(n.After) > 0 && n.Kind != NextIteration {
			return nil, fmt.Sprintf("%v waits on ordering edges", n)
		}
		if n.Kind != Switch || n.Cond == 0 {
			return lw.deepest(n)
		}
		r, lifted, owed, why := lw.switchPlace(n)
		if why != "" {
			return nil, why
		}
		if lifted >= 0 {
			lw.lifted[n] = lifted
		}
		if len(owed) > 0 {
			lw.owed[n] = owed
		}
		c := lw.conds[n.Cond]
		if c == nil {
			c = &branching{parent: r, key: n.ID, pred: n.Inputs[1]}
			for b := range c.branches {
				c.branches[b] = &region{kind: branchRegion, parent: r, key: n.ID, of: c, side: b}
			}
			lw.conds[n.Cond] = c
		} else if c.parent != r || c.pred != n.Inputs[1] {
			return nil, fmt.Sprintf("%v routes into Cond %d from another place or on another predicate", n, n.Cond)
		}
		c.switches = append(c.switches, n)
		return r, ""
	}
	return nil, fmt.Sprintf("%v is a %s", n, n.Kind)
}

// stepsOf orders region r's steps: its op nodes and loop Switches, and
// the frames and Conds inside it; a frame's condition's steps go to its
// condSteps.
func (lw *lowering) stepsOf(r *region) []step {
	var steps []step
	stepOf := map[*Node]int{} // a node, a child frame's Exit or a child Cond's Merge -> its step
	for _, n := range r.nodes {
		if n.Kind == OpNode || n.Kind == Stack || n.Kind == StackPush || n.Kind == StackPop || n.Kind == Switch && n.Cond == 0 {
			stepOf[n] = len(steps)
			steps = append(steps, step{node: n})
		}
	}
	// A child frame's or Cond's step stands for every node inside it and
	// for its Exits or Merges.
	for _, f := range lw.frameOrder {
		if f.parent == r {
			s := step{loop: f}
			for _, n := range slices.Concat(lw.nodesOf(s), f.exits) {
				stepOf[n] = len(steps)
			}
			steps = append(steps, s)
		}
	}
	for _, c := range lw.condOrder {
		if c.parent == r {
			s := step{cond: c}
			for _, n := range slices.Concat(lw.nodesOf(s), c.merges) {
				stepOf[n] = len(steps)
			}
			steps = append(steps, s)
		}
	}
	// Each step after the steps it reads from, otherwise in the order
	// the trace made them.
	deps := make([][]int, len(steps))
	for i, s := range steps {
		for _, n := range lw.nodesOf(s) {
			for _, p := range producers(n) {
				if j, ok := stepOf[p]; ok && j != i {
					deps[i] = append(deps[i], j)
				}
			}
		}
	}
	idx := make([]int, len(steps))
	for i := range idx {
		idx[i] = i
	}
	slices.SortFunc(idx, func(a, b int) int { return cmp.Compare(steps[a].key(), steps[b].key()) })
	done := make([]bool, len(steps))
	out := make([]step, 0, len(steps))
	var visit func(i int)
	visit = func(i int) {
		if done[i] {
			return
		}
		done[i] = true
		for _, j := range deps[i] {
			visit(j)
		}
		out = append(out, steps[i])
	}
	for _, i := range idx {
		visit(i)
	}
	if r.inCond == nil {
		return out
	}
	body := out[:0:0]
	for _, s := range out {
		if r.inCond[lw.nodesOf(s)[0]] {
			r.condSteps = append(r.condSteps, s)
		} else {
			body = append(body, s)
		}
	}
	return body
}

// nodesOf lists the nodes a step runs: its node, or every node inside its
// frame, or its Cond's Switches and every node inside its branches.
func (lw *lowering) nodesOf(s step) []*Node {
	switch {
	case s.node != nil:
		return []*Node{s.node}
	case s.loop != nil:
		return lw.inside[s.loop]
	}
	return slices.Concat(s.cond.switches, lw.inside[s.cond.branches[0]], lw.inside[s.cond.branches[1]])
}

// producers are the nodes n reads by data and control edges.
func producers(n *Node) []*Node {
	ps := make([]*Node, 0, len(n.Inputs)+len(n.Control))
	for _, in := range n.Inputs {
		ps = append(ps, in.Node)
	}
	return append(ps, n.Control...)
}

// within reports whether r is q or inside it.
func within(r, q *region) bool {
	for ; r != nil; r = r.parent {
		if r == q {
			return true
		}
	}
	return false
}

// check finds frame r's predicate and condition and says why r is not a
// loop the device can run ("" when it is).
func (r *region) check(lw *lowering) string {
	if len(r.merges) == 0 {
		return fmt.Sprintf("frame %s has no loop value", r.frame)
	}
	for _, n := range r.nodes {
		switch {
		case n.Kind == Switch && n.Cond == 0:
			if r.pred.Node == nil {
				r.pred = n.Inputs[1]
			} else if n.Inputs[1] != r.pred {
				return fmt.Sprintf("frame %s's Switches test two predicates", r.frame)
			}
		case n.Kind == Merge && n.Cond == 0:
			if lw.regionOf[n.Inputs[1].Node.ID] != r {
				return fmt.Sprintf("%v's back edge comes from another frame", n)
			}
		}
	}
	if r.pred.Node == nil {
		return fmt.Sprintf("frame %s has no Switch", r.frame)
	}
	for _, x := range r.exits {
		sw := x.Inputs[0]
		if sw.Node.Kind != Switch || sw.Node.Cond != 0 || sw.Index != 0 || !slices.Contains(r.merges, sw.Node.Inputs[0].Node) {
			return fmt.Sprintf("%v does not leave with a loop value", x)
		}
	}
	// The condition: the op nodes of r the predicate depends on, and the
	// Conds and frames inside r it reads (every node of each).
	inCond := map[*Node]bool{}
	var walk func(n *Node) string
	// whole takes a Cond's or frame's nodes (and its Merges or Exits) into
	// the condition, and what they read in r.
	whole := func(nodes []*Node) string {
		for _, m := range nodes {
			inCond[m] = true
		}
		for _, m := range nodes {
			for _, p := range producers(m) {
				if why := walk(p); why != "" {
					return why
				}
			}
		}
		return ""
	}
	walk = func(n *Node) string {
		if lw.regionOf[n.ID] != r || inCond[n] {
			return ""
		}
		switch {
		case n.Kind == Enter, n.Kind == Merge && n.Cond == 0:
			return ""
		case n.Kind == Merge || n.Kind == Switch && n.Cond != 0: // a Cond inside the condition
			c := lw.conds[n.Cond]
			return whole(slices.Concat(lw.nodesOf(step{cond: c}), c.merges))
		case n.Kind == Exit: // a loop inside the condition
			f := lw.outRegion(n.Inputs[0])
			return whole(slices.Concat(lw.nodesOf(step{loop: f}), f.exits))
		case n.Kind != OpNode:
			return fmt.Sprintf("frame %s's predicate depends on %v", r.frame, n)
		}
		inCond[n] = true
		for _, p := range producers(n) {
			if why := walk(p); why != "" {
				return why
			}
		}
		return ""
	}
	if lw.outRegion(r.pred) != r {
		return fmt.Sprintf("frame %s's predicate is not computed in it", r.frame)
	}
	if why := walk(r.pred.Node); why != "" {
		return why
	}
	r.inCond = inCond
	// Does anything else in the frame read the condition's values?
	for _, n := range lw.inside[r] {
		for j, in := range n.Inputs {
			isPred := n.Kind == Switch && n.Cond == 0 && j == 1 && in == r.pred
			if inCond[in.Node] && !inCond[n] && !isPred {
				// (A Switch of r testing the predicate is not a reader: the
				// body's own pass sets it afresh.)
				r.recond = true
			}
		}
	}
	return ""
}
