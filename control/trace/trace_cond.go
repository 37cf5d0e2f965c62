package trace

import (
	"fmt"
	"slices"

	"github.com/eagerflow/eagerflow/control/graph"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/plumb"
	"github.com/eagerflow/eagerflow/internal/regions"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Tracing Cond: both branches run (the untaken one only to be recorded),
// each inside a branch context that routes every value it reads from
// outside through a Switch on the predicate, and a Merge joins each pair
// of outputs, as TensorFlow builds a cond. The call returns the taken
// branch's values, as eagerly.

// traceCtx is the Cond branch or While frame being recorded.
type traceCtx struct {
	parent *traceCtx
	start  int // nodes from this ID on were made inside
	// A Cond branch: the predicate, which Switch output is this branch,
	// and the Cond's number (graph.Node.Cond).
	pred   graph.Output
	branch int
	cond   int
	// A While frame: its name, its ParallelIterations, the most iterations
	// it runs (0: not known), how many the traced call ran (a loop a tape
	// records), and the node that ops reading no per-iteration value wait
	// on (TensorFlow's pivot).
	frame    string
	parallel int
	bound    int
	trips    int
	pivot    *graph.Node
	switched map[graph.Output]graph.Output // values from outside, as routed in
	// end is where a finished frame's nodes stop; nexts are its
	// NextIterations (its stack pushes, added while its gradient is
	// traced, are ordered before them).
	end   int
	nexts []*graph.Node
	// The backward frame of a loop's gradient: the forward frame, whose
	// per-iteration values it reads through stacks, and the pops made so
	// far (its NextIterations wait for them).
	forward *traceCtx
	pops    []*graph.Node
	// taped marks the forward frame of a loop whose gradient is traced
	// (conds inside it may be differentiated); gates holds, in a backward
	// frame, the node that lives only where a forward Cond branch was
	// taken, per branch.
	taped bool
	gates map[*traceCtx]*graph.Node
	// needsTape marks a frame traced untaped whose body holds a Cond a
	// tape records: the loop is traced again with its gradient.
	needsTape bool
	// after are nodes a frame's NextIterations wait for by ordering edges:
	// the Exits of loops in its body whose stacks must fill (or empty) one
	// iteration at a time.
	after []*graph.Node
}

// route returns the value of v as seen inside ctx: a value made outside
// enters a While frame as a loop constant (an Enter) and a Cond branch
// through a Switch on the predicate, after the enclosing contexts' own
// routing; one node per value and context. Constants need no routing: an
// op of constants only is folded, and one with another input lives and
// dies with it.
func (t *tracer) route(ctx *traceCtx, v graph.Output) graph.Output {
	if ctx == nil || v.Node.ID >= ctx.start || v.Node.Kind == graph.Const {
		return v
	}
	if r, ok := ctx.switched[v]; ok {
		return r
	}
	if f := ctx.forward; f != nil && v.Node.ID >= f.start && v.Node.ID < f.end && t.iter[v.Node] {
		r := t.popped(ctx, v)
		ctx.switched[v] = r
		return r
	}
	inner := t.route(ctx.parent, v)
	var r graph.Output
	if ctx.frame != "" {
		r = t.g.Enter(inner, ctx.frame, true, ctx.parallel)
		r.Node.Specs = []eager.Out{spec1(v)}
		t.varies[r.Node] = t.varies[inner.Node]
	} else {
		r = t.branchSwitch(ctx, inner)
	}
	ctx.switched[v] = r
	return r
}

// switchOn adds Switch(v, pred) with its specs and per-iteration mark.
func (t *tracer) switchOn(v, pred graph.Output) *graph.Node {
	sw := t.g.Switch(v, pred)
	sw.Specs = []eager.Out{spec1(v), spec1(v)}
	t.iter[sw] = t.iter[v.Node] || t.iter[pred.Node]
	t.varies[sw] = t.varies[v.Node] || t.varies[pred.Node]
	return sw
}

// branchSwitch routes v into Cond branch ctx: Switch(v, pred), marked as
// the Cond's, its output on ctx's side.
func (t *tracer) branchSwitch(ctx *traceCtx, v graph.Output) graph.Output {
	sw := t.switchOn(v, ctx.pred)
	sw.Cond = ctx.cond
	t.branchOf[sw] = ctx
	return sw.Out(ctx.branch)
}

// readsFrom reports whether a node with inputs ins, recorded in ctx, reads
// a value of ctx (made there, or routed in), so that it dies with it.
func (t *tracer) readsFrom(ctx *traceCtx, ins []graph.Output) bool {
	for _, in := range ins {
		if in.Node.Kind != graph.Const && in.Node.ID >= ctx.start {
			return true
		}
	}
	return false
}

// branchPivot returns the node a Cond branch's ops that read nothing of the
// branch wait on by a control edge: an Identity of the predicate switched
// on itself, dead when the branch is not taken (TensorFlow's pivot).
func (t *tracer) branchPivot(ctx *traceCtx) *graph.Node {
	if ctx.pivot == nil {
		sw := t.branchSwitch(ctx, ctx.pred)
		ctx.pivot = t.g.Apply(identityOp(), nil, 1, sw)
		t.branchOf[ctx.pivot] = ctx
		ctx.pivot.Specs = []eager.Out{spec1(ctx.pred)}
		t.iter[ctx.pivot] = t.iter[sw.Node]
		t.varies[ctx.pivot] = true
	}
	return ctx.pivot
}

// gate returns a Cond branch's output so that it is dead when the branch
// is not taken: one computed inside the branch already is; anything else
// (a constant, a value from outside) goes through a Switch of its own.
func (t *tracer) gate(ctx *traceCtx, v graph.Output) graph.Output {
	if v.Node.ID >= ctx.start && v.Node.Kind != graph.Const {
		return v
	}
	return t.branchSwitch(ctx, t.route(ctx.parent, v))
}

// mergeSpecs are a Merge's outputs: the value and its input's index.
func mergeSpecs(value eager.Out) []eager.Out {
	return []eager.Out{value, {DType: tensor.Int32, Shape: tensor.Shape{}}}
}

// spec1 is o's dtype and shape (as the tracer recorded them).
func spec1(o graph.Output) eager.Out {
	s, _ := o.Spec()
	return s
}

// tracedCond records Cond(pred, branches[1], branches[0]) into the trace.
// Under a tape the cond is also one region of the tape whose gradient is
// traced as a cond of the branches' gradients on the same predicate.
func (t *tracer) Cond(pred *tensor.Tensor, branches [2]func() []*tensor.Tensor) []*tensor.Tensor {
	pv := t.route(t.ctx, t.value(pred))
	taken := btoi(plumb.Tensor.Item(pred).(bool)) // the graph's Switch decides at each run
	var outs [2][]*tensor.Tensor
	var gated [2][]graph.Output
	var from, to [2]uint64
	id := int(t.conds.Add(1))
	for b := range 2 {
		ctx := &traceCtx{parent: t.ctx, pred: pv, branch: b, cond: id, start: len(t.g.Nodes), switched: map[graph.Output]graph.Output{}}
		run := func() {
			t.within(ctx, func() {
				from[b] = regions.Mark()
				outs[b] = branches[b]()
				to[b] = regions.Mark()
			})
		}
		if b == taken {
			run()
		} else {
			// Its ops see this call's values, which it was not meant for.
			if err := catchPanic(run); err != nil {
				t.fail(fmt.Errorf("trace: tracing Cond: the branch not taken (%v) failed on this call's values: %v", b == 1, err))
				return outs[taken]
			}
		}
		for _, o := range outs[b] {
			if o == nil {
				t.fail(fmt.Errorf("trace: tracing Cond: the %v branch returned a nil tensor", b == 1))
				return outs[taken]
			}
			gated[b] = append(gated[b], t.gate(ctx, t.valueIn(ctx, o)))
		}
	}
	if len(outs[0]) != len(outs[1]) {
		t.fail(fmt.Errorf("trace: Cond branches return different numbers of values: true %d, false %d", len(outs[1]), len(outs[0])))
		return outs[taken]
	}
	res := make([]*tensor.Tensor, len(outs[taken]))
	merged := make([]graph.Output, len(res))
	for i := range outs[taken] {
		a, b := outs[0][i], outs[1][i]
		if a.DType() != b.DType() || !a.Shape().Equal(b.Shape()) {
			t.fail(fmt.Errorf("trace: Cond output %d differs between branches: true %v%v, false %v%v",
				i, b.DType(), b.Shape(), a.DType(), a.Shape()))
			return outs[taken]
		}
		m := t.g.Merge(gated[0][i], gated[1][i])
		m.Cond = id
		m.Specs = mergeSpecs(specOf(a))
		if t.ctx != nil && t.ctx.frame == "" {
			t.branchOf[m] = t.ctx
		}
		t.varies[m] = true
		t.iter[m] = t.iter[gated[0][i].Node] || t.iter[gated[1][i].Node]
		// A fresh tensor, so that the taken branch's value (perhaps a
		// tensor from outside the cond) keeps its own graph value.
		x := outs[taken][i]
		res[i] = x.View(x.Shape(), x.Layout())
		t.setVal(res[i], m.Out(0))
		merged[i] = m.Out(0)
	}
	if !regions.Recording() {
		return res
	}
	// The tensors either branch reads from outside get the gradients; a
	// tape records the cond when there are any.
	var caps []*tensor.Tensor
	for b := range 2 {
		for _, c := range regions.Captures(from[b], to[b], outs[b], nil) {
			if !slices.Contains(caps, c) {
				caps = append(caps, c)
			}
		}
	}
	if len(caps) == 0 {
		return res
	}
	if f := t.innerFrame(t.ctx); f != nil && !f.taped {
		if f.forward == nil {
			// The loop around it must be traced with its gradient: While
			// traces it again so (whileOnTape), its frame taped.
			f.needsTape = true
		}
		// In a loop's backward frame (a Cond's gradient, differentiated
		// again) the frame's results carry the record a tape follows
		// (whileGradient's differentiable: asked while this trace
		// records, it traces again with the loops unrolled).
		return res
	}
	gradient := t.gradConds.Load() > 0 // this Cond is another Cond's gradient
	backward := func(dys []*tensor.Tensor) []*tensor.Tensor {
		if gradient && t.Recording() {
			// A Cond's gradient differentiated again while the trace
			// records: traced, the second derivative would read the
			// branches' values outside them. The Function traces again,
			// its decisions unrolled and guarded (tracingCond).
			t.fail(fmt.Errorf("%w (a Cond's gradient differentiated again)", errUnroll))
		}
		vjp := func(b int) []*tensor.Tensor { return regions.WindowVJP(outs[b], dys, caps, from[b], to[b]) }
		if f := t.innerFrame(t.ctx); !t.Recording() || (f != nil && f.forward == nil) {
			var g []*tensor.Tensor
			t.unrecorded(func() { g = vjp(taken) })
			return g
		}
		// A traced cond of the two branches' gradients (zeros where a
		// branch gives a capture none): the taken one's are this call's.
		grad := func(b int) func() []*tensor.Tensor {
			return func() []*tensor.Tensor {
				g := vjp(b)
				for k, d := range g {
					if d == nil {
						g[k] = ops.ZerosLike(caps[k])
					}
				}
				return g
			}
		}
		t.gradConds.Add(1)
		defer t.gradConds.Add(-1)
		return t.Cond(pred, [2]func() []*tensor.Tensor{grad(0), grad(1)})
	}
	var fresh []*tensor.Tensor
	t.unrecorded(func() { fresh = regions.RecordRegion(caps, res, backward, nil) })
	for i, y := range fresh {
		t.setVal(y, merged[i])
	}
	return fresh
}

// innerFrame returns the While frame ctx is or is inside, or nil.
func (t *tracer) innerFrame(ctx *traceCtx) *traceCtx {
	for ; ctx != nil; ctx = ctx.parent {
		if ctx.frame != "" {
			return ctx
		}
	}
	return nil
}

// valueIn is t.value(x) as seen from ctx: a value computed from variables
// beside the trace is recorded there (its ops then live and die with a
// branch, or run at each iteration of a frame).
func (t *tracer) valueIn(ctx *traceCtx, x *tensor.Tensor) (v graph.Output) {
	t.within(ctx, func() { v = t.value(x) })
	return v
}

// within runs fn with ctx as the context ops are recorded in, restoring
// the previous one however fn ends.
func (t *tracer) within(ctx *traceCtx, fn func()) {
	prev := t.ctx
	t.ctx = ctx
	defer func() { t.ctx = prev }()
	fn()
}

// unrecorded runs fn without recording its ops (a traced loop finishing
// its call eagerly, a probe of a step's shapes).
func (t *tracer) unrecorded(fn func()) {
	t.paused.Add(1)
	defer t.paused.Add(-1)
	fn()
}

// catchPanic runs fn and returns what it panicked with as an error.
func catchPanic(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	fn()
	return nil
}

func (t *tracer) fail(err error) {
	t.failure.CompareAndSwap(nil, &err)
}

// err is the first error the trace failed with, or nil.
func (t *tracer) err() error {
	if p := t.failure.Load(); p != nil {
		return *p
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
