package flow

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/regions"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// iteration is one loop iteration's record: its detached inputs (loop
// values, then per-iteration inputs), its outputs (loop values, then
// per-iteration outputs), and the window of the record holding its ops.
// With checkpointing only the input values are kept.
type iteration struct {
	in, out  []*tensor.Tensor
	from, to uint64
}

// Loop is the engine under While, Fori and Scan: it runs a loop eagerly,
// and records it as one region of the tapes that record it.
type Loop struct {
	Name       string // the construct, for errors
	NVars      int    // loop values
	Checkpoint bool   // keep only each iteration's inputs; recompute
	// Body runs one iteration on detached inputs (loop values first, then
	// per-iteration inputs) and returns the new loop values followed by the
	// per-iteration outputs.
	Body func(in []*tensor.Tensor) []*tensor.Tensor
	// Recording, iters and Caps hold the region while a tape records: Caps
	// are the tensors from outside that the iterations read.
	Recording bool
	iters     []iteration
	Caps      []*tensor.Tensor
	Trips     int // iterations run
	// Decided holds the predicates computed from variables alone (no
	// trace's values) that the loop decided on, for a trace its results
	// turn out to belong to.
	Decided []*tensor.Tensor
	// Look, when set, is shown the first predicate and the values after
	// the first iteration; when it returns true (it has traced the loop
	// instead) the loop stops, with Looked set.
	Look   func(xs []*tensor.Tensor) bool
	Looked bool
}

// Step runs iteration i: vars are the current loop values, extra the
// iteration's own inputs. It returns the new loop values and the
// iteration's outputs, checking that loop values keep dtype and shape.
func (l *Loop) Step(i int, vars, extra []*tensor.Tensor) (next, outs []*tensor.Tensor) {
	l.Trips++
	in := append(append(make([]*tensor.Tensor, 0, len(vars)+len(extra)), vars...), extra...)
	if !l.Recording {
		res := l.Body(in)
		l.check(vars, res)
		return res[:l.NVars], res[l.NVars:]
	}
	// The iteration reads recorded views of its inputs: its own record
	// starts after them (so a window's VJP stops there), while an outer tape
	// can still follow them back to the previous iteration (so gradients of
	// gradients see every path).
	for k, x := range in {
		in[k] = ops.Identity(x)
	}
	from := regions.Mark()
	res := l.Body(in)
	to := regions.Mark()
	l.check(vars, res)
	for _, c := range regions.Captures(from, to, res, in) {
		if !containsTensor(l.Caps, c) {
			l.Caps = append(l.Caps, c)
		}
	}
	it := iteration{in: in, out: res, from: from, to: to}
	if !l.Checkpoint {
		// The backward needs only what the body's gradient rules read.
		regions.DropUnread(from, to, res, in)
	}
	if l.Checkpoint {
		// Keep the input values only; the record of this iteration becomes
		// garbage once the outputs are cut off from it below.
		it.in = detachAll(in, ops.StopGradient)
		it.out, it.from, it.to = nil, 0, 0
		res = PassThrough(res, func() []*tensor.Tensor { return detachAll(res, ops.StopGradient) })
	}
	l.iters = append(l.iters, it)
	return res[:l.NVars], res[l.NVars:]
}

// While steps the loop from vars while cond holds, at most maxIter times
// (0: no bound), and returns the last loop values.
func (l *Loop) While(cond func([]*tensor.Tensor) *tensor.Tensor, vars []*tensor.Tensor, maxIter int) []*tensor.Tensor {
	for i := 0; maxIter == 0 || i < maxIter; i++ {
		p := cond(vars)
		if i == 0 && l.Look != nil && l.Look([]*tensor.Tensor{p}) {
			l.Looked = true
			return nil
		}
		holds := Predicate(l.Name, p)
		if FromVariables(p) {
			l.Decided = append(l.Decided, p)
		}
		if !holds {
			break
		}
		vars, _ = l.Step(i, vars, nil)
		if i == 0 && l.Look != nil && l.Look(vars) {
			l.Looked = true
			return nil
		}
	}
	return vars
}

func (l *Loop) check(before, after []*tensor.Tensor) {
	if len(after) < l.NVars {
		Fail(l.Name, tensor.ErrArity, before, "the body returned %d values for %d loop values", len(after), l.NVars)
	}
	for k := 0; k < l.NVars; k++ {
		b, a := before[k], after[k]
		if a == nil {
			Fail(l.Name, tensor.ErrArity, before, "the body returned nil for loop value %d", k)
		}
		if a.DType() != b.DType() || !a.Shape().Equal(b.Shape()) {
			Fail(l.Name, tensor.ErrShape, before, "loop value %d changed from %s to %s in the body", k, tensor.Describe(b), tensor.Describe(a))
		}
	}
}

// unheld reports whether none of lists holds x.
func unheld(x *tensor.Tensor, lists ...[]*tensor.Tensor) bool {
	for _, list := range lists {
		if containsTensor(list, x) {
			return false
		}
	}
	return true
}

func containsTensor(list []*tensor.Tensor, x *tensor.Tensor) bool {
	for _, y := range list {
		if y == x {
			return true
		}
	}
	return false
}

func detachAll(xs []*tensor.Tensor, f func(*tensor.Tensor) *tensor.Tensor) []*tensor.Tensor {
	out := make([]*tensor.Tensor, len(xs))
	for i, x := range xs {
		out[i] = f(x)
	}
	return out
}

// Finish records the region over the whole loop. inputs are the initial
// loop values followed by every iteration's own inputs (in iteration
// order); outputs the final loop values followed by every iteration's own
// outputs. The region node's inputs add the captured tensors.
func (l *Loop) Finish(inputs, outputs []*tensor.Tensor) []*tensor.Tensor {
	if !l.Recording {
		return outputs
	}
	regionIn := append(append([]*tensor.Tensor{}, inputs...), l.Caps...)
	tracked := false
	for _, x := range regionIn {
		if x.Autodiff() != nil || x.IsVariable() {
			tracked = true
			break
		}
	}
	if !tracked {
		// Nothing outside depends on the loop's record: drop it.
		return PassThrough(outputs, func() []*tensor.Tensor { return detachAll(outputs, ops.StopGradient) })
	}
	return PassThrough(outputs, func() []*tensor.Tensor { return regions.RecordRegion(regionIn, outputs, l.Backward, l.release) })
}

// release lets the buffers of the loop's record go back to their device's
// cache once a tape that releases its intermediates is done with it
// (regions.RecordRegion): each stored iteration's window, and the views
// of its inputs the loop made, but what keep reports and the captures.
func (l *Loop) release(keep func(*tensor.Tensor) bool) {
	for _, it := range l.iters {
		if it.out != nil {
			regions.ReleaseWindow(it.from, it.to, it.out, keep)
		}
		for _, x := range it.in {
			if !keep(x) && !containsTensor(l.Caps, x) {
				x.Release()
			}
		}
	}
	l.iters = nil
}

// PassThrough runs fn, which returns a copy of each of xs made for the
// tape's bookkeeping (a region's fresh outputs, values cut off from their
// record). While a trace records xs, fn's ops are not traced and the
// copies stand for xs in the graph: the graph computes what the eager code
// computes, and a tape around a later call differentiates through it
// (a traced StopGradient would cut it off).
func PassThrough(xs []*tensor.Tensor, fn func() []*tensor.Tensor) []*tensor.Tensor {
	if t := RecordingOf(xs...); t != nil {
		return t.PassThrough(xs, fn)
	}
	return fn()
}

// Backward runs the iterations in reverse. dys holds the final loop
// values' gradients, then every iteration's own outputs' gradients; it
// returns the initial loop values' gradients, every iteration's own
// inputs' gradients, then the captures'.
//
// A capture that an iteration multiplies by a matrix (an RNN's recurrent
// kernel: h·W) gets that product's share of its gradient from all the
// iterations at once: one product of their operands side by side
// (aᵢᵀ·dyᵢ summed is [a₁; …; aₙ]ᵀ·[dy₁; …; dyₙ]), where each iteration
// took a product and an addition of its own (regions.WindowVJPProducts).
// The output gradients are kept for it until the end, as many as the
// loop's recorded activations: a checkpointed loop, which keeps fewer,
// sums iteration by iteration.
func (l *Loop) Backward(dys []*tensor.Tensor) []*tensor.Tensor {
	n := len(l.iters)
	nextra := 0
	if n > 0 {
		nextra = len(l.iters[0].in) - l.NVars
	}
	nout := (len(dys) - l.NVars) / max(n, 1)
	g := append([]*tensor.Tensor{}, dys[:l.NVars]...)
	extraGrads := make([]*tensor.Tensor, n*nextra)
	capGrads := make([]*tensor.Tensor, len(l.Caps))
	summed := make([]bool, len(l.Caps)) // capGrads[k] is a sum made here
	var products []regions.Product      // the captures' deferred shares, Source their index in Caps
	var stashed []*tensor.Tensor        // their operands and gradients, held until the end
	var deferred []bool
	if !l.Checkpoint && len(l.Caps) > 0 {
		deferred = make([]bool, l.NVars+nextra+len(l.Caps))
		for k := range l.Caps {
			deferred[l.NVars+nextra+k] = true
		}
	}
	for i := n - 1; i >= 0; i-- {
		it := l.iters[i]
		if l.Checkpoint {
			it = l.recompute(it)
		}
		seeds := append(append([]*tensor.Tensor{}, g...), dys[l.NVars+i*nout:l.NVars+(i+1)*nout]...)
		res, ps := regions.WindowVJPProducts(it.out, seeds, append(append([]*tensor.Tensor{}, it.in...), l.Caps...), it.from, it.to, deferred)
		for _, p := range ps {
			p.Source -= l.NVars + nextra
			products = append(products, p)
			stashed = append(stashed, p.A, p.DY)
		}
		if !eager.Observing() {
			// The last iteration's gradients were made here (the first
			// seeds are the caller's): once this iteration has read them,
			// nothing else holds them, unless the window passed one on.
			for _, s := range g {
				if s != nil && unheld(s, dys, res, capGrads, extraGrads, stashed) {
					s.Release()
				}
			}
		}
		copy(g, res[:l.NVars])
		copy(extraGrads[i*nextra:], res[l.NVars:l.NVars+nextra])
		for k, d := range res[l.NVars+nextra:] {
			if d == nil {
				continue
			}
			if capGrads[k] == nil {
				capGrads[k] = d
				continue
			}
			sum := ops.Add(capGrads[k], d)
			// With no tape recording these ops, the parts of the running sum
			// go back to the device's cache at once, unless something else
			// holds them (a rule may hand one tensor to several inputs).
			if !eager.Observing() {
				// The first part came from an earlier window: released too
				// unless something else still holds it.
				if prev := capGrads[k]; summed[k] || unheld(prev, dys, res, g, extraGrads, capGrads[:k], capGrads[k+1:], stashed) {
					prev.Release()
				}
				if unheld(d, dys, res[:l.NVars+nextra], capGrads, stashed) {
					d.Release()
				}
			}
			capGrads[k], summed[k] = sum, true
		}
	}
	for k := range l.Caps {
		part := productSum(products, k)
		switch {
		case part == nil:
		case capGrads[k] == nil:
			capGrads[k] = part
		default:
			sum := ops.Add(capGrads[k], part)
			if !eager.Observing() { // the parts made here go back to the device's cache
				part.Release()
				if summed[k] {
					capGrads[k].Release()
				}
			}
			capGrads[k] = sum
		}
	}
	return append(append(g, extraGrads...), capGrads...)
}

// productSum is the sum of capture k's deferred products (nil for none),
// as one matrix product per side the capture was on: Σ aᵢᵀ·dyᵢ =
// [a₁; …]ᵀ·[dy₁; …] and Σ dyᵢ·aᵢᵀ = [dy₁ …]·[a₁ …]ᵀ. The output
// gradients the pass made go back to the device's cache once read.
func productSum(products []regions.Product, k int) *tensor.Tensor {
	var sum *tensor.Tensor
	for _, left := range []bool{false, true} {
		var as, dys []*tensor.Tensor
		var owned []*tensor.Tensor
		for _, p := range products {
			if p.Source == k && p.Left == left {
				as, dys = append(as, p.A), append(dys, p.DY)
				if p.Owned {
					owned = append(owned, p.DY)
				}
			}
		}
		if len(as) == 0 {
			continue
		}
		axis := 0
		if left {
			axis = 1
		}
		a, dy := as[0], dys[0]
		if len(as) > 1 {
			a, dy = ops.Concatenate(axis, as...), ops.Concatenate(axis, dys...)
		}
		var part *tensor.Tensor
		if left {
			part = ops.MatMulT(dy, a, false, true)
		} else {
			part = ops.MatMulT(a, dy, true, false)
		}
		if !eager.Observing() {
			for _, t := range owned {
				t.Release()
			}
			if len(as) > 1 {
				a.Release()
				dy.Release()
			}
		}
		if sum == nil {
			sum = part
		} else {
			sum = ops.Add(sum, part)
		}
	}
	return sum
}

// recompute reruns a checkpointed iteration on its saved inputs with
// recording forced on (the tape pauses its own recording while it
// differentiates), returning the iteration with its record. The saved
// inputs are leaves, so gradients of gradients do not pass through a
// checkpointed loop.
func (l *Loop) recompute(it iteration) (rec iteration) {
	regions.Force(func() {
		in := detachAll(it.in, regions.Detach)
		from := regions.Mark()
		out := l.Body(in)
		rec = iteration{in: in, out: out, from: from, to: regions.Mark()}
	})
	return rec
}
