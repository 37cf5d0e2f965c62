package graph

import (
	"slices"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Running a graph lowered to regions (record_regions.go) while its
// device records. A frame runs once: its loop values are copied into
// buffers of the recording, its condition is computed, and CaptureWhile
// records the body (its steps, the copy of each next value into its loop
// value's buffer, the condition again) as a loop the device repeats while
// the condition holds, with no wait for the host; the Exits read the loop
// buffers. A Cond runs its Switches (each output is its data), then
// CaptureIf records each branch on the predicate (the true one) or its
// negation, each copying its values into the buffers its Merges read.

// loopGraph is a graph lowered to regions, ready to run.
type loopGraph struct {
	*lowering
	pinned map[Output]bool // results: never released
	// live holds the stacks a run made, by their handle (record_stacks.go).
	live map[*tensor.Tensor]*liveStack
	// depths are the capacities of the stacks of guessed depth that a run
	// outgrew (by node; record_stacks.go), and over, made by a run with
	// such stacks, is its Bool flag that one was pushed past its capacity.
	depths map[*Node]int
	over   *tensor.Tensor
}

// lowerLoops lowers g, or says why it cannot be ("" when it can).
func lowerLoops(g *Graph) (*loopGraph, string) {
	lw, why := lowerRegions(g)
	if why != "" {
		return nil, why
	}
	lg := &loopGraph{lowering: lw, pinned: map[Output]bool{}}
	for _, res := range g.Result {
		lg.pinned[res] = true
	}
	return lg, ""
}

// run queues the graph's work on args while dev records (Record's fn);
// an op's error panics, as the ops do.
func (lg *loopGraph) run(dev device.LoopCapturer, args []*tensor.Tensor) []*tensor.Tensor {
	vals := make(map[Output]*tensor.Tensor, len(lg.g.Nodes))
	lg.live, lg.over = map[*tensor.Tensor]*liveStack{}, nil
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
	for _, n := range lg.nodesOf(s) {
		for _, in := range n.Inputs {
			if lg.isTop(in.Node) {
				out = append(out, in)
			}
		}
	}
	return out
}

// isTop reports whether n is a node of the top level.
func (lg *loopGraph) isTop(n *Node) bool { return lg.regionOf[n.ID] == lg.top }

// runStep runs one step, recording its values in vals, and returns the
// values it made that a release may free (an op's outputs other than
// its inputs handed back).
func (lg *loopGraph) runStep(dev device.LoopCapturer, s step, vals map[Output]*tensor.Tensor) map[Output]bool {
	switch {
	case s.loop != nil:
		lg.runLoop(dev, s.loop, vals)
		return nil
	case s.cond != nil:
		lg.runCond(dev, s.cond, vals)
		return nil
	}
	n := s.node
	ins := make([]*tensor.Tensor, len(n.Inputs))
	for i, in := range n.Inputs {
		ins[i] = vals[in]
	}
	switch n.Kind {
	case Switch:
		// Inside its frame's loop the predicate holds; the false side is
		// the loop value an Exit reads when the loop ends.
		vals[n.Out(0)], vals[n.Out(1)] = ins[0], ins[0]
		return nil
	case Stack:
		vals[n.Out(0)] = lg.newStack(n)
		return nil
	case StackPush:
		lg.push(ins[0], ins[1])
		vals[n.Out(0)] = ins[1]
		return nil
	case StackPop:
		vals[n.Out(0)] = lg.pop(ins[0])
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
	pred := lg.condition(dev, f, vals)
	err := dev.CaptureWhile(pred.Buffer(), func() (device.Buffer, error) {
		if f.recond {
			lg.condition(dev, f, vals)
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
		return lg.condition(dev, f, vals).Buffer(), nil
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

// runCond records Cond c: its Switches pass their data on, and each
// branch, recorded as an IF node on the predicate (the true branch) or
// its negation, copies its values into the buffers its Merges read.
func (lg *loopGraph) runCond(dev device.LoopCapturer, c *branching, vals map[Output]*tensor.Tensor) {
	for _, sw := range c.switches {
		v := vals[sw.Inputs[0]]
		vals[sw.Out(0)], vals[sw.Out(1)] = v, v
	}
	bufs := make([]*tensor.Tensor, len(c.merges))
	pred := vals[c.pred]
	for _, b := range []int{1, 0} {
		if len(c.branches[b].steps) == 0 && len(c.merges) == 0 {
			continue // nothing to do on that side (a gate's other side): no empty body
		}
		err := dev.CaptureIf(pred.Buffer(), b == 0, func() error {
			for _, s := range c.branches[b].steps {
				lg.runStep(dev, s, vals)
			}
			for i, m := range c.merges {
				out := vals[m.Inputs[b]]
				if bufs[i] == nil {
					bufs[i] = emptyLike(out)
				}
				mustCopy(bufs[i], out)
			}
			return nil
		})
		if err != nil {
			panic(err)
		}
	}
	for i, m := range c.merges {
		vals[m.Out(0)] = bufs[i]
	}
}

// condition runs f's condition on the values in vals (its Conds and
// loops recorded too) and returns the predicate.
func (lg *loopGraph) condition(dev device.LoopCapturer, f *region, vals map[Output]*tensor.Tensor) *tensor.Tensor {
	for _, s := range f.condSteps {
		lg.runStep(dev, s, vals)
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
