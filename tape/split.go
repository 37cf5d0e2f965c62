package tape

import (
	"github.com/eagerflow/eagerflow/tensor"
)

// GradientSplit is GradientSeeded (seed nil: ones) in two passes over the
// record, the second when the caller asks: the first computes only what
// the gradients of sources[:first] need and returns them; rest then
// computes the other sources' gradients from the output gradients the
// first pass kept (nothing is computed twice) and returns them, in
// sources' order. A pipeline stage posts its input's gradient to the
// stage before it and computes its weights' later (the zero-bubble
// schedules' split of the backward pass into B and W). The values are
// GradientSeeded's, bit for bit. rest may be called once, from any
// goroutine but not while another question is put to this tape; until
// it is, the pass holds the output gradients it kept (a program that
// never calls it leaves them to the collector), and a one-shot tape
// counts as asked. first must be 1 to len(sources).
func (t *Tape) GradientSplit(target, seed *tensor.Tensor, sources []*tensor.Tensor, first int) (firsts []*tensor.Tensor, rest func() []*tensor.Tensor) {
	t.claim("GradientSplit", target, sources...)
	if first < 1 || first > len(sources) {
		t.answered.Store(true)
		panic(tensor.NewError("tape", "GradientSplit", tensor.ErrValue, nil, "",
			"first is %d of %d sources: it must be 1 to the number of sources", first, len(sources)))
	}
	resume := t.pause()
	p := t.begin(target, seed, sources)
	s := p.b.firstPass(p.nodes, sources[:first])
	for i := range first {
		p.final(i)
	}
	resume()
	asked := false
	return p.out[:first:first], func() []*tensor.Tensor {
		if asked {
			panic(tensor.NewError("tape", "GradientSplit", tensor.ErrValue, nil, "", "the rest of a split gradient was asked for twice"))
		}
		asked = true
		defer t.answered.Store(true)
		defer t.pause()()
		p.b.secondPass(p.nodes, s)
		for i := first; i < len(sources); i++ {
			p.final(i)
		}
		out := p.out[first:]
		p.end()
		return out
	}
}

// split is what a split pass's first half leaves its second: the nodes
// whose rules ran for the inputs that lead to the first sources, and the
// rules still owed for their other inputs.
type split struct {
	leading map[*node]bool
	later   map[*node]owed
}

// owed is a rule's part left to the second pass.
type owed struct {
	dys, made []*tensor.Tensor
	rest      []bool           // the inputs the second pass accumulates into
	dxs       []*tensor.Tensor // a region's gradients, all given at once
}

// firstPass runs the rules of nodes (latest first) only for the inputs
// whose gradients reach first (the sources wanted first: an input leads
// there when it is one of them or an op's output with such an input). A
// node whose rule owes other inputs too keeps its output gradients for
// the second pass; they are complete by then, since every reader of a
// tensor that leads to first runs its rule for it in this pass.
func (b *backprop) firstPass(nodes []*node, first []*tensor.Tensor) split {
	leads := make(map[gradKey]bool, len(first)+len(nodes))
	for _, s := range first {
		leads[keyOf(s)] = true
	}
	leading := make(map[*node]bool, len(nodes))
	for i := len(nodes) - 1; i >= 0; i-- { // earliest first
		n := nodes[i]
		if n.call == nil {
			continue
		}
		for _, x := range n.call.Inputs {
			if leads[keyOf(x)] {
				leading[n] = true
				break
			}
		}
		if leading[n] {
			for _, o := range n.outs {
				leads[keyOf(o)] = true
			}
		}
	}
	later := make(map[*node]owed)
	for _, n := range nodes {
		if !leading[n] {
			continue
		}
		dys, made := b.outGrads(n)
		if dys == nil {
			continue
		}
		inputs := n.call.Inputs
		now, rest := make([]bool, len(inputs)), make([]bool, len(inputs))
		anyRest := false
		for i, x := range inputs {
			now[i] = leads[keyOf(x)] && needsGrad(x)
			rest[i] = !leads[keyOf(x)] && needsGrad(x)
			anyRest = anyRest || rest[i]
		}
		o := owed{dys: dys, made: made, rest: rest}
		if anyRest {
			// Held for the second pass: counted as used before the first
			// pass accumulates, so that nothing it replaces recycles one
			// of them meanwhile (an input's earlier gradient that is this
			// node's dy, summed with it).
			for _, d := range dys {
				b.uses[d]++
			}
		}
		if n.custom != nil {
			o.dxs = b.rule(n, dys, b.needs(n, nil))
			b.accumulate(n, dys, o.dxs, now)
		} else {
			b.apply(n, dys, now)
		}
		if !anyRest {
			b.finish(dys, made)
			continue
		}
		later[n] = o
	}
	return split{leading, later}
}

// secondPass runs the rules the first pass left: those it owed, and
// those of the nodes that do not lead to the first sources.
func (b *backprop) secondPass(nodes []*node, s split) {
	for _, n := range nodes {
		o, ok := s.later[n]
		switch {
		case ok && o.dxs != nil:
			b.accumulate(n, o.dys, o.dxs, o.rest)
		case ok:
			b.apply(n, o.dys, o.rest)
		case !s.leading[n]:
			b.step(n)
			continue
		default:
			continue
		}
		for _, d := range o.dys {
			b.uses[d]--
		}
		b.finish(o.dys, o.made)
	}
}
