package tape

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/plumb"
	"github.com/eagerflow/eagerflow/internal/regions"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Regions: the mechanism package control builds Cond, While and Scan on.
// A region is a stretch of recorded ops between two marks (a branch, one
// loop iteration) that the tape differentiates as a unit: RecordRegion
// puts a single node on the tape whose backward the caller supplies, and
// windowVJP differentiates the ops of one window.

// regionLeaf marks the tensors Detach makes: leaves that every tape tracks.
type regionLeaf struct{}

// mark returns the current position in the record; ops recorded from now on
// come after it.
func mark() uint64 { return seq.Load() }

// recordingTapes counts the tapes recording now, less those computing a
// gradient (whose own ops they do not record), plus Force's callers.
var recordingTapes atomic.Int32

// startRecording and stopRecording count a tape on and off, and with it
// the observation of ops that package eager does only while someone
// records.
// startRecording counts a tape on; keeps says it does not release its
// intermediates.
func startRecording(keeps bool) {
	recordingTapes.Add(1)
	if keeps {
		keepingTapes.Add(1)
	}
	eager.Activate()
}

func stopRecording(keeps bool) {
	recordingTapes.Add(-1)
	if keeps {
		keepingTapes.Add(-1)
	}
	eager.Deactivate()
}

// keepingTapes counts the recording tapes that keep their intermediates.
var keepingTapes atomic.Int64

// releasesInterior reports whether every recording tape releases its
// intermediates (tape.Options.ReleaseIntermediates): then a loop's
// interior values that no gradient rule reads may go at once.
func releasesInterior() bool { return anyRecording() && keepingTapes.Load() == 0 }

// anyRecording reports whether any tape is recording (somewhere in the
// process), that is, whether regions need recording at all. Tapes count
// themselves; a trace recording a function does not count.
func anyRecording() bool { return recordingTapes.Load() > 0 }

// recordsAny reports whether a recording tape records the ops that read any
// of xs: a tape is recording, and one of xs is a variable, watched, or
// computed by a recorded op. What a tape records follows from the tensors
// an op reads, not from the goroutine that runs it.
func recordsAny(xs ...*tensor.Tensor) bool {
	if !anyRecording() {
		return false
	}
	for _, x := range xs {
		if x != nil && tracked(x) {
			return true
		}
	}
	return false
}

// force runs fn recording its ops on tracked tensors as a tape would, even
// while the tapes have paused (a checkpointed loop recomputes an iteration
// inside a backward pass so that it can differentiate it).
func force(fn func()) {
	startRecording(false)
	defer stopRecording(false)
	fn()
}

// detach returns a tensor with x's value and no history that tapes track:
// ops on it are recorded, and their record ends at it. Control flow runs a
// branch or an iteration on detached inputs so that its record is its own.
func detach(x *tensor.Tensor) *tensor.Tensor {
	d := ops.StopGradient(x)
	plumb.Tensor.SetAutodiff(d, &tensor.Autodiff{Watch: regionLeaf{}})
	return d
}

// inRange reports whether n was recorded in (from, to].
func inRange(n *node, from, to uint64) bool { return n.seq > from && n.seq <= to }

// captures returns the tensors that the ops recorded in (from, to], walking
// back from outputs, read from outside the window: tracked tensors that no
// op in the window produced and that are not among inside (the window's own
// inputs). They are what a region must pass gradients to. The order is the
// order of first use, so it is deterministic.
func captures(from, to uint64, outputs, inside []*tensor.Tensor) []*tensor.Tensor {
	w := getWalker()
	defer w.put()
	nodes := w.back(outputs, func(n *node) bool { return inRange(n, from, to) })
	var caps []*tensor.Tensor
	addCap := func(x *tensor.Tensor) {
		if !slices.Contains(caps, x) && !slices.Contains(inside, x) && tracked(x) {
			caps = append(caps, x)
		}
	}
	slices.SortFunc(nodes, func(a, b *node) int { return cmp.Compare(a.seq, b.seq) })
	for _, n := range nodes {
		for _, x := range n.call.Inputs {
			if p := producer(x); p == nil || !inRange(p, from, to) {
				addCap(x)
			}
		}
	}
	// An output taken straight from outside the window is a capture too.
	for _, y := range outputs {
		if p := producer(y); p == nil || !inRange(p, from, to) {
			addCap(y)
		}
	}
	return caps
}

// dropUnread lets go of the values of the window's intermediates that no
// gradient rule of the window reads (eager.Op.GradReads): every op recorded
// in (from, to] that outputs depend on keeps, in place of such a tensor, a
// stand-in with its dtype, shape and record but no values
// (tensor.WithoutValues), so the memory goes unless the caller still holds
// the tensor itself. The outputs, the tensors in keep (the window's
// inputs), and the inputs and outputs of nested regions and custom
// gradients keep their values. A loop calls it after each stored iteration, so that its
// backward holds only what the body's gradient rules use.
func dropUnread(from, to uint64, outputs, keep []*tensor.Tensor) {
	d := droppers.Get().(*dropper)
	defer d.reset()
	d.nodes, d.stack = walkBack(outputs, func(n *node) bool { return inRange(n, from, to) }, d.seen, d.stack, d.nodes)
	for _, x := range slices.Concat(keep, outputs) { // the window's outputs are the caller's: never dropped
		d.read[x] = true
	}
	for _, n := range d.nodes {
		op := n.call.Op
		custom := n.custom != nil || op == nil // a custom rule may read anything
		for i, x := range n.call.Inputs {
			if custom || op.GradReadsInput(i) {
				d.read[x] = true
			}
		}
		if custom || op.GradReads == eager.ReadsAll || op.GradReads == eager.ReadsOutputs {
			for _, y := range n.outs {
				d.read[y] = true
			}
		}
	}
	for _, n := range d.nodes {
		for i, x := range n.call.Inputs {
			n.call.Inputs[i] = d.stub(x)
		}
		for i, y := range n.outs {
			n.outs[i] = d.stub(y)
		}
	}
	if releasesInterior() {
		for x := range d.stubs {
			if x.Traced() == nil { // a trace's values stay: its graph is built from them
				x.Release() // made in the window, read by no rule, kept by no loop value
			}
		}
	}
}

// dropper is DropUnread's scratch, recycled: loops call it every iteration.
type dropper struct {
	stack []*tensor.Tensor
	nodes []*node
	seen  map[*node]bool
	read  map[*tensor.Tensor]bool
	stubs map[*tensor.Tensor]*tensor.Tensor
}

var droppers = sync.Pool{New: func() any {
	return &dropper{seen: map[*node]bool{}, read: map[*tensor.Tensor]bool{}, stubs: map[*tensor.Tensor]*tensor.Tensor{}}
}}

// stub returns the stand-in for x, or x itself when x's values stay: read
// by a rule, a variable, or not made in this window.
func (d *dropper) stub(x *tensor.Tensor) *tensor.Tensor {
	if d.read[x] || x.IsVariable() || !d.seen[producer(x)] {
		return x
	}
	s, ok := d.stubs[x]
	if !ok {
		s = plumb.Tensor.WithoutValues(x).(*tensor.Tensor)
		d.stubs[x] = s
	}
	return s
}

func (d *dropper) reset() {
	clear(d.stack[:cap(d.stack)])
	clear(d.nodes[:cap(d.nodes)])
	d.stack, d.nodes = d.stack[:0], d.nodes[:0]
	clear(d.seen)
	clear(d.read)
	clear(d.stubs)
	droppers.Put(d)
}

// windowVJP differentiates the ops recorded in (from, to]: given the
// gradients seeds of outputs (nil entries mean zero), it returns the
// gradients of sources (nil where a source gets none). Ops it runs are
// recorded by any tape that is recording, so VJPs of VJPs work.
func windowVJP(outputs, seeds, sources []*tensor.Tensor, from, to uint64, deferred []bool) ([]*tensor.Tensor, []regions.Product) {
	b := newBackprop(sources)
	for i, s := range sources {
		if i < len(deferred) && deferred[i] {
			if b.deferred == nil {
				b.deferred = map[gradKey]int{}
			}
			b.deferred[keyOf(s)] = i
		}
	}
	for i, y := range outputs {
		if seeds[i] == nil {
			continue
		}
		if prev := b.grad(y); prev != nil {
			b.set(y, ops.Add(prev, seeds[i]), true)
		} else {
			b.set(y, seeds[i], false) // the caller's
		}
	}
	w := getWalker()
	defer w.put()
	for _, n := range w.latestFirst(outputs, func(n *node) bool { return inRange(n, from, to) }) {
		b.step(n)
	}
	out := make([]*tensor.Tensor, len(sources))
	for i, s := range sources {
		out[i] = b.grad(s)
	}
	products := b.products
	b.done()
	return out, products
}

// recordRegion records one node that produces outputs from inputs and whose
// backward is backward (given one gradient per output, nil where an output
// gets none, it returns one per input, nil for none). It returns fresh tensors with the
// outputs' values that carry the node; callers hand those on. When no tape
// is recording, or no input is tracked, it returns outputs unchanged.
// owned says the gradients backward returns are its own (node.ownsGrads).
func recordRegion(inputs, outputs []*tensor.Tensor, backward func(dys []*tensor.Tensor) []*tensor.Tensor, release func(keep func(*tensor.Tensor) bool), owned bool) []*tensor.Tensor {
	if !anyRecording() || !slices.ContainsFunc(inputs, tracked) {
		return outputs
	}
	fresh := make([]*tensor.Tensor, len(outputs))
	for i, y := range outputs {
		fresh[i] = ops.StopGradient(y)
	}
	record(&node{call: &eager.Call{Inputs: slices.Clone(inputs)}, outs: fresh, custom: backward, release: release, ownsGrads: owned})
	return fresh
}

// releaseWindow releases the values made by the ops recorded in (from,
// to] that outputs depend on, but keep's and those an op passed on from
// its inputs (regions.ReleaseWindow).
func releaseWindow(from, to uint64, outputs []*tensor.Tensor, keep func(*tensor.Tensor) bool) {
	w := getWalker()
	defer w.put()
	for _, n := range w.back(outputs, func(n *node) bool { return inRange(n, from, to) }) {
		if n.release != nil {
			n.release(keep) // a region inside the window
		}
		for _, o := range n.outs {
			if producer(o) != n || keep(o) || (n.call != nil && isOneOf(o, n.call.Inputs)) {
				continue
			}
			o.Release()
		}
	}
}

// regionsImpl is the tape's side of package internal/regions.
type regionsImpl struct{}

func init() { regions.Install(regionsImpl{}) }

func (regionsImpl) Mark() uint64                           { return mark() }
func (regionsImpl) Recording() bool                        { return anyRecording() }
func (regionsImpl) Records(xs ...*tensor.Tensor) bool      { return recordsAny(xs...) }
func (regionsImpl) Force(fn func())                        { force(fn) }
func (regionsImpl) Detach(x *tensor.Tensor) *tensor.Tensor { return detach(x) }
func (regionsImpl) DropUnread(from, to uint64, outputs, keep []*tensor.Tensor) {
	dropUnread(from, to, outputs, keep)
}
func (regionsImpl) Captures(from, to uint64, outputs, inside []*tensor.Tensor) []*tensor.Tensor {
	return captures(from, to, outputs, inside)
}
func (regionsImpl) WindowVJP(outputs, seeds, sources []*tensor.Tensor, from, to uint64, deferred []bool) ([]*tensor.Tensor, []regions.Product) {
	return windowVJP(outputs, seeds, sources, from, to, deferred)
}
func (regionsImpl) RecordRegion(inputs, outputs []*tensor.Tensor, backward func(dys []*tensor.Tensor) []*tensor.Tensor, release func(keep func(*tensor.Tensor) bool)) []*tensor.Tensor {
	return recordRegion(inputs, outputs, backward, release, true)
}
func (regionsImpl) ReleaseWindow(from, to uint64, outputs []*tensor.Tensor, keep func(*tensor.Tensor) bool) {
	releaseWindow(from, to, outputs, keep)
}
