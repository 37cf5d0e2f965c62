package graph

import (
	"sort"

	"github.com/eagerflow/eagerflow/backend"
	"github.com/eagerflow/eagerflow/tensor"
)

// Concurrency in the executor. One goroutine keeps the books (tags, dead
// flags, frames, buffer counts); the op nodes that are ready together —
// independent of each other, since each has all its inputs — run at once
// on the CPU device's workers where at least two are heavy enough to pay
// for it, and their outputs are then delivered in the order they became
// ready, so a run's results do not depend on timing.
// A loop frame runs at most ParallelIterations iterations at once: the
// NextIteration values that would start a later one wait until the oldest
// active iteration is done (every node instance of it has run and the
// loops it started have finished).

// deferredNext is a NextIteration value held back by ParallelIterations.
type deferredNext struct {
	out  Output
	iter int
	v    value
}

// opJob is one op node instance of a batch run on a worker.
type opJob struct {
	k    instKey
	in   *instance
	args []*tensor.Tensor
	outs []*tensor.Tensor
	err  any // what the op panicked with
}

// concurrentMinElements is the output size (elements, as traced) from
// which an op is worth handing to another goroutine: handing over costs a
// few microseconds, more than a smaller op runs (the RNN of the benchmarks,
// [1 128] states, ran 30-40% slower when every batch was split).
const concurrentMinElements = 1 << 14

// heavy reports whether n is worth running beside other ops: its outputs
// are large, or unknown (a graph built by hand, without specs).
func heavy(n *Node) bool {
	if len(n.Specs) == 0 {
		return true
	}
	for _, s := range n.Specs {
		if s.Shape.NumElements() >= concurrentMinElements {
			return true
		}
	}
	return false
}

// runBatch runs the instances that were ready together: control-flow
// nodes, dead ops and light ops at once, heavy live ops together on the
// device's workers when there are two or more.
func (e *executor) runBatch(batch []instKey) {
	jobs := e.jobs[:0]
	for _, k := range batch {
		if e.concurrent && e.sc.heavy[k.node.ID] {
			if in := e.inst(k); !e.deadInputs(k, in) {
				jobs = append(jobs, opJob{k: k, in: in})
				continue
			}
		}
		e.run(k)
	}
	if len(jobs) < 2 {
		for _, j := range jobs {
			e.run(j.k)
		}
		clear(jobs)
		e.jobs = jobs[:0]
		return
	}
	for i := range jobs {
		j := &jobs[i]
		j.args = make([]*tensor.Tensor, len(j.in.inputs))
		for a, v := range j.in.inputs {
			j.args[a] = v.t
		}
	}
	e.g.workers().Parallel(len(jobs), backend.MinShardCost, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			jobs[i].run()
		}
	})
	for i := range jobs {
		if err := jobs[i].err; err != nil {
			panic(err) // as the op would have eagerly, in the caller
		}
	}
	for i := range jobs {
		j := &jobs[i]
		e.stats.runs++
		outs := make([]value, j.k.node.Outputs)
		e.madeBy(outs, j.outs, j.in.inputs)
		e.complete(j.k, j.in, outs, false)
		*j = opJob{}
	}
	e.jobs = jobs[:0]
}

func (j *opJob) run() {
	defer func() { j.err = recover() }()
	j.outs = runNode(j.k.node, j.args, nil)
}

// releaseDeferred is called when nothing is ready: in each frame holding
// NextIteration values back, the iterations found done move the frame's
// window on, and the values now inside it start their iterations. It
// reports whether it started any.
func (e *executor) releaseDeferred() bool {
	started := false
	for _, f := range e.frames {
		if len(f.deferred) == 0 {
			continue
		}
		for f.lowest < len(f.insts) && e.iterationDone(f, f.lowest) {
			e.freeSlots(f.insts[f.lowest]) // its instances are all gone
			f.insts[f.lowest] = nil
			f.lowest++
		}
		sort.SliceStable(f.deferred, func(a, b int) bool { return f.deferred[a].iter < f.deferred[b].iter })
		n := 0
		for _, d := range f.deferred {
			if d.iter >= f.lowest+f.parallel {
				break
			}
			e.startIteration(f, d.iter)
			e.fanOut(d.out, f, d.iter, d.v)
			e.drop(d.v)
			n++
		}
		f.deferred = f.deferred[n:]
		started = started || n > 0
	}
	return started
}

// iterationDone reports whether iteration iter of f has nothing left to
// run: no node instance waits or runs there (a Merge's is kept for late
// inputs, which a done iteration gets none of), and the loops it started
// have finished theirs.
func (e *executor) iterationDone(f *frameInst, iter int) bool {
	for id, s := range f.insts[iter] {
		if s.in != nil && e.g.Nodes[id].Kind != Merge {
			return false
		}
	}
	for ck, child := range f.children {
		if ck.iter != iter {
			continue
		}
		if len(child.deferred) > 0 {
			return false
		}
		for it := range child.insts {
			if child.insts[it] != nil && !e.iterationDone(child, it) {
				return false
			}
		}
	}
	return true
}
