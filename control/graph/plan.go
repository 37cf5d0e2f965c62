package graph

import (
	"slices"
	"sync"
	"sync/atomic"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// plan runs a graph without control-flow nodes (no Switch, Merge, Enter,
// Exit or NextIteration: every traced graph today) as a straight-line
// schedule: one slot per value, the nodes in order, and each intermediate
// buffer released as soon as its last reader has run, so the device's
// buffer cache hands it to a later op (buffer reuse planned from the
// values' lifetimes). Nothing is released while a tape records, since the
// tape keeps the intermediates for its backward pass.
type plan struct {
	g      *Graph
	nodes  int      // len(g.Nodes) when it was made
	result []Output // g.Result when it was made
	first  []int    // first slot of each node's outputs, by node ID
	slots  int
	reads  []int  // data edges reading each slot
	pinned []bool // results, arguments and constants: never released
	// scratch recycles one run's working slices, so a steady stream of
	// calls allocates only what it returns: one in idle, which garbage
	// collections leave alone, the others (runs at once) in the pool.
	idle    atomic.Pointer[planRun]
	scratch sync.Pool
}

// planRun is the working state of one run.
type planRun struct {
	vals   []*tensor.Tensor
	left   []int
	pinned []bool
}

// StraightLine reports whether g has only placeholders, constants and op
// nodes, with every input before its reader, and no control edge or
// transfer that may wait: a plan runs it node by node, and a device can
// record it (Record). A nil graph is not.
func (g *Graph) StraightLine() bool {
	if g == nil {
		return false
	}
	for i, n := range g.Nodes {
		if n.ID != i || (n.Kind != OpNode && n.Kind != Placeholder && n.Kind != Const) {
			return false
		}
		for _, in := range n.Inputs {
			if in.Node.ID >= i || g.Nodes[in.Node.ID] != in.Node {
				return false
			}
		}
		if len(n.After) > 0 || n.Kind == OpNode && n.Op.Ordered && isTransfer(n) {
			return false // a receive may wait: the frame executor runs others meanwhile
		}
		for _, c := range n.Control {
			if c.ID >= i {
				return false
			}
		}
	}
	return true
}

// plan returns g's plan, made on first use and again after g changes.
func (g *Graph) plan() *plan {
	if p := g.planned.Load(); p != nil && p.nodes == len(g.Nodes) && slices.Equal(p.result, g.Result) {
		return p
	}
	p := newPlan(g)
	g.planned.Store(p)
	return p
}

func newPlan(g *Graph) *plan {
	p := &plan{g: g, first: make([]int, len(g.Nodes)), nodes: len(g.Nodes), result: slices.Clone(g.Result)}
	for i, n := range g.Nodes {
		p.first[i] = p.slots
		p.slots += n.Outputs
	}
	p.reads = make([]int, p.slots)
	p.pinned = make([]bool, p.slots)
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			p.reads[p.slot(in)]++
		}
		if n.Kind != OpNode {
			p.pinned[p.first[n.ID]] = true
		}
	}
	for _, r := range g.Result {
		p.pinned[p.slot(r)] = true
	}
	return p
}

func (p *plan) slot(o Output) int { return p.first[o.Node.ID] + o.Index }

// run executes the plan on args (already counted against g.Inputs).
func (p *plan) run(args []*tensor.Tensor) []*tensor.Tensor {
	st := p.idle.Swap(nil)
	if st == nil {
		st, _ = p.scratch.Get().(*planRun)
	}
	if st == nil {
		st = &planRun{vals: make([]*tensor.Tensor, p.slots), left: make([]int, p.slots), pinned: make([]bool, p.slots)}
	}
	defer func() {
		clear(st.vals) // hold no tensors between runs
		if !p.idle.CompareAndSwap(nil, st) {
			p.scratch.Put(st)
		}
	}()
	vals, left, pinned := st.vals, st.left, st.pinned
	copy(left, p.reads)
	copy(pinned, p.pinned)
	release := !eager.Observing()
	for i, in := range p.g.Inputs {
		vals[p.first[in.ID]] = args[i]
	}
	var buf, outBuf [4]*tensor.Tensor
	for _, n := range p.g.Nodes {
		switch n.Kind {
		case Const:
			vals[p.first[n.ID]] = n.Value
			continue
		case Placeholder:
			continue
		}
		ins := buf[:0]
		for _, in := range n.Inputs {
			ins = append(ins, vals[p.slot(in)])
		}
		outs := runNode(n, ins, outBuf[:0])
		base := p.first[n.ID]
		for i, t := range outs {
			vals[base+i] = t
			// An op that hands back one of its inputs (or one tensor twice)
			// shares a buffer reference between slots: keep those.
			for _, x := range ins {
				if x == t {
					pinned[base+i] = true
				}
			}
		}
		if !release {
			continue
		}
		for _, in := range n.Inputs {
			s := p.slot(in)
			if left[s]--; left[s] == 0 && !pinned[s] {
				vals[s].Release()
				vals[s] = nil
			}
		}
		for i := range outs {
			if s := base + i; p.reads[s] == 0 && !pinned[s] {
				vals[s].Release()
				vals[s] = nil
			}
		}
	}
	out := make([]*tensor.Tensor, len(p.g.Result))
	for i, r := range p.g.Result {
		out[i] = vals[p.slot(r)]
	}
	return out
}
