package graph

import (
	"errors"
	"fmt"
	"slices"

	"github.com/eagerflow/eagerflow/backend"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Execution follows the rules of the control-flow paper. Every value is a
// tensor, a dead flag and a tag: the frame instance and iteration it
// belongs to.
//   - An ordinary op with a dead input (data or control) yields dead outputs
//     without running.
//   - Switch passes its data to the output its predicate picks; the other
//     output is dead (both are dead if the data or predicate is).
//   - Merge forwards the first live input; it is dead only when every input
//     it waits for is dead. In a loop it waits for its forward inputs at
//     iteration 0 and for its back edges (NextIteration) after.
//   - Enter moves a value into a child frame instance, created on the first
//     Enter; a constant Enter is seen by every iteration of the frame.
//   - NextIteration moves a value to the next iteration; a dead one is
//     dropped, which is how a loop stops.
//   - Exit moves a value to the parent frame. Dead values reaching an Exit
//     are held: if no live value arrives before the frame can do nothing
//     more (the loop ran on a dead branch), the Exit yields dead.
//   - Stack makes a stack per execution; StackPush and StackPop with a live
//     handle and input push and pop, and pass dead values on untouched.
//     The tracer orders them by control edges (a loop's NextIterations wait
//     for its pushes and pops), so the backward loop pops in the reverse of
//     the order the forward loop pushed.

// value is one tagged value: a tensor, or a stack's handle. ref counts
// the holders of a tensor this run made (or received); every copy of the
// value shares it. A tensor with no ref (an argument, a constant, a
// Merge's index) is pinned: never counted, never released.
type value struct {
	t     *tensor.Tensor
	ref   *ref
	dead  bool
	stack *stack
}

// stack is what a Stack node makes: the values pushed and not yet popped.
type stack struct{ vals []stacked }

// stacked is one value on a stack: the tensor, or its contents swapped
// out to host memory (ExecOptions.SwapStacks) with its dtype and shape.
type stacked struct {
	t       *tensor.Tensor
	ref     *ref
	swapped device.Swapped
	dtype   tensor.DType
	shape   tensor.Shape
}

// frameInst is a running instance of a frame (a loop's execution).
type frameInst struct {
	name       string
	parent     *frameInst
	parentIter int
	depth      int
	children   map[childKey]*frameInst
	// constants are the constant Enters into this frame, in the order
	// they came, and iters the iterations started (by index): slices, so
	// that a run hands values on in an order that depends on the graph
	// alone (ordered ops must run in the same order in every process).
	constants []frameConst
	iters     []bool
	exits     map[*Node]bool // Exit nodes that reached this frame: true once one delivered live
	heldDead  map[*Node]bool // Exit nodes holding a dead value
	finished  bool
	// parallel bounds the iterations that may be active at once (0: no
	// bound); iterations before lowest are done; NextIteration values for
	// iterations at lowest+parallel and beyond wait in deferred.
	parallel int
	lowest   int
	deferred []deferredNext
	// insts holds the node instances of each iteration, indexed by node ID
	// (a slice lookup where a map keyed by node, frame and iteration cost
	// a hash of the whole key per input delivered).
	insts [][]slot
}

// slot is one node at one iteration of a frame: its instance while it
// waits or runs, and once it ran, whether it was dead (for the nodes
// waiting on it by a control edge).
type slot struct {
	in   *instance
	dead bool
}

// frameConst is a constant Enter's value in a frame.
type frameConst struct {
	enter *Node
	v     value
}

type childKey struct {
	iter int
	name string
}

type instKey struct {
	node  *Node
	frame *frameInst
	iter  int
}

// instance is the state of one node at one tag.
type instance struct {
	inputs  []value
	have    []bool
	pending int    // inputs still awaited (ordinary nodes)
	held    []bool // inputs counted in executor.uses (constants are not)
	fired   bool   // Merge: has produced its output
	dead    int    // Merge: dead inputs seen among those awaited
}

type consumer struct {
	node  *Node
	input int // -1 for a control edge
}

// executor runs one Execute call.
type executor struct {
	g       *Graph
	sc      *schedule
	free    []*instance // finished instances, for reuse
	queue   []instKey
	root    *frameInst
	frames  []*frameInst
	results map[Output]value
	stats   execStats
	outs    [2]value
	spare   []instKey // the queue's other buffer
	// spareSlots are cleared slot slices of done iterations and past runs.
	spareSlots [][]slot
	jobs       []opJob
	// concurrent: independent op nodes ready together run on the graph's
	// CPU device's workers (set when it has more than one).
	concurrent bool
	args       []*tensor.Tensor // an op's arguments, reused when no observer keeps them
	outBuf     []*tensor.Tensor // an op's outputs, likewise
	// Buffer release by value lifetime: each tensor the run makes has a
	// ref, counting its holders; at zero it is released unless pinned or a
	// tape observes (it keeps intermediates for its backward pass).
	refs    refSlab
	release bool
	// swap is the device stacks swap their values to host memory through,
	// or nil.
	swap device.Swapper
	// Receives in flight (transfer.go): how many, and where they arrive.
	receiving int
	mail      *mailbox
}

// ExecOptions are options of one execution.
type ExecOptions struct {
	// SwapStacks keeps the values that loop-gradient stacks hold in host
	// memory while they wait, on devices that swap (device.Swapper: a
	// GPU): copied out as they are pushed and back as they are popped,
	// queued with the device's work so that the host does not wait. It
	// trades copy bandwidth for device memory, which a long loop's stacks
	// would otherwise fill. Values a tape keeps anyway stay where they are.
	SwapStacks bool
}

// ErrDeadOutput is returned when a graph result is dead (it was computed
// only on branches that were not taken).
var ErrDeadOutput = errors.New("graph: a graph result is dead")

// Execute runs g on args (one per placeholder, in order) and returns its
// results. Op nodes run eagerly through their eager.Op; panics of ops (bad
// shapes) propagate as they would eagerly.
func Execute(g *Graph, args ...*tensor.Tensor) ([]*tensor.Tensor, error) {
	out, _, err := execute(g, ExecOptions{}, args)
	return out, err
}

// ExecuteWith is Execute with options.
func ExecuteWith(g *Graph, opts ExecOptions, args ...*tensor.Tensor) ([]*tensor.Tensor, error) {
	out, _, err := execute(g, opts, args)
	return out, err
}

// Owned reports, for each result out[i] of a run of g on args, whether
// that run made it and nothing else holds it: not one of args, a constant
// of g (captured values included), an index a Merge shares between runs,
// nor a result before it. A caller may Release those (trace.Function's
// CallOwned).
func Owned(g *Graph, args, out []*tensor.Tensor) []bool {
	owned := make([]bool, len(out))
	if g == nil {
		return owned
	}
	for i, t := range out {
		owned[i] = t != nil && !slices.Contains(args, t) && !slices.Contains(mergeIndices[:], t) && !slices.Contains(out[:i], t)
	}
	// One pass over the constants, each compared with the few results (no
	// set of every constant per call).
	for _, n := range g.Nodes {
		if n.Kind != Const {
			continue
		}
		for i, t := range out {
			if owned[i] && t == n.Value {
				owned[i] = false
			}
		}
	}
	return owned
}

// execStats is what tests learn of a run: the ops it executed, and the
// most iterations of one frame that were active at once.
type execStats struct{ runs, active int }

func execute(g *Graph, opts ExecOptions, args []*tensor.Tensor) ([]*tensor.Tensor, execStats, error) {
	if g == nil {
		return nil, execStats{}, errors.New("graph: the graph is nil")
	}
	for i, a := range args {
		if a == nil {
			return nil, execStats{}, fmt.Errorf("graph: argument %d is nil", i)
		}
	}
	if len(args) != len(g.Inputs) {
		return nil, execStats{}, fmt.Errorf("graph: the graph takes %d inputs, got %d", len(g.Inputs), len(args))
	}
	if g.StraightLine() {
		return g.plan().run(args), execStats{}, nil
	}
	sc := g.schedule()
	e := sc.getExecutor()
	if e == nil {
		e = &executor{g: g, sc: sc, results: map[Output]value{}}
	}
	e.release, e.concurrent = !eager.Observing(), g.workers() != nil
	e.swap = nil
	if sw, ok := g.device().(device.Swapper); ok && opts.SwapStacks && e.release {
		e.swap = sw
	}
	e.root = e.newFrame("", nil, 0)
	for _, r := range g.Result {
		if r.Node.Kind == Const { // a constant (a captured value) handed back as it is
			e.results[r] = value{t: r.Node.Value}
		}
	}
	// Seed: graph inputs (pinned: no ref), and root nodes that wait on
	// nothing.
	for i, p := range g.Inputs {
		e.deliver(p.Out(0), e.root, 0, value{t: args[i]})
	}
	for _, n := range e.sc.roots {
		e.ready(instKey{n, e.root, 0})
	}
	for {
		for len(e.queue) > 0 {
			batch := e.queue
			e.queue = e.spare[:0]
			e.runBatch(batch)
			e.spare = batch[:0]
		}
		if e.releaseDeferred() || e.waitReceives() {
			continue
		}
		if !e.finishDeepest() {
			break
		}
	}
	out := make([]*tensor.Tensor, len(g.Result))
	for i, r := range g.Result {
		v, ok := e.results[r]
		if !ok {
			return nil, e.stats, fmt.Errorf("graph: result %d (%v output %d) was never computed", i, r.Node, r.Index)
		}
		if v.dead {
			return nil, e.stats, fmt.Errorf("%w: result %d (%v output %d)", ErrDeadOutput, i, r.Node, r.Index)
		}
		out[i] = v.t
	}
	st := e.stats
	e.recycle() // not on a panic: an op's error leaves the executor to the GC
	return out, st, nil
}

func (e *executor) newFrame(name string, parent *frameInst, parentIter int) *frameInst {
	f := &frameInst{name: name, parent: parent, parentIter: parentIter, children: map[childKey]*frameInst{},
		exits: map[*Node]bool{}, heldDead: map[*Node]bool{},
	}
	if parent != nil {
		f.depth = parent.depth + 1
	}
	e.frames = append(e.frames, f)
	return f
}

func (e *executor) inst(k instKey) *instance {
	slots := e.slots(k.frame, k.iter)
	in := slots[k.node.ID].in
	if in == nil {
		n := k.node
		in = e.newInstance(len(n.Inputs))
		in.pending = e.sc.waits[n.ID]
		if e.sc.hasConst[n.ID] {
			for i, x := range n.Inputs {
				if x.Node.Kind == Const {
					in.inputs[i], in.have[i] = value{t: x.Node.Value}, true
				}
			}
		}
		slots[k.node.ID].in = in
	}
	return in
}

// newInstance returns a cleared instance with room for inputs, reusing a
// finished one when there is one.
func (e *executor) newInstance(inputs int) *instance {
	var in *instance
	if n := len(e.free); n > 0 {
		in, e.free = e.free[n-1], e.free[:n-1]
	} else {
		in = &instance{}
	}
	// Field by field, the slices kept: assigning a whole new instance
	// cost a write barrier per pointer field while the collector runs.
	if cap(in.inputs) < inputs || cap(in.have) < inputs {
		in.inputs, in.have = make([]value, inputs), make([]bool, inputs)
	} else {
		in.inputs, in.have = in.inputs[:inputs], in.have[:inputs]
		clear(in.inputs)
		clear(in.have)
	}
	in.held = in.held[:0]
	in.pending, in.fired, in.dead = 0, false, 0
	return in
}

// finish removes a node's instance once it ran; a Merge keeps its fired
// flag for late inputs.
func (e *executor) finish(k instKey, in *instance) {
	if k.node.Kind == Merge {
		return
	}
	k.frame.insts[k.iter][k.node.ID].in = nil
	e.free = append(e.free, in)
}

func (e *executor) ready(k instKey) { e.queue = append(e.queue, k) }

// startIteration records that iteration iter of f exists and hands it the
// frame's constants.
func (e *executor) startIteration(f *frameInst, iter int) {
	if iter < len(f.iters) && f.iters[iter] {
		return
	}
	for len(f.iters) <= iter {
		f.iters = append(f.iters, false)
	}
	f.iters[iter] = true
	e.stats.active = max(e.stats.active, iter-f.lowest+1)
	for _, c := range f.constants {
		e.fanOut(c.enter.Out(0), f, iter, c.v)
	}
}

// deliver places a value produced at output out (whose node ran at tag
// (f, iter)) where its node sends it, and hands it to the consumers.
func (e *executor) deliver(out Output, f *frameInst, iter int, v value) {
	n := out.Node
	switch n.Kind {
	case Enter:
		ck := childKey{iter, n.Frame}
		child, ok := f.children[ck]
		if !ok {
			child = e.newFrame(n.Frame, f, iter)
			f.children[ck] = child
		}
		if n.ParallelIterations > 0 && (child.parallel == 0 || n.ParallelIterations < child.parallel) {
			child.parallel = n.ParallelIterations
		}
		if n.IsConstant {
			pin(v)
			child.constants = append(child.constants, frameConst{n, v})
			for it, started := range child.iters {
				if started {
					e.fanOut(out, child, it, v)
				}
			}
			return
		}
		e.startIteration(child, 0)
		e.fanOut(out, child, 0, v)
	case Exit:
		f.exits[n] = f.exits[n] || !v.dead
		if v.dead {
			f.heldDead[n] = true
			return
		}
		e.fanOut(out, f.parent, f.parentIter, v)
	case NextIteration:
		if v.dead {
			return // the loop ends here
		}
		if f.parallel > 0 && iter+1 >= f.lowest+f.parallel {
			f.deferred = append(f.deferred, deferredNext{out: out, iter: iter + 1, v: v})
			if v.ref != nil {
				v.ref.n++ // held while it waits
			}
			return
		}
		e.startIteration(f, iter+1)
		e.fanOut(out, f, iter+1, v)
	default:
		e.fanOut(out, f, iter, v)
	}
}

// fanOut gives v to every consumer of out at tag (f, iter).
func (e *executor) fanOut(out Output, f *frameInst, iter int, v value) {
	if f == e.root && iter == 0 && e.sc.isResult[out.Node.ID][out.Index] {
		if _, have := e.results[out]; !have {
			e.results[out] = v
			pin(v)
		}
	}
	cons := e.sc.consumers[out.Node.ID][out.Index]
	if len(cons) == 0 {
		return
	}
	slots := e.slots(f, iter) // one frame and iteration for every consumer
	for _, c := range cons {
		k := instKey{c.node, f, iter}
		in := slots[c.node.ID].in
		if in == nil {
			in = e.inst(k)
		}
		if c.node.Kind == Merge {
			e.mergeInput(k, in, c.input, v)
			continue
		}
		if in.have[c.input] {
			continue
		}
		in.inputs[c.input], in.have[c.input] = v, true
		e.hold(in, c.input, v)
		if in.pending--; in.pending == 0 {
			e.ready(k)
		}
	}
}

// mergeIndices are the Int32 scalars a Merge reports for its first inputs,
// made once and pinned by every execution, which shares them.
var mergeIndices = func() (t [8]*tensor.Tensor) {
	for i := range t {
		t[i] = tensor.Scalar(int32(i))
	}
	return t
}()

func mergeIndex(i int) *tensor.Tensor {
	if i < len(mergeIndices) {
		return mergeIndices[i]
	}
	return tensor.Scalar(int32(i))
}

// mergeInput feeds one input of a Merge instance.
func (e *executor) mergeInput(k instKey, in *instance, idx int, v value) {
	if in.fired {
		return
	}
	back := e.sc.backEdge[k.node.ID]
	aw := e.sc.awaited[k.node.ID]
	waitsBack := aw[1] > 0 && k.iter > 0
	if back[idx] != waitsBack {
		return // not an input this iteration waits on
	}
	awaited := aw[btoi(waitsBack)]
	if v.dead {
		if in.dead++; in.dead < awaited {
			return
		}
	}
	in.fired = true
	in.inputs = append(in.inputs[:0], v, value{t: mergeIndex(idx), dead: v.dead})
	e.hold(in, 0, v)
	e.ready(k)
}

// run executes one node instance whose inputs are all there.
func (e *executor) run(k instKey) {
	n, in := k.node, e.inst(k)
	dead := e.deadInputs(k, in)
	var outs []value
	if n.Outputs <= len(e.outs) {
		outs = e.outs[:n.Outputs]
		clear(outs)
	} else {
		outs = make([]value, n.Outputs)
	}
	switch n.Kind {
	case Merge:
		outs[0], outs[1] = in.inputs[0], in.inputs[1]
		dead = in.inputs[0].dead
	case Switch:
		data, pred := in.inputs[0], in.inputs[1]
		taken := 0
		if !dead && predicate(pred.t) {
			taken = 1
		}
		for i := range outs {
			outs[i] = value{t: data.t, ref: data.ref, stack: data.stack, dead: dead || i != taken}
		}
	case Enter, Exit, NextIteration:
		outs[0] = in.inputs[0]
	case Stack:
		outs[0] = value{stack: &stack{}}
	case StackPush:
		outs[0] = in.inputs[1]
		if !dead {
			s := in.inputs[0].stack
			s.vals = append(s.vals, e.push(outs[0]))
		}
	case StackPop:
		if !dead {
			s := in.inputs[0].stack
			if len(s.vals) == 0 {
				panic(fmt.Sprintf("graph: %v pops an empty stack (a loop gradient popped more than its forward loop pushed)", n))
			}
			top := s.vals[len(s.vals)-1]
			s.vals = s.vals[:len(s.vals)-1]
			outs[0] = e.pop(n, top)
			defer e.drop(outs[0]) // the stack's hold, once the consumers hold it
		}
	case OpNode:
		if n.Op.Ordered && e.transfer(k, in, dead) {
			return // a send or receive, which runs dead or live
		}
		if dead {
			for i := range outs {
				outs[i].dead = true
			}
			break
		}
		if n.Op.Forwards && e.release && n.Fused == nil && !in.inputs[0].t.IsVariable() {
			// Identity: the same value, no dispatch (no tape sees ops; a
			// variable's is a copy, as eagerly: it may change in place).
			outs[0] = in.inputs[0]
			break
		}
		args := e.args[:0]
		if !e.release {
			args = nil // a tape may keep them
		}
		args = slices.Grow(args, len(in.inputs))[:len(in.inputs)]
		for i, v := range in.inputs {
			args[i] = v.t
		}
		e.stats.runs++
		var dst []*tensor.Tensor // nil: a tape may keep the outputs' slice
		if e.release {
			dst = e.outBuf[:0]
		}
		res := runNode(n, args, dst)
		e.madeBy(outs, res, in.inputs)
		if e.release {
			clear(args)
			e.args = args
			clear(res)
			e.outBuf = res
		}
	}
	e.complete(k, in, outs, dead)
}

// predicate reads a Switch's Bool scalar: in place on the CPU, copied
// from another device.
func predicate(t *tensor.Tensor) bool {
	if _, ok := t.Buffer().(*device.HostBuffer); ok && t.DType() == tensor.Bool && t.NumElements() == 1 {
		return backend.HostData[bool](t)[0]
	}
	return t.Item().(bool)
}

// deadInputs reports whether an instance has a dead input, data or
// control.
func (e *executor) deadInputs(k instKey, in *instance) bool {
	for _, v := range in.inputs {
		if v.dead {
			return true
		}
	}
	if len(k.node.Control) > 0 {
		slots := k.frame.insts[k.iter]
		for _, c := range k.node.Control {
			if slots[c.ID].dead {
				return true
			}
		}
	}
	return false
}

// complete delivers the outputs of an instance that ran (dead: its outputs
// are dead, Switch and Merge aside, which decided for themselves), lets go
// of its inputs and tells the nodes waiting on it.
func (e *executor) complete(k instKey, in *instance, outs []value, dead bool) {
	n := k.node
	if dead && n.Kind != Switch && n.Kind != Merge {
		for i := range outs {
			outs[i].dead = true
		}
	}
	for i, v := range outs {
		e.deliver(n.Out(i), k.frame, k.iter, v)
	}
	for i, v := range in.inputs {
		if i < len(in.held) && in.held[i] {
			e.drop(v)
		}
	}
	e.finish(k, in)
	e.signal(k, dead)
}

// signal tells the nodes waiting on k by a control edge that it finished.
//
// An Exit signals in the parent frame, once: when it passes a live value
// (its dead values before that are the loop's other iterations), or when
// finishDeepest gives it dead.
func (e *executor) signal(k instKey, dead bool) {
	if k.node.Kind == Exit {
		if !dead {
			e.signalAt(instKey{k.node, k.frame.parent, k.frame.parentIter}, false)
		}
		return
	}
	e.signalAt(k, dead)
}

// signalAt tells the waiters on k's node at k's tag.
func (e *executor) signalAt(k instKey, dead bool) {
	waiters := e.sc.controlOf[k.node.ID]
	if len(waiters) == 0 {
		return
	}
	e.slots(k.frame, k.iter)[k.node.ID].dead = dead
	for _, w := range waiters {
		wk := instKey{w, k.frame, k.iter}
		if in := e.inst(wk); w.Kind != Merge {
			if in.pending--; in.pending == 0 {
				e.ready(wk)
			}
		}
	}
}

// finishDeepest is called when nothing can run: the deepest frames that
// still hold dead values at Exits that never passed a live one are done, so
// those Exits yield dead. It reports whether it delivered anything.
func (e *executor) finishDeepest() bool {
	deepest := -1
	for _, f := range e.frames {
		if !f.finished && f.holdsDead() {
			deepest = max(deepest, f.depth)
		}
	}
	if deepest < 0 {
		return false
	}
	for _, f := range e.frames {
		if f.finished || f.depth != deepest || !f.holdsDead() {
			continue
		}
		f.finished = true
		var exits []*Node
		for exit, held := range f.heldDead {
			if held && !f.exits[exit] {
				exits = append(exits, exit)
			}
		}
		slices.SortFunc(exits, func(a, b *Node) int { return a.ID - b.ID }) // a fixed order
		for _, exit := range exits {
			e.fanOut(exit.Out(0), f.parent, f.parentIter, value{dead: true})
			e.signalAt(instKey{exit, f.parent, f.parentIter}, true)
		}
	}
	return true
}

func (f *frameInst) holdsDead() bool {
	for exit, held := range f.heldDead {
		if held && !f.exits[exit] {
			return true
		}
	}
	return false
}
