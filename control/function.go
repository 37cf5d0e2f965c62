package control

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Function is a Go function over tensors that is traced into a Graph the
// first time it is called with an input signature (the dtypes and shapes
// of its arguments) and executed from that graph on later calls with the
// same signature. A new signature traces again, unless the Function was
// made with NewFunctionWithSignature and a declared signature whose
// unknown dims (-1) cover the difference: such a Function learns from its
// first three sizes how its graph follows those dims and rebuilds the
// graph for any other size without tracing (signature.go).
//
// Tracing runs fn once, eagerly, and records every op it runs as a graph
// node; that first call returns fn's own results. What the graph computes
// is therefore what fn computed on that call:
//   - Go values fn reads (ints, closures' variables, Item() of a tensor)
//     are constants of the trace.
//   - Tensors fn reads that are not its arguments are captured: a variable
//     (tensor.FlagVariable) by reference, so in-place updates are seen by
//     later calls; any other tensor by value.
//   - control.Cond on a value computed from the arguments or variables is
//     traced as TensorFlow builds a cond: both branches are recorded (the
//     untaken one runs on this call's values just to be recorded, so it
//     must not fail on them), a Switch on the predicate for each value a
//     branch reads from outside, a Merge for each output; branches that
//     disagree on their outputs' count, dtypes or shapes fail the trace.
//   - control.While (and Fori, built on it) becomes a loop frame as
//     TensorFlow builds one: Enter, Merge, Switch, Exit per loop value, the
//     body once, NextIteration back to the Merge, values from outside
//     entered as loop constants. The condition and body are recorded on
//     the first iteration's values (the body runs on the initial values
//     even when the loop takes no iteration, so it must not fail on them).
//     MaxIterations becomes a counter loop value in the condition.
//     control.Scan becomes such a loop too, reading step t with Gather and
//     writing its outputs into stacked buffers, so a traced RNN is one
//     frame whatever its length (under a tape, one frame and its gradient).
//   - control.Case on such a value becomes a chain of conds (index == 0,
//     index == 1, ..., the last branch taking every other index).
//   - A While that a tape records inside fn becomes two frames, as
//     TensorFlow builds a loop's gradient: the forward loop counts its
//     iterations and pushes, at each one, the values the body's gradient
//     rules read onto stacks; the backward loop runs that many times,
//     popping them in reverse, and sums the gradients of the tensors the
//     body reads from outside. So the trip count may vary from call to
//     call. Where the loop takes no iteration, sources that eagerly get no
//     gradient (nil) get zeros from the graph. Loops nest: an inner loop's
//     frames sit in the outer ones', its trip count per outer iteration is
//     pushed too, and the outer loop moves on only once the inner one is
//     done. A loop whose body cannot be traced on the first iteration's
//     values alone is recorded iteration by iteration instead (its trip
//     count must then not vary).
//   - A Cond (or Case) on a varying value that a tape records inside fn is
//     one region of the tape; its gradient is traced as TensorFlow builds
//     it, a Cond on the same predicate of the two branches' gradients. In
//     a While's body, the predicate is pushed onto a stack at every
//     iteration and the values a branch's gradient reads only where the
//     branch was taken; the backward loop pops them likewise.
//   - A loop that cannot be a frame is traced unrolled, iteration by
//     iteration: a loop run eagerly inside a traced region (a tape made
//     inside a traced loop's body that differentiates another loop there),
//     and every loop of a function that differentiates a loop's gradient
//     again (second derivatives, Hessian-vector products): there the trace
//     reads the loop's gradient as the eager run computed it, which no
//     frame holds, so the function is traced a second time with its loops
//     unrolled (fn runs twice on that call). Each decision such a trace
//     took on a varying value (each predicate of an unrolled loop) is a
//     guard in the graph: a call where one goes the other way (another
//     trip count) runs fn eagerly instead, so every call returns what fn
//     computes; Logf is told once.
//   - Random tensors fn draws with tensor.RandUniform and the like (and so
//     ops.Dropout's mask) are constants of the trace: pass them in as
//     arguments to get fresh ones per call.
//   - A tape recording inside fn is traced too: the graph computes the
//     gradients (a training step traced as one graph). Variable updates
//     (Assign and the optimizers) are not ops and are not traced: return
//     the gradients and apply them after the call.
//   - A tape around a call records the graph's ops, so it differentiates
//     with respect to fn's arguments and variables (not other captured
//     tensors, which are constants of the trace). Loops and conds that
//     ran as tape regions while tracing leave no mark in the graph: their
//     graph is the computation alone, which the tape around a later call
//     records op by op.
//   - fn may return nil results (the gradient of a source its target does
//     not depend on); the call returns nil there too.
//
// Before the first run the graph is optimised: ops on constants only are
// folded (their traced values kept), values nothing returns are pruned,
// identical ops on identical inputs are computed once, chains of float32
// elementwise ops are fused into one pass, and each intermediate buffer is
// released once its last reader has run.
//
// A Function called while another is being traced runs fn inline, so the
// outer graph holds its ops and control flow.
//
// Only the calling goroutine's ops are recorded: ops fn leaves to other
// goroutines are not part of the graph. A Function is safe for concurrent
// use; traces are made one at a time.
type Function struct {
	fn func(args []*tensor.Tensor) []*tensor.Tensor
	// Logf receives the warning (given once) that fn retraces often; nil
	// discards it.
	Logf func(format string, args ...any)

	mu     sync.Mutex
	graphs map[string]*traced
	traces int
	warned bool
	// guardNoted: Logf was told that a guard failed.
	guardNoted bool
	sig        []InputSpec // nil: every signature traces
	gen        sizeRules
}

// RetraceWarning is how many traces a Function makes before it warns.
const RetraceWarning = 5

// NewFunction wraps fn. fn takes and returns slices of tensors.
func NewFunction(fn func(args []*tensor.Tensor) []*tensor.Tensor) *Function {
	return &Function{fn: fn, graphs: map[string]*traced{}}
}

// Traces returns how many traces f has made.
func (f *Function) Traces() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.traces
}

// Graph returns the graph traced for args' signature, or nil.
func (f *Function) Graph(args ...*tensor.Tensor) *Graph {
	f.mu.Lock()
	defer f.mu.Unlock()
	if tr := f.graphs[signature(args)]; tr != nil {
		return tr.g
	}
	return nil
}

// traced is one signature's graph and, where it has no control-flow nodes,
// its straight-line plan.
type traced struct {
	g *Graph
	p *plan
}

func newTraced(g *Graph) *traced {
	tr := &traced{g: g}
	if g.straightLine() {
		tr.p = newPlan(g)
	}
	return tr
}

func (tr *traced) run(args []*tensor.Tensor) ([]*tensor.Tensor, error) {
	var out []*tensor.Tensor
	if tr.p == nil {
		var err error
		if out, err = Execute(tr.g, args...); err != nil {
			return nil, err
		}
	} else {
		out = tr.p.run(args)
	}
	return tr.g.withNils(out), nil
}

// withNils puts the nil results of fn back among the graph's results.
func (g *Graph) withNils(out []*tensor.Tensor) []*tensor.Tensor {
	if g.nilResults == nil {
		return out
	}
	all := make([]*tensor.Tensor, len(g.nilResults))
	j := 0
	for i, isNil := range g.nilResults {
		if !isNil {
			all[i] = out[j]
			j++
		}
	}
	return all
}

// Call runs f on args: from its graph when one was traced for their
// signature, else by tracing. Ops' errors panic as they do eagerly; an
// argument count that differs from the trace, or a trace that cannot be
// made, is an error.
func (f *Function) Call(args ...*tensor.Tensor) ([]*tensor.Tensor, error) {
	if currentTrace() != nil {
		// Called while this goroutine traces another function: run fn so
		// that its ops and control flow are traced inline there.
		return f.fn(args), nil
	}
	if f.sig != nil {
		if err := checkSignature(f.sig, args); err != nil {
			return nil, err
		}
	}
	key := signature(args)
	f.mu.Lock()
	tr := f.graphs[key]
	if tr == nil && f.gen.trusted {
		var err error
		if tr, err = f.gen.build(unknownSizes(f.sig, args)); err != nil {
			f.mu.Unlock()
			return nil, err
		}
		f.graphs[key] = tr
	}
	f.mu.Unlock()
	if tr != nil {
		return f.runGuarded(tr, args)
	}
	out, g, err := traceCall(f.fn, args, false)
	if errors.Is(err, errUnroll) {
		// A loop's gradient is differentiated again: trace once more, loops
		// unrolled (fn runs a second time).
		out, g, err = traceCall(f.fn, args, true)
	}
	if err != nil {
		return nil, err
	}
	tr = newTraced(g)
	f.mu.Lock()
	f.graphs[key] = tr
	f.traces++
	var note string
	if f.sig != nil {
		note = f.gen.learn(g, unknownSizes(f.sig, args), key)
	}
	warn := f.traces > RetraceWarning && !f.warned && f.Logf != nil
	f.warned = f.warned || warn
	n := f.traces
	logf := f.Logf
	f.mu.Unlock()
	if note != "" && logf != nil {
		logf("%s", note)
	}
	if warn {
		logf("control: Function traced %d times (signatures: %s, ...); give it inputs of fewer distinct shapes", n, key)
	}
	return out, nil
}

// signature is the dtypes and shapes of args, and their devices where not
// the host, e.g. "float32[2 3],int64[]" or "float32[2 3]@cpu:1": a graph
// holds constants on its arguments' device and is fused for its kind.
func signature(args []*tensor.Tensor) string {
	b := make([]byte, 0, 16*len(args))
	for i, a := range args {
		if i > 0 {
			b = append(b, ',')
		}
		if a == nil {
			b = append(b, "nil"...)
			continue
		}
		b = append(b, a.DType().String()...)
		b = append(b, '[')
		for j, d := range a.Shape() {
			if j > 0 {
				b = append(b, ' ')
			}
			b = strconv.AppendInt(b, int64(d), 10)
		}
		b = append(b, ']')
		if dev := a.Device(); dev != device.Host() {
			b = append(b, '@')
			b = append(b, dev.Name()...)
		}
	}
	return string(b)
}

// tracer records the ops of one trace.
type tracer struct {
	g    *Graph
	vals map[*tensor.Tensor]Output
	// varies marks the nodes whose value can differ between calls: the
	// arguments, captured variables and the ops that read either.
	varies map[*Node]bool
	ctx    *traceCtx // the Cond branch or While frame being recorded, if any
	// iter marks nodes whose value is per iteration of the enclosing loop
	// frame (loop Merges and what reads them).
	iter map[*Node]bool
	// branchOf is the Cond branch a node lives in (dead when it is not
	// taken), for the nodes made inside one.
	branchOf  map[*Node]*traceCtx
	loops     int    // While frames made, for their names
	paused    int    // >0 while a loop finishes eagerly, unrecorded
	goroutine uint64 // the tracing goroutine
	err       error
	// unroll traces loops iteration by iteration (with guards), for
	// functions whose loops cannot be frames (see trace_guard.go).
	unroll bool
	// untraced holds the tensors ops made while the trace was paused.
	untraced map[weak.Pointer[tensor.Tensor]]bool
}

var (
	traceMu       sync.Mutex // one trace at a time
	activeTrace   atomic.Pointer[tracer]
	installTracer sync.Once
)

// currentTrace returns the trace being recorded by this goroutine, or nil:
// ops and control flow of other goroutines are not part of it.
func currentTrace() *tracer {
	t := activeTrace.Load()
	if t == nil || t.goroutine != goroutineID() {
		return nil
	}
	return t
}

// recording returns the trace this goroutine is recording now: none while
// a traced loop finishes eagerly, or once the trace has failed.
func recording() *tracer {
	if t := currentTrace(); t != nil && t.err == nil && t.paused == 0 {
		return t
	}
	return nil
}

// goroutineID parses the running goroutine's number from the first line of
// its stack trace ("goroutine 7 [running]:"). It costs about a microsecond,
// paid per op only while a trace records.
func goroutineID() uint64 {
	var buf [40]byte
	s := buf[:runtime.Stack(buf[:], false)]
	s = s[len("goroutine "):]
	var id uint64
	for _, c := range s {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}

type traceObserver struct{}

func (traceObserver) Observe(c *eager.Call, outs []*tensor.Tensor) {
	if t := recording(); t != nil {
		t.record(c, outs)
	} else if t := currentTrace(); t != nil && t.paused > 0 {
		t.noteUntraced(outs)
	}
}

func (t *tracer) record(c *eager.Call, outs []*tensor.Tensor) {
	// Constant folding: an op whose inputs are all constants of the trace
	// gave the value it will always give; its outputs are captured as
	// constants when something reads them.
	folded := len(c.Inputs) > 0
	for _, x := range c.Inputs {
		if t.derived(x) {
			folded = false
			break
		}
	}
	if folded {
		// Its outputs are constants of the trace, unless an input is a
		// value the eager run made beside the trace: then so are they.
		for _, x := range c.Inputs {
			if t.readsUntraced(x) {
				t.noteUntraced(outs)
				break
			}
		}
		return
	}
	ins := make([]Output, len(c.Inputs))
	for i, x := range c.Inputs {
		ins[i] = t.route(t.ctx, t.value(x))
	}
	n := t.g.Apply(c.Op, c.Attrs, len(outs), ins...)
	for _, in := range ins {
		t.iter[n] = t.iter[n] || t.iter[in.Node]
	}
	if ctx := t.ctx; ctx != nil && ctx.frame != "" && !t.iter[n] {
		// Directly in a loop frame and reading only loop constants: run
		// (and die) with the iteration, as TensorFlow's pivot makes it.
		n.Control = append(n.Control, ctx.pivot)
		t.iter[n] = true
	}
	if ctx := t.ctx; ctx != nil && ctx.frame == "" {
		t.branchOf[n] = ctx
		if !t.readsFrom(ctx, ins) {
			// In a Cond branch reading nothing routed into it (only
			// constants and variables): run only when the branch is taken.
			n.Control = append(n.Control, t.branchPivot(ctx))
		}
	}
	n.Specs = make([]eager.Out, len(outs))
	for i, o := range outs {
		n.Specs[i] = specOf(o)
		t.vals[o] = n.Out(i)
	}
	t.varies[n] = true // it was not folded: an input varies
}

// specOf is x's dtype and shape, as node specs record them.
func specOf(x *tensor.Tensor) eager.Out { return eager.Out{DType: x.DType(), Shape: x.Shape()} }

// value returns the graph value of x, capturing it as a constant when the
// trace has not seen it: a variable by reference, anything else through a
// view of its own so that a later Release by its owner cannot free it.
func (t *tracer) value(x *tensor.Tensor) Output {
	if v, ok := t.vals[x]; ok {
		return v
	}
	if t.readsUntraced(x) {
		// A value the eager run made beside the trace: as a constant it
		// would hold this call's value in every later call.
		t.fail(fmt.Errorf("%w (%s)", errUnroll, tensor.Describe(x)))
	}
	c := x
	if !x.IsVariable() {
		c = x.View(x.Shape(), x.Layout())
	}
	v := t.g.Constant(c)
	v.Node.Specs = []eager.Out{specOf(x)}
	t.vals[x] = v
	t.varies[v.Node] = x.IsVariable()
	return v
}

// derived reports whether x's value can differ between calls: a value the
// trace computed from its arguments or variables, or a variable itself
// (read afresh by every call, whether or not the trace has seen it yet).
func (t *tracer) derived(x *tensor.Tensor) bool {
	if x.IsVariable() {
		return true
	}
	v, ok := t.vals[x]
	return ok && t.varies[v.Node]
}

// checkTraced is called by the constructs that decide by a tensor's value
// eagerly (a loop traced iteration by iteration): during a trace, a
// decision on a value that varies between calls becomes a guard.
func checkTraced(construct string, x *tensor.Tensor) {
	if t := recording(); t != nil && t.derived(x) {
		t.guard(construct, x)
	}
}

// traceCall runs fn on args while recording, and returns its results and
// the pruned graph. unroll traces loops iteration by iteration.
func traceCall(fn func([]*tensor.Tensor) []*tensor.Tensor, args []*tensor.Tensor, unroll bool) ([]*tensor.Tensor, *Graph, error) {
	installTracer.Do(func() { eager.AddObserver(traceObserver{}) })
	traceMu.Lock()
	defer traceMu.Unlock()
	t := &tracer{g: &Graph{}, vals: map[*tensor.Tensor]Output{}, varies: map[*Node]bool{}, iter: map[*Node]bool{},
		branchOf:  map[*Node]*traceCtx{},
		goroutine: goroutineID(), unroll: unroll}
	for i, a := range args {
		if a == nil {
			return nil, nil, fmt.Errorf("control: Function argument %d is nil", i)
		}
		if i == 0 {
			t.g.Device = a.Device()
		}
		p := t.g.Input(fmt.Sprintf("arg%d", i))
		t.varies[p.Node] = true
		p.Node.Specs = []eager.Out{specOf(a)}
		if _, seen := t.vals[a]; !seen {
			t.vals[a] = p
		}
	}
	activeTrace.Store(t)
	eager.Activate()
	var out []*tensor.Tensor
	func() {
		defer func() {
			eager.Deactivate()
			activeTrace.Store(nil)
		}()
		out = fn(args)
	}()
	if t.err != nil {
		return nil, nil, t.err
	}
	for i, o := range out {
		if o == nil {
			if t.g.nilResults == nil {
				t.g.nilResults = make([]bool, len(out))
			}
			t.g.nilResults[i] = true
			continue
		}
		t.g.Result = append(t.g.Result, t.value(o))
	}
	t.g.prune()
	if t.g.dropUnreadStacks() {
		t.g.prune()
	}
	t.g.eliminateCommonSubexpressions()
	t.g.fuseElementwise()
	return out, t.g, nil
}

// prune drops the nodes no result depends on (ops of other goroutines,
// values fn computed and discarded) and numbers the rest in order.
func (g *Graph) prune() {
	keep := map[*Node]bool{}
	var visit func(n *Node)
	visit = func(n *Node) {
		if keep[n] {
			return
		}
		keep[n] = true
		for _, in := range n.Inputs {
			visit(in.Node)
		}
		for _, c := range n.Control {
			visit(c)
		}
		for _, c := range n.After {
			visit(c)
		}
	}
	for _, r := range g.Result {
		visit(r.Node)
	}
	for _, n := range g.Nodes {
		if isGuard(n) {
			visit(n)
		}
	}
	for _, p := range g.Inputs {
		keep[p] = true
	}
	nodes := g.Nodes[:0]
	for _, n := range g.Nodes {
		if keep[n] {
			n.ID = len(nodes)
			nodes = append(nodes, n)
		}
	}
	clear(g.Nodes[len(nodes):])
	g.Nodes = nodes
}
