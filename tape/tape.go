package tape

import (
	"cmp"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"unsafe"
	"weak"

	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/consts"
	"github.com/eagerflow/eagerflow/internal/plumb"
	"github.com/eagerflow/eagerflow/internal/regions"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Options configure a tape; the zero value is a one-shot tape that returns
// nil for unconnected sources.
type Options struct {
	// Persistent tapes answer Gradient and Jacobian any number of times.
	Persistent bool
	// UnconnectedZeros makes Gradient return zeros, not nil, for a source
	// the target does not depend on.
	UnconnectedZeros bool
	// ReleaseIntermediates makes a one-shot tape release, when Gradient
	// returns, every tensor its recorded ops made on the way to the target
	// (not the target, the sources or the gradients), so that their
	// buffers serve the next training step instead of waiting for the
	// garbage collector. Intermediates the caller still holds must not be
	// used afterwards: they panic with tensor.ErrReleased. Not with
	// Persistent (New panics). While every recording tape releases its
	// intermediates, a loop's (control.While, Scan) interior values that
	// no gradient rule reads go back to the cache at the end of their
	// iteration, so values of one iteration must reach the next as loop
	// values, not through Go variables.
	ReleaseIntermediates bool
	// HalfGradients makes Gradient return, for a float source that the
	// recorded ops on the way to the target read only through one Cast
	// to a half type (a mixed-precision layer's float32 weight, cast to
	// bfloat16 or float16), the gradient in that half type: the Cast's
	// output's gradient as it is, which widened is the float gradient
	// exactly, without the kernel that widens it. nn's optimizers take
	// such gradients for their float variables (nn.TrainStep asks for
	// them).
	HalfGradients bool
}

// Tape records ops while it is recording and differentiates them.
type Tape struct {
	opts  Options
	start uint64
	stop  atomic.Uint64 // seq at Stop; 0 while recording
	used  atomic.Bool   // a one-shot tape was asked its question
	// answered: a one-shot tape has answered, so watch sets may drop it
	// (not before: a Watch on another goroutine while it differentiates
	// must leave it watching its sources).
	answered atomic.Bool
	// recording is shared with the cleanup that deactivates a tape dropped
	// while recording: whichever of Stop and the cleanup swaps it to false
	// deactivates, so a tape is counted off exactly once.
	recording *atomic.Bool
	self      weak.Pointer[Tape] // how watch sets name this tape
	keeps     bool               // not ReleaseIntermediates: counted in keepingTapes while recording
}

// New starts a tape that records from now on. Call Stop when the forward
// computation is done (a one-shot tape stops itself in Gradient).
func New(opts ...Options) *Tape {
	t := &Tape{start: seq.Load(), recording: new(atomic.Bool)}
	t.self = weak.Make(t)
	if len(opts) > 0 {
		t.opts = opts[0]
	}
	if t.opts.Persistent && t.opts.ReleaseIntermediates {
		panic(tensor.NewError("tape", "New", tensor.ErrValue, nil, "",
			"ReleaseIntermediates needs a one-shot tape: a persistent one may be asked again"))

	}
	t.recording.Store(true)
	t.keeps = !t.opts.ReleaseIntermediates
	startRecording(t.keeps)
	// A tape dropped while recording stops counting as active.
	runtime.AddCleanup(t, deactivate, activity{t.recording, t.keeps})
	return t
}

// deactivate counts a recording tape off, once.
func deactivate(a activity) {
	if a.recording.CompareAndSwap(true, false) {
		stopRecording(a.keeps)
	}
}

// activity is what deactivate needs of a tape: whether it records, and
// whether it keeps its intermediates.
type activity struct {
	recording *atomic.Bool
	keeps     bool
}

// Stop ends recording. Ops run afterwards are not on this tape.
func (t *Tape) Stop() {
	if t.recording.Load() {
		t.stop.CompareAndSwap(0, seq.Load())
		deactivate(activity{t.recording, t.keeps})
	}
}

// inWindow reports whether n was recorded while t was recording.
func (t *Tape) inWindow(n *node) bool {
	if n.seq <= t.start {
		return false
	}
	stop := t.stop.Load()
	return stop == 0 || n.seq <= stop
}

// watchSet is the tapes watching a leaf, held weakly: a tensor watched by
// many short-lived tapes (one per training step) keeps none of them alive,
// and Watch drops the ones that are gone or have answered their one
// question.
type watchSet []weak.Pointer[Tape]

// Watch makes t differentiate with respect to xs: ops on them are recorded
// from now on. Variables are watched by every tape without asking. xs keep
// no reference to t.
func (t *Tape) Watch(xs ...*tensor.Tensor) {
	needAll("Watch", "tensor", xs)
	for _, x := range xs {
		for {
			old := x.Autodiff()
			a := &tensor.Autodiff{}
			var set watchSet
			if old != nil {
				*a = *old
				set, _ = old.Watch.(watchSet)
			}
			if slices.Contains(set, t.self) {
				break
			}
			next := make(watchSet, 0, len(set)+1)
			for _, p := range set {
				if w := p.Value(); w != nil && !(w.answered.Load() && !w.opts.Persistent) {
					next = append(next, p)
				}
			}
			a.Watch = append(next, t.self)
			if plumb.Tensor.CompareAndSwapAutodiff(x, old, a) {
				break
			}
		}
	}
}

func (t *Tape) watches(x *tensor.Tensor) bool {
	if x.IsVariable() {
		return true
	}
	if a := x.Autodiff(); a != nil {
		set, _ := a.Watch.(watchSet)
		return slices.Contains(set, t.self)
	}
	return false
}

// Gradient returns d target / d source for each source, each with its
// source's shape and dtype (nil, or zeros with UnconnectedZeros, where the
// target does not depend on it). target may have any shape: its gradient is
// seeded with ones, which differentiates the sum of its elements. The ops
// that compute the gradient are themselves recorded by any other tape that
// is recording, which gives higher-order gradients. A one-shot tape stops
// and may not be asked again: that panics with a *tensor.Error, as does a
// target computed after Stop by an op another tape recorded (compute the
// loss before Stop: ops run after it are not on this tape).
func (t *Tape) Gradient(target *tensor.Tensor, sources ...*tensor.Tensor) []*tensor.Tensor {
	return t.GradientSeeded(target, nil, sources...)
}

// GradientSeeded is Gradient with the target's output gradient given
// (seed: target's shape and dtype; nil means ones): it returns the
// vector-Jacobian product seed·J.
func (t *Tape) GradientSeeded(target, seed *tensor.Tensor, sources ...*tensor.Tensor) []*tensor.Tensor {
	t.claim("Gradient", target, sources...)
	defer t.answered.Store(true)
	return t.gradient(target, seed, sources, nil)
}

// GradientEach is GradientSeeded (seed nil: ones) that also hands each
// source's gradient to ready as soon as it is final, while the backward
// pass goes on: after the last recorded op that reads sources[i] has
// passed its gradient back (sources no op reads come last, in order).
// ready runs on the calling goroutine once per source, with what Gradient
// returns for it (nil where unconnected); it may give g to another
// goroutine to read (an all-reduce overlapping the rest of the pass:
// nn.DistributedTrainStep), but must not release it or use this tape.
// The result is GradientSeeded's.
func (t *Tape) GradientEach(target, seed *tensor.Tensor, sources []*tensor.Tensor, ready func(i int, g *tensor.Tensor)) []*tensor.Tensor {
	t.claim("GradientEach", target, sources...)
	defer t.answered.Store(true)
	return t.gradient(target, seed, sources, ready)
}

// need panics with a *tensor.Error (ErrArity) when x, called what, is
// nil: a nil argument is named where it is passed, not where it is
// first dereferenced.
func need(op, what string, x *tensor.Tensor) {
	if x == nil {
		panic(tensor.NewError("tape", op, tensor.ErrArity, nil, "", "%s is nil", what))
	}
}

// needAll is need for each of xs, named "what i".
func needAll(op, what string, xs []*tensor.Tensor) {
	for i, x := range xs {
		if x == nil {
			panic(tensor.NewError("tape", op, tensor.ErrArity, xs, "", "%s %d is nil", what, i))
		}
	}
}

// claim checks a question's target and sources and takes the tape's one
// answer (a one-shot tape's).
func (t *Tape) claim(op string, target *tensor.Tensor, sources ...*tensor.Tensor) {
	need(op, "the target", target)
	needAll(op, "source", sources)
	if !t.opts.Persistent && t.used.Swap(true) {
		panic(tensor.NewError("tape", op, tensor.ErrValue, []*tensor.Tensor{target}, "",
			"a one-shot tape answers once; use Options{Persistent: true} to ask again"))

	}
	if n := producer(target); n != nil && !slices.Contains(sources, target) {
		if stop := t.stop.Load(); stop != 0 && n.seq > stop {
			panic(tensor.NewError("tape", op, tensor.ErrValue, []*tensor.Tensor{target}, "",
				"the target was computed (by %s) after this tape's Stop, so no op of it is on the tape: compute the target before Stop", n.opName()))
		}
	}
	if !t.opts.Persistent {
		t.Stop()
	}
}

// pass is one question put to a tape: the reverse pass's state, the
// recorded nodes it walks (latest first) and the gradients it answers.
type pass struct {
	t       *Tape
	b       *backprop
	w       *walker
	nodes   []*node
	target  *tensor.Tensor
	sources []*tensor.Tensor
	out     []*tensor.Tensor
	ready   func(i int, g *tensor.Tensor) // GradientEach's
}

// pause stops the tape's recording while its own gradient ops run (they
// are not recorded on itself); the result starts it again.
func (t *Tape) pause() (resume func()) {
	if !t.recording.Load() {
		return func() {}
	}
	stopRecording(t.keeps)
	return func() { startRecording(t.keeps) }
}

// begin seeds a pass of target's gradient (seed nil: ones) towards
// sources over the nodes target depends on.
func (t *Tape) begin(target, seed *tensor.Tensor, sources []*tensor.Tensor) *pass {
	owned := seed == nil // the tape may recycle a seed it made
	if seed == nil {
		seed = ops.OnesLike(target)
	} else if !seed.Shape().Equal(target.Shape()) || seed.DType() != target.DType() {
		panic(tensor.NewError("tape", "Gradient", tensor.ErrShape, []*tensor.Tensor{target, seed}, "", "seed must match the target"))
	}
	p := &pass{t: t, b: newBackprop(sources), w: getWalker(), target: target, sources: sources, out: make([]*tensor.Tensor, len(sources))}
	p.b.set(target, seed, owned)
	p.nodes = p.w.latestFirst([]*tensor.Tensor{target}, t.inWindow)
	return p
}

// final sets the result for sources[i], whose gradient will not change
// any more.
func (p *pass) final(i int) {
	g := p.b.grad(p.sources[i])
	if g != nil && !p.t.watches(p.sources[i]) && producer(p.sources[i]) == nil {
		g = nil // neither watched nor computed on this tape
	}
	if g == nil && p.t.opts.UnconnectedZeros {
		g = ops.ZerosLike(p.sources[i])
	}
	p.out[i] = g
	if p.ready != nil {
		p.ready(i, g)
	}
}

// end recycles the pass's state and releases the intermediates (with
// ReleaseIntermediates); out must have been read.
func (p *pass) end() {
	p.b.done()
	if p.t.opts.ReleaseIntermediates && !eager.Observing() {
		releaseMade(p.nodes, p.target, p.sources, p.out)
	}
	p.w.put()
}

func (t *Tape) gradient(target, seed *tensor.Tensor, sources []*tensor.Tensor, ready func(int, *tensor.Tensor)) []*tensor.Tensor {
	defer t.pause()()
	p := t.begin(target, seed, sources)
	p.ready = ready
	var lastReads map[*node][]int // the sources whose last reader each node is
	if ready != nil {
		lastReads = lastReaders(p.nodes, sources)
	}
	var halfCasts map[*node]bool // HalfGradients' casts, whose input takes their output's gradient
	if t.opts.HalfGradients {
		halfCasts = soleHalfCasts(p.nodes, p.b.keep)
	}
	for _, n := range p.nodes {
		if halfCasts[n] {
			p.b.passBack(n)
		} else {
			p.b.step(n)
		}
		for _, i := range lastReads[n] {
			p.final(i)
		}
	}
	done := make([]bool, len(sources))
	for _, is := range lastReads {
		for _, i := range is {
			done[i] = true
		}
	}
	for i := range sources {
		if !done[i] {
			p.final(i)
		}
	}
	out := p.out
	p.end()
	return out
}

// soleHalfCasts returns the nodes (latest first) that cast a float
// source (keep marks the sources) to a half type and are the only nodes
// reading it; nil, allocating nothing, where no node casts a source so.
func soleHalfCasts(nodes []*node, keep map[gradKey]bool) map[*node]bool {
	halfCast := func(n *node) bool {
		if n.call == nil || n.custom != nil || n.call.Op.Name != "Cast" || len(n.outs) != 1 {
			return false
		}
		x := n.call.Inputs[0]
		return x.DType().IsFloat() && !x.DType().IsHalf() && n.outs[0].DType().IsHalf() && keep[keyOf(x)]
	}
	if !slices.ContainsFunc(nodes, halfCast) {
		return nil
	}
	readers := map[gradKey]int{}
	casts := map[*node]bool{}
	for _, n := range nodes {
		if n.call == nil {
			continue
		}
		for _, x := range n.call.Inputs {
			if k := keyOf(x); keep[k] {
				readers[k]++
			}
		}
		if halfCast(n) {
			casts[n] = true
		}
	}
	for n := range casts {
		if readers[keyOf(n.call.Inputs[0])] != 1 {
			delete(casts, n)
		}
	}
	return casts
}

// lastReaders maps each node of nodes (latest first) to the sources it
// is the earliest reader of: once it has run its gradient rule, nothing
// adds to their gradients.
func lastReaders(nodes []*node, sources []*tensor.Tensor) map[*node][]int {
	index := make(map[gradKey][]int, len(sources))
	for i, s := range sources {
		k := keyOf(s)
		index[k] = append(index[k], i)
	}
	last := make(map[gradKey]*node, len(sources))
	for _, n := range nodes {
		if n.call == nil {
			continue
		}
		for _, x := range n.call.Inputs {
			if k := keyOf(x); index[k] != nil {
				last[k] = n // nodes run latest first: the last one seen reads first
			}
		}
	}
	out := make(map[*node][]int, len(last))
	for k, n := range last {
		out[n] = append(out[n], index[k]...)
	}
	for _, is := range out {
		slices.Sort(is) // a node's sources in their order
	}
	return out
}

// releaseMade releases the outputs of nodes (made by them, not handed on
// from an input) and the scratch tensors they read (plumb.FlagScratch),
// but for target, sources and grads, and has each region among nodes
// release what it made inside.
func releaseMade(nodes []*node, target *tensor.Tensor, sources, grads []*tensor.Tensor) {
	keep := func(o *tensor.Tensor) bool { return o == target || isOneOf(o, sources) || isOneOf(o, grads) }
	for _, n := range nodes {
		if n.release != nil {
			n.release(keep)
		}
		for _, o := range n.outs {
			if producer(o) != n || keep(o) || (n.call != nil && isOneOf(o, n.call.Inputs)) {
				continue
			}
			o.Release()
		}
		if n.call != nil {
			for _, x := range n.call.Inputs {
				if x.Flags()&plumb.FlagScratch != 0 && !keep(x) {
					x.Release() // made for this op alone (plumb.FlagScratch)
				}
			}
		}
	}
}

// walker is the scratch of walks over the record, recycled: a loop's
// backward walks each iteration's window.
type walker struct {
	seen  map[*node]bool
	stack []*tensor.Tensor
	nodes []*node
}

var walkers = sync.Pool{New: func() any { return &walker{seen: map[*node]bool{}} }}

func getWalker() *walker { return walkers.Get().(*walker) }

// put returns w to the pool; the nodes it returned are not used after.
func (w *walker) put() {
	clear(w.seen)
	clear(w.stack[:cap(w.stack)])
	clear(w.nodes[:cap(w.nodes)])
	w.stack, w.nodes = w.stack[:0], w.nodes[:0]
	walkers.Put(w)
}

// back returns the recorded ops that targets depend on through ops for
// which in holds, in no order (valid until put).
func (w *walker) back(targets []*tensor.Tensor, in func(*node) bool) []*node {
	w.nodes, w.stack = walkBack(targets, in, w.seen, w.stack, w.nodes)
	return w.nodes
}

// latestFirst is back sorted latest first.
func (w *walker) latestFirst(targets []*tensor.Tensor, in func(*node) bool) []*node {
	nodes := w.back(targets, in)
	slices.SortFunc(nodes, func(a, b *node) int { return cmp.Compare(b.seq, a.seq) })
	return nodes
}

// walkBack appends to nodes every recorded op that targets depend on
// through ops for which in holds, marking each in seen; stack is scratch
// (both slices come back for reuse).
func walkBack(targets []*tensor.Tensor, in func(*node) bool, seen map[*node]bool, stack []*tensor.Tensor, nodes []*node) ([]*node, []*tensor.Tensor) {
	stack = append(stack[:0], targets...)
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		n := producer(x)
		if n == nil || seen[n] || !in(n) {
			continue
		}
		seen[n] = true
		nodes = append(nodes, n)
		if n.call != nil {
			stack = append(stack, n.call.Inputs...)
		}
	}
	return nodes, stack
}

func needsGrad(x *tensor.Tensor) bool { return x.DType().IsFloat() && tracked(x) }

// backprop is one reverse pass: the gradient of every tensor reached so
// far, and how many entries hold each gradient tensor, so that a gradient
// nobody holds any more can go back to its device's cache at once (when no
// other tape is recording, which would keep it in its record).
type backprop struct {
	grads map[gradKey]*tensor.Tensor
	uses  map[*tensor.Tensor]int
	keep  map[gradKey]bool        // sources: their gradients are results
	mine  map[*tensor.Tensor]bool // gradients made in this pass
	// deferred are the sources (by their index) whose matrix products'
	// shares the pass leaves to its caller as products
	// (regions.WindowVJPProducts).
	deferred map[gradKey]int
	products []regions.Product
	// filled are the zeros outGrads stood in for outputs no gradient
	// reached, until finish (a rule is told which they are: eager.Grad's
	// Filled).
	filled map[*tensor.Tensor]bool
}

// gradKey names the tensor a gradient belongs to: the recorded op and
// output that made it, which a stand-in without values
// (tensor.WithoutValues) shares with the tensor it stands for, else the
// tensor itself (a leaf: a variable or a watched tensor). Not the autodiff
// record's address: a Watch on another goroutine replaces a leaf's record
// while a pass runs.
type gradKey struct {
	p     unsafe.Pointer
	index int
}

func keyOf(x *tensor.Tensor) gradKey {
	if a := x.Autodiff(); a != nil {
		if n, ok := a.Node.(*node); ok {
			return gradKey{unsafe.Pointer(n), a.Index}
		}
	}
	return gradKey{unsafe.Pointer(x), -1}
}

// grad returns the gradient held for x, or nil.
func (b *backprop) grad(x *tensor.Tensor) *tensor.Tensor { return b.grads[keyOf(x)] }

// passes recycles backprop state: loops run one small pass per iteration.
var passes = sync.Pool{New: func() any {
	return &backprop{grads: map[gradKey]*tensor.Tensor{}, uses: map[*tensor.Tensor]int{},
		keep: map[gradKey]bool{}, mine: map[*tensor.Tensor]bool{}}
}}

func newBackprop(sources []*tensor.Tensor) *backprop {
	b := passes.Get().(*backprop)
	for _, s := range sources {
		b.keep[keyOf(s)] = true
	}
	return b
}

// done returns the pass's state to the pool; its results must have been
// read.
func (b *backprop) done() {
	clear(b.grads)
	clear(b.uses)
	clear(b.keep)
	clear(b.mine)
	b.deferred, b.products = nil, nil
	passes.Put(b)
}

// set makes g the gradient of x; made says this pass created g.
func (b *backprop) set(x, g *tensor.Tensor, made bool) {
	k := keyOf(x)
	if old := b.grads[k]; old != nil {
		b.drop(old)
	}
	b.grads[k] = g
	b.uses[g]++
	if made {
		b.mine[g] = true
	}
}

// take removes and returns the gradient of x (nil if none), unless x is a
// source.
func (b *backprop) take(x *tensor.Tensor) *tensor.Tensor {
	k := keyOf(x)
	g := b.grads[k]
	if g != nil && !b.keep[k] {
		delete(b.grads, k)
		b.uses[g]--
	}
	return g
}

// drop recycles g if this pass made it and nothing holds it any more.
func (b *backprop) drop(g *tensor.Tensor) {
	b.uses[g]--
	b.recycle(g)
}

func (b *backprop) recycle(g *tensor.Tensor) {
	if g != nil && b.mine[g] && b.uses[g] <= 0 && !eager.Observing() {
		delete(b.mine, g)
		delete(b.uses, g)
		g.Release()
	}
}

// step applies n's gradient rule and accumulates into its inputs. The
// outputs' gradients are dropped once used, unless they are sources.
func (b *backprop) step(n *node) {
	dys, made := b.outGrads(n)
	if dys == nil {
		return
	}
	if p, ok := b.deferredProduct(n, dys); ok {
		src := 1 // the source's operand, whose share is left as p
		if p.Left {
			src = 0
		}
		only := make([]bool, len(n.call.Inputs)) // the other inputs' gradients
		for i := range only {
			only[i] = i != src
		}
		b.uses[p.DY]++ // the caller's now: not recycled by the rule's sums
		b.apply(n, dys, only)
		p.Owned = b.mine[p.DY] && b.uses[p.DY] == 1
		b.products = append(b.products, p)
		b.finish(dys, made)
		return
	}
	b.apply(n, dys, nil)
	b.finish(dys, made)
}

// deferredProduct reports whether n is a plain matrix product of two
// matrices, its inputs 0 and 1 (MatMul, neither transposed; FusedMatMul
// without an activation, whose bias takes its gradient as usual), of
// which exactly one is a deferred source, and returns that source's share
// as a product.
func (b *backprop) deferredProduct(n *node, dys []*tensor.Tensor) (regions.Product, bool) {
	if b.deferred == nil || n.custom != nil {
		return regions.Product{}, false
	}
	switch {
	case n.call.Op == matMulOp && n.call.Attrs == any(opattr.MatMulAttrs{}):
	case n.call.Op == fusedMatMulOp && n.call.Attrs == any(ops.FusedMatMulAttrs{Activation: ops.NoActivation}):
	default:
		return regions.Product{}, false
	}
	x, y := n.call.Inputs[0], n.call.Inputs[1]
	if x.Rank() != 2 || y.Rank() != 2 || dys[0] == nil || x == y {
		return regions.Product{}, false
	}
	kx, left := b.deferred[keyOf(x)]
	ky, right := b.deferred[keyOf(y)]
	switch {
	case right && !left:
		return regions.Product{Source: ky, A: x, DY: dys[0]}, true
	case left && !right:
		return regions.Product{Source: kx, A: y, DY: dys[0], Left: true}, true
	}
	return regions.Product{}, false
}

// The ops deferredProduct recognises.
var matMulOp, fusedMatMulOp = eager.Lookup("MatMul"), eager.Lookup("FusedMatMul")

// passBack gives the input of n, a Cast, its output's gradient as it is
// (HalfGradients).
func (b *backprop) passBack(n *node) {
	if dy := b.take(n.outs[0]); dy != nil {
		b.set(n.call.Inputs[0], dy, b.mine[dy])
	}
}

// outGrads takes n's outputs' gradients for its rule: nil when none has
// one; else zeros (made, to be released by finish) stand for the missing
// ones but for a region's, which takes nil as "no gradient".
func (b *backprop) outGrads(n *node) (dys, made []*tensor.Tensor) {
	dys = make([]*tensor.Tensor, len(n.outs))
	any := false
	for i, o := range n.outs {
		dys[i] = b.take(o)
		any = any || dys[i] != nil
	}
	if !any {
		return nil, nil
	}
	if n.custom == nil {
		for i, o := range n.outs {
			if dys[i] == nil {
				// Off the host a shared constant (a layer norm's statistics
				// take none every step, which were fills launched).
				dys[i] = consts.Full(o.Device(), o.DType(), 0, o.Shape())
				made = append(made, dys[i])
				if b.filled == nil {
					b.filled = map[*tensor.Tensor]bool{}
				}
				b.filled[dys[i]] = true
			}
		}
	}
	return dys, made
}

// apply runs n's rule on its outputs' gradients dys and accumulates into
// the inputs that need a gradient and that only marks (nil: all of them).
func (b *backprop) apply(n *node, dys []*tensor.Tensor, only []bool) {
	needs := b.needs(n, only)
	b.accumulate(n, dys, b.rule(n, dys, needs), needs)
}

// needs marks n's inputs that need a gradient and that only marks (nil:
// all of them).
func (b *backprop) needs(n *node, only []bool) []bool {
	needs := make([]bool, len(n.call.Inputs))
	for i, x := range n.call.Inputs {
		needs[i] = needsGrad(x) && (only == nil || only[i])
	}
	return needs
}

// rule runs n's gradient rule: the gradients of the inputs needs marks
// (a region's rule gives all of them at once).
func (b *backprop) rule(n *node, dys []*tensor.Tensor, needs []bool) []*tensor.Tensor {
	if n.custom != nil {
		return n.custom(dys)
	}
	n.checkVersions()
	var filled []bool
	for i, d := range dys {
		if b.filled[d] {
			if filled == nil {
				filled = make([]bool, len(dys))
			}
			filled[i] = true
		}
	}
	return n.call.Op.Grad(&eager.Grad{Call: n.call, Outputs: n.outs, OutGrads: dys, Needs: needs, Filled: filled})
}

// accumulate adds the gradients dxs that n's rule gave its inputs, for
// the inputs needs marks, to what those inputs have.
func (b *backprop) accumulate(n *node, dys, dxs []*tensor.Tensor, needs []bool) {
	var held []*tensor.Tensor
	for i, x := range n.call.Inputs {
		if i >= len(dxs) || dxs[i] == nil {
			continue
		}
		if !needs[i] {
			b.unwanted(n, dys, dxs, needs, i)
			continue
		}
		g := dxs[i]
		// A built-in rule returns new tensors or passes dy on; what a custom
		// gradient returns is the user's, never recycled; a library
		// region's (a loop's) is its own unless it hands one tensor to
		// two inputs.
		fresh := !isOneOf(g, dys) && (n.custom == nil || n.ownsGrads && !isOneOf(g, dxs[:i]) && !isOneOf(g, dxs[i+1:]))
		// replace makes g the result of an op on it, releasing the old g
		// when it was the rule's own and nothing else holds it or will.
		replace := func(next *tensor.Tensor) {
			if fresh && b.uses[g] <= 0 && !b.mine[g] && !isOneOf(g, dxs[:i]) && !isOneOf(g, dxs[i+1:]) && !eager.Observing() {
				g.Release()
			}
			g, fresh = next, true
		}
		if !g.Shape().Equal(x.Shape()) {
			replace(ops.SumTo(g, x.Shape()))
		}
		if g.DType() != x.DType() {
			replace(ops.Cast(g, x.DType()))
		}
		if prev := b.grad(x); prev != nil {
			if isOneOf(prev, dxs[i+1:]) {
				// The rule gives prev to a later input too (dy passed on
				// to both operands of Add(x, y) where x already had dy):
				// held until that input has taken it.
				b.uses[prev]++
				held = append(held, prev)
			}
			replace(ops.Add(prev, g))
		}
		b.set(x, g, fresh || b.mine[g])
	}
	for _, h := range held {
		b.drop(h)
	}
}

// unwanted releases dxs[i], a gradient n's rule gave an input that wants
// none (a rule that computes all its gradients in one op), unless it is
// not the rule's own (an output gradient passed on, a custom rule's) or
// another input takes it.
func (b *backprop) unwanted(n *node, dys, dxs []*tensor.Tensor, needs []bool, i int) {
	g := dxs[i]
	if n.custom != nil || isOneOf(g, dys) || isOneOf(g, n.call.Inputs) || isOneOf(g, n.outs) || eager.Observing() {
		return
	}
	for j, d := range dxs {
		if j != i && d == g && j < len(needs) && needs[j] {
			return
		}
	}
	if b.uses[g] <= 0 {
		g.Release()
	}
}

// finish recycles a rule's output gradients once it has run, and the
// zeros made for it.
func (b *backprop) finish(dys, made []*tensor.Tensor) {
	for _, d := range dys {
		b.recycle(d)
	}
	for _, z := range made {
		delete(b.filled, z)
		if b.uses[z] <= 0 && !eager.Observing() {
			z.Release()
		}
	}
}

func isOneOf(x *tensor.Tensor, list []*tensor.Tensor) bool {
	for _, y := range list {
		if x == y {
			return true
		}
	}
	return false
}
