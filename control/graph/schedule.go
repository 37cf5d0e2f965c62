package graph

import (
	"slices"
	"sync"
	"sync/atomic"
)

// What the executor keeps between runs of a graph: the graph's schedule,
// made once, and finished executors with their node instances and slot
// slices, recycled.

// schedule is what the executor needs to know of a graph's shape, worked
// out once per graph: who consumes each output, who waits on each node,
// which Merge inputs are back edges, how many inputs each node waits for.
type schedule struct {
	nodes     int
	result    []Output       // g.Result when it was made
	consumers [][][]consumer // [node ID][output]
	controlOf [][]*Node      // [node ID]: nodes that wait on it by a control or ordering edge
	backEdge  [][]bool       // [node ID] of a Merge: which inputs are back edges
	awaited   [][2]int       // [node ID] of a Merge: forward inputs, back edges
	waits     []int          // [node ID]: inputs an ordinary node waits for
	hasConst  []bool         // [node ID]: some input is a Const (filled as its instance is made)
	isResult  [][]bool       // [node ID][output]
	roots     []*Node        // nodes that wait for nothing: ready at the start
	heavy     []bool         // [node ID]: an op node worth running beside others (heavy)
	// executors keeps finished executors of this graph with their maps,
	// node instances and slot slices, so that a steady stream of runs
	// allocates little beyond the ops' outputs: one in idle, which garbage
	// collections leave alone (a loop of small ops collects every few
	// milliseconds and would otherwise start from a bare executor), the
	// others, from runs at once, in the pool.
	idle      atomic.Pointer[executor]
	executors sync.Pool
}

// getExecutor returns a finished executor of the graph, or nil.
func (sc *schedule) getExecutor() *executor {
	if e := sc.idle.Swap(nil); e != nil {
		return e
	}
	e, _ := sc.executors.Get().(*executor)
	return e
}

// putExecutor keeps e for the next run.
func (sc *schedule) putExecutor(e *executor) {
	if !sc.idle.CompareAndSwap(nil, e) {
		sc.executors.Put(e)
	}
}

// schedule returns g's schedule, made again when g's node count or
// results changed since. Graphs must not be rewired otherwise once
// executed.
func (g *Graph) schedule() *schedule {
	if sc := g.sched.Load(); sc != nil && sc.nodes == len(g.Nodes) && slices.Equal(sc.result, g.Result) {
		return sc
	}
	n := len(g.Nodes)
	sc := &schedule{nodes: n, result: slices.Clone(g.Result), consumers: make([][][]consumer, n), controlOf: make([][]*Node, n),
		backEdge: make([][]bool, n), awaited: make([][2]int, n), waits: make([]int, n), isResult: make([][]bool, n), heavy: make([]bool, n), hasConst: make([]bool, n)}
	for _, x := range g.Nodes {
		sc.consumers[x.ID] = make([][]consumer, x.Outputs)
		sc.isResult[x.ID] = make([]bool, x.Outputs)
	}
	for _, r := range g.Result {
		sc.isResult[r.Node.ID][r.Index] = true
	}
	for _, x := range g.Nodes {
		sc.waits[x.ID] = len(x.Control) + len(x.After)
		for i, in := range x.Inputs {
			sc.consumers[in.Node.ID][in.Index] = append(sc.consumers[in.Node.ID][in.Index], consumer{x, i})
			if in.Node.Kind != Const {
				sc.waits[x.ID]++
			} else {
				sc.hasConst[x.ID] = true
			}
			if x.Kind == Merge {
				back := in.Node.Kind == NextIteration
				sc.backEdge[x.ID] = append(sc.backEdge[x.ID], back)
				sc.awaited[x.ID][btoi(back)]++
			}
		}
		for _, c := range x.Control {
			sc.controlOf[c.ID] = append(sc.controlOf[c.ID], x)
		}
		for _, c := range x.After {
			sc.controlOf[c.ID] = append(sc.controlOf[c.ID], x)
		}
	}
	// Nodes that wait for nothing start at the root (an Enter of a constant,
	// an op of constants, a Stack). Inside a frame a node needs an input from
	// the frame, as TensorFlow's graphs have (the tracer wires constants so).
	for _, x := range g.Nodes {
		if (x.Kind == OpNode || x.Kind == Enter || x.Kind == Stack) && sc.waits[x.ID] == 0 {
			sc.roots = append(sc.roots, x)
		}
		if x.Kind == OpNode && heavy(x) && !x.Op.Ordered { // an ordered op runs alone, in queue order
			sc.heavy[x.ID] = true
		}
	}
	g.sched.Store(sc)
	return sc
}

// recycle clears e of this run (it holds no tensor afterwards) and keeps it
// for the graph's next run.
func (e *executor) recycle() {
	for _, f := range e.frames {
		for _, s := range f.insts {
			e.freeSlots(s)
		}
	}
	clear(e.frames)
	e.frames, e.root, e.stats = e.frames[:0], nil, execStats{}
	clear(e.results)
	e.refs.reset()
	for _, in := range e.free {
		clear(in.inputs)
	}
	clear(e.args)
	e.queue, e.spare = e.queue[:0], e.spare[:0]
	e.sc.putExecutor(e)
}

// freeSlots keeps an iteration's slot slice for reuse, and the instances
// still in it (a Merge's stays until its iteration is done).
func (e *executor) freeSlots(s []slot) {
	if s != nil {
		for _, x := range s {
			if x.in != nil {
				clear(x.in.inputs)
				e.free = append(e.free, x.in)
			}
		}
		clear(s)
		e.spareSlots = append(e.spareSlots, s)
	}
}

// slots returns the node slots of iteration iter of f, made on first use.
func (e *executor) slots(f *frameInst, iter int) []slot {
	for len(f.insts) <= iter {
		f.insts = append(f.insts, nil)
	}
	s := f.insts[iter]
	if s == nil {
		if n := len(e.spareSlots); n > 0 {
			s, e.spareSlots = e.spareSlots[n-1], e.spareSlots[:n-1]
		} else {
			s = make([]slot, e.sc.nodes)
		}
		f.insts[iter] = s
	}
	return s
}
