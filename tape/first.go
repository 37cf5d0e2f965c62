package tape

import (
	"github.com/eagerflow/eagerflow/tensor"
)

// GradientFirst is GradientSeeded (seed nil: ones) in two passes over the
// record: the first computes only what the gradients of sources[:first]
// need and hands them to ready; the second then computes the other
// sources' gradients from the output gradients the first pass kept, so
// nothing is computed twice. A pipeline stage gives its input's gradient
// to the stage before it while it goes on with its weights' (the
// zero-bubble schedules' split of the backward pass into B and W). The
// values are GradientSeeded's, bit for bit. ready runs once, on the
// calling goroutine, with what the result holds for sources[:first]; it
// may give them to another goroutine to read, but must not release them
// or use this tape. first must be 1 to len(sources).
func (t *Tape) GradientFirst(target, seed *tensor.Tensor, sources []*tensor.Tensor, first int, ready func(g []*tensor.Tensor)) []*tensor.Tensor {
	t.claim("GradientFirst", target, sources...)
	defer t.answered.Store(true)
	if first < 1 || first > len(sources) || ready == nil {
		panic(tensor.NewError("tape", "GradientFirst", tensor.ErrValue, nil, "",
			"first is %d of %d sources (ready nil: %t): it must be 1 to the number of sources, with a ready func", first, len(sources), ready == nil))
	}
	return t.gradient(target, seed, sources, question{first: first, readyFirst: ready})
}

// twoPasses runs the rules of nodes (latest first) in two passes: the
// first only for the inputs whose gradients reach first (the sources
// wanted first: an input leads there when it is one of them or an op's
// output with such an input), then between, then the rest. A node whose
// rule owes both keeps its output gradients from the first pass to the
// second; they are complete by then, since every reader of a tensor that
// leads to first runs its rule for it in the first pass.
func (b *backprop) twoPasses(nodes []*node, first []*tensor.Tensor, between func()) {
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
	type owed struct {
		dys, made []*tensor.Tensor
		rest      []bool           // the inputs the second pass accumulates into
		dxs       []*tensor.Tensor // a region's gradients, all given at once
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
		// Held for the second pass: counted as used, so that nothing
		// the first pass replaces recycles one of them meanwhile.
		for _, d := range dys {
			b.uses[d]++
		}
		later[n] = o
	}
	between()
	for _, n := range nodes {
		o, ok := later[n]
		switch {
		case ok && o.dxs != nil:
			b.accumulate(n, o.dys, o.dxs, o.rest)
		case ok:
			b.apply(n, o.dys, o.rest)
		case !leading[n]:
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
