package graph

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Loops recorded on the device. A graph whose control flow is the loops a
// tracer builds from While (frames of Enter, Merge, Switch, NextIteration
// and Exit, nested or not, with no Cond and no gradient stack) runs, on a
// device that records loops (device.LoopCapturer), as regions in order:
// the graph's top level, and a region per frame whose steps are its body.
// A frame runs once while the device records: its loop values are copied
// into buffers of the recording, its condition is computed, and
// CaptureWhile records the body (its ops, the copy of each next value
// into its loop value's buffer, the condition again) as a loop the device
// repeats while the condition holds, with no wait for the host. The
// Exits read the loop buffers.

// region is the graph's top level (parent nil) or one frame.
type region struct {
	parent *region
	frame  string
	key    int    // the least node ID in it: where it stands among its parent's steps
	steps  []step // in an order that respects the data and control edges
	nodes  []*Node
	// A frame's parts: its loop values' Merges, the Enters of its loop
	// constants, the predicate its Switches test, the op nodes computing
	// it (in ID order), its NextIterations and Exits by loop value.
	merges []*Node
	consts []*Node
	pred   Output
	cond   []*Node
	nexts  []*Node
	exits  []*Node
	// recond says the body reads values of the condition's nodes: they
	// are computed again at the start of each pass.
	recond bool
}

// step is an op node or Switch of a region, or a frame inside it.
type step struct {
	node *Node
	loop *region
}

func (s step) key() int {
	if s.loop != nil {
		return s.loop.key
	}
	return s.node.ID
}

// loopGraph is a graph lowered to regions.
type loopGraph struct {
	g        *Graph
	top      *region
	regionOf []*region       // by node ID
	pinned   map[Output]bool // results: never released
}

// lowerLoops lowers g to regions, or says why it cannot be ("" when it
// can).
func lowerLoops(g *Graph) (*loopGraph, string) {
	top := &region{}
	regionOf := make([]*region, len(g.Nodes))
	frames := map[string]*region{}
	exitOf := map[*Node]*region{} // an Exit's frame
	for _, n := range g.Nodes {
		var r *region
		switch n.Kind {
		case Placeholder, Const:
			r = top
		case Enter:
			parent := regionOf[n.Inputs[0].Node.ID]
			if r = frames[n.Frame]; r == nil {
				r = &region{parent: parent, frame: n.Frame, key: n.ID}
				frames[n.Frame] = r
			} else if r.parent != parent {
				return nil, fmt.Sprintf("frame %s is entered from two frames", n.Frame)
			}
			if n.IsConstant {
				r.consts = append(r.consts, n)
			}
		case Exit:
			in := regionOf[n.Inputs[0].Node.ID]
			if in == top {
				return nil, fmt.Sprintf("%v leaves no frame", n)
			}
			r, exitOf[n] = in.parent, in
			in.exits = append(in.exits, n)
		case Merge:
			if len(n.Inputs) != 2 || n.Inputs[0].Node.Kind != Enter || n.Inputs[0].Node.IsConstant || n.Inputs[1].Node.Kind != NextIteration {
				return nil, fmt.Sprintf("%v is not a loop's Merge (a Cond's)", n)
			}
			r = regionOf[n.Inputs[0].Node.ID]
			r.merges = append(r.merges, n)
			r.nexts = append(r.nexts, n.Inputs[1].Node)
		case OpNode, Switch, NextIteration:
			if n.Kind == OpNode && n.Op.Ordered {
				return nil, fmt.Sprintf("%v (%s) is an ordered op", n, n.Op.Name)
			}
			if len(n.After) > 0 && n.Kind != NextIteration {
				return nil, fmt.Sprintf("%v waits on ordering edges", n)
			}
			r = top
			for _, p := range producers(n) {
				q := regionOf[p.ID]
				switch {
				case q == nil:
					return nil, fmt.Sprintf("%v reads %v, which comes after it", n, p)
				case within(r, q):
				case within(q, r):
					r = q
				default:
					return nil, fmt.Sprintf("%v reads from two unrelated frames", n)
				}
			}
		default:
			return nil, fmt.Sprintf("%v is a %s", n, n.Kind)
		}
		regionOf[n.ID] = r
		r.nodes = append(r.nodes, n)
	}
	for _, r := range frames {
		if why := r.check(regionOf, g.Nodes); why != "" {
			return nil, why
		}
	}
	for _, res := range g.Result {
		if regionOf[res.Node.ID] != top {
			return nil, fmt.Sprintf("result %v lies inside a frame", res.Node)
		}
	}
	// Each region's steps: its op nodes and Switches (not the condition's)
	// and its child frames, ordered by their dependences.
	children := map[*region][]*region{}
	for _, r := range frames {
		children[r.parent] = append(children[r.parent], r)
	}
	for _, r := range append([]*region{top}, mapValues(frames)...) {
		inCond := map[*Node]bool{}
		for _, n := range r.cond {
			inCond[n] = true
		}
		var steps []step
		stepOf := map[*Node]int{} // node (or Exit of a child frame) -> index in steps
		for _, n := range r.nodes {
			if (n.Kind == OpNode || n.Kind == Switch) && !inCond[n] {
				stepOf[n] = len(steps)
				steps = append(steps, step{node: n})
			}
		}
		for _, c := range children[r] {
			for _, x := range c.exits {
				stepOf[x] = len(steps)
			}
			steps = append(steps, step{loop: c})
		}
		r.steps = order(steps, stepOf, regionOf, g.Nodes)
	}
	lg := &loopGraph{g: g, top: top, regionOf: regionOf, pinned: map[Output]bool{}}
	for _, res := range g.Result {
		lg.pinned[res] = true
	}
	return lg, ""
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

func mapValues(m map[string]*region) []*region {
	rs := make([]*region, 0, len(m))
	for _, r := range m {
		rs = append(rs, r)
	}
	slices.SortFunc(rs, func(a, b *region) int { return cmp.Compare(a.key, b.key) })
	return rs
}

// check finds frame r's predicate and condition and says why r is not a
// loop the device can run ("" when it is).
func (r *region) check(regionOf []*region, nodes []*Node) string {
	if len(r.merges) == 0 {
		return fmt.Sprintf("frame %s has no loop value", r.frame)
	}
	for _, n := range r.nodes {
		switch n.Kind {
		case Switch:
			if r.pred.Node == nil {
				r.pred = n.Inputs[1]
			} else if n.Inputs[1] != r.pred {
				return fmt.Sprintf("frame %s branches on two predicates (a Cond in the loop)", r.frame)
			}
		case Merge:
			if regionOf[n.Inputs[1].Node.ID] != r {
				return fmt.Sprintf("%v's back edge comes from another frame", n)
			}
		}
	}
	if r.pred.Node == nil {
		return fmt.Sprintf("frame %s has no Switch", r.frame)
	}
	for _, x := range r.exits {
		sw := x.Inputs[0]
		if sw.Node.Kind != Switch || sw.Index != 0 || !slices.Contains(r.merges, sw.Node.Inputs[0].Node) {
			return fmt.Sprintf("%v does not leave with a loop value", x)
		}
	}
	// The condition: the op nodes of r the predicate depends on.
	inCond := map[*Node]bool{}
	var walk func(n *Node) string
	walk = func(n *Node) string {
		if regionOf[n.ID] != r || inCond[n] {
			return ""
		}
		switch n.Kind {
		case Merge, Enter:
			return ""
		case OpNode:
		default:
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
	if why := walk(r.pred.Node); why != "" {
		return why
	}
	for _, n := range r.nodes {
		if inCond[n] {
			r.cond = append(r.cond, n)
		}
	}
	// Does anything else read the condition's values, or a Merge's index?
	for id, q := range regionOf {
		if q == nil || !within(q, r) {
			continue
		}
		n := nodes[id]
		for j, in := range n.Inputs {
			switch {
			case n.Kind == Switch && j == 1 && in == r.pred:
				// A Switch of r tests the predicate: the body's own pass
				// sets it afresh.
			case inCond[in.Node] && !inCond[n]:
				r.recond = true
			case in.Node.Kind == Merge && in.Index == 1:
				return fmt.Sprintf("%v reads %v's index", n, in.Node)
			case in.Node.Kind == Switch && in.Index == 0 && n.Kind != Exit:
				return fmt.Sprintf("%v reads %v's false side", n, in.Node)
			}
		}
	}
	return ""
}

// order sorts a region's steps so that each comes after the steps it
// reads from (stepOf maps a node, or a child frame's Exit, to its step),
// otherwise in the order the trace made them.
func order(steps []step, stepOf map[*Node]int, regionOf []*region, nodes []*Node) []step {
	deps := make([][]int, len(steps))
	for i, s := range steps {
		var reads []*Node
		if s.node != nil {
			reads = producers(s.node)
		} else {
			for id, q := range regionOf {
				if q != nil && within(q, s.loop) {
					reads = append(reads, producers(nodes[id])...)
				}
			}
		}
		for _, p := range reads {
			if j, ok := stepOf[p]; ok && j != i {
				deps[i] = append(deps[i], j)
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
	return out
}

// run queues the graph's work on args while dev records (Record's fn);
// an op's error panics, as the ops do.
func (lg *loopGraph) run(dev device.LoopCapturer, args []*tensor.Tensor) []*tensor.Tensor {
	vals := make(map[Output]*tensor.Tensor, len(lg.g.Nodes))
	for i, in := range lg.g.Inputs {
		vals[in.Out(0)] = args[i]
	}
	for _, n := range lg.g.Nodes {
		if n.Kind == Const {
			vals[n.Out(0)] = n.Value
		}
	}
	// The top level releases each value its ops made once its last reader
	// has run (a frame reads what its nodes read); a frame's own values
	// stay for the recording (one pass's worth, whatever the trip count).
	left := map[Output]int{}
	reads := make([][]Output, len(lg.top.steps))
	for i, s := range lg.top.steps {
		reads[i] = lg.reads(s)
		for _, o := range reads[i] {
			left[o]++
		}
	}
	release := !eager.Observing()
	for i, s := range lg.top.steps {
		fresh := lg.runStep(dev, s, vals)
		if !release {
			continue
		}
		for _, o := range reads[i] {
			if left[o]--; left[o] == 0 && fresh[o] && !lg.pinned[o] {
				vals[o].Release()
			}
		}
		for o := range fresh {
			if left[o] == 0 && !lg.pinned[o] {
				vals[o].Release() // read by nothing
			}
		}
	}
	out := make([]*tensor.Tensor, len(lg.g.Result))
	for i, r := range lg.g.Result {
		out[i] = vals[r]
	}
	return out
}

// reads lists the top-level values a step reads.
func (lg *loopGraph) reads(s step) []Output {
	if s.node != nil {
		return s.node.Inputs
	}
	var out []Output
	var walk func(r *region)
	walk = func(r *region) {
		for _, n := range r.nodes {
			for _, in := range n.Inputs {
				if lg.isTop(in.Node) {
					out = append(out, in)
				}
			}
		}
		for _, st := range r.steps {
			if st.loop != nil {
				walk(st.loop)
			}
		}
	}
	walk(s.loop)
	return out
}

// isTop reports whether n is a node of the top level.
func (lg *loopGraph) isTop(n *Node) bool { return lg.regionOf[n.ID] == lg.top }

// runStep runs one step, recording its values in vals, and returns the
// values it made that a release may free (an op's outputs other than
// its inputs handed back).
func (lg *loopGraph) runStep(dev device.LoopCapturer, s step, vals map[Output]*tensor.Tensor) map[Output]bool {
	if s.loop != nil {
		lg.runLoop(dev, s.loop, vals)
		return nil
	}
	n := s.node
	ins := make([]*tensor.Tensor, len(n.Inputs))
	for i, in := range n.Inputs {
		ins[i] = vals[in]
	}
	if n.Kind == Switch {
		// Inside its frame's loop the predicate holds; the false side is
		// the loop value an Exit reads when the loop ends.
		vals[n.Out(0)], vals[n.Out(1)] = ins[0], ins[0]
		return nil
	}
	fresh := map[Output]bool{}
	for i, t := range runNode(n, ins, nil) {
		vals[n.Out(i)] = t
		fresh[n.Out(i)] = !slices.Contains(ins, t)
	}
	return fresh
}

// runLoop records frame f: its loop values copied into buffers of the
// recording, its condition, and the loop of its body; the Exits' values
// are the buffers.
func (lg *loopGraph) runLoop(dev device.LoopCapturer, f *region, vals map[Output]*tensor.Tensor) {
	bufs := make([]*tensor.Tensor, len(f.merges))
	for i, m := range f.merges {
		init := vals[m.Inputs[0].Node.Inputs[0]]
		b := emptyLike(init)
		mustCopy(b, init)
		bufs[i] = b
		vals[m.Out(0)] = b
	}
	for _, e := range f.consts {
		vals[e.Out(0)] = vals[e.Inputs[0]]
	}
	pred := lg.condition(f, vals)
	err := dev.CaptureWhile(pred.Buffer(), func() (device.Buffer, error) {
		if f.recond {
			lg.condition(f, vals)
		}
		for _, s := range f.steps {
			lg.runStep(dev, s, vals)
		}
		next := make([]*tensor.Tensor, len(f.nexts))
		for i, nx := range f.nexts {
			next[i] = vals[nx.Inputs[0]]
			// A value sharing another loop value's buffer (a swap, a view)
			// is copied out first: the copies below overwrite the buffers.
			if next[i] != bufs[i] && slices.ContainsFunc(bufs, func(b *tensor.Tensor) bool { return b.Buffer() == next[i].Buffer() }) {
				tmp := emptyLike(next[i])
				mustCopy(tmp, next[i])
				next[i] = tmp
			}
		}
		for i, b := range bufs {
			if next[i] != b {
				mustCopy(b, next[i])
			}
		}
		return lg.condition(f, vals).Buffer(), nil
	})
	if err != nil {
		panic(err)
	}
	for i, m := range f.merges {
		for _, x := range f.exits {
			if x.Inputs[0].Node.Inputs[0].Node == m {
				vals[x.Out(0)] = bufs[i]
			}
		}
	}
}

// condition runs f's condition on the values in vals and returns the
// predicate.
func (lg *loopGraph) condition(f *region, vals map[Output]*tensor.Tensor) *tensor.Tensor {
	for _, n := range f.cond {
		ins := make([]*tensor.Tensor, len(n.Inputs))
		for i, in := range n.Inputs {
			ins[i] = vals[in]
		}
		for i, t := range runNode(n, ins, nil) {
			vals[n.Out(i)] = t
		}
	}
	return vals[f.pred]
}

// emptyLike returns an uninitialised row-major tensor of x's dtype and
// shape on its device.
func emptyLike(x *tensor.Tensor) *tensor.Tensor {
	t, err := tensor.Empty(x.Device(), x.DType(), x.Shape())
	if err != nil {
		panic(err)
	}
	return t
}

// mustCopy queues the copy of src into dst, panicking with its error.
func mustCopy(dst, src *tensor.Tensor) {
	if err := copyTensor(dst, src); err != nil {
		panic(err)
	}
}
