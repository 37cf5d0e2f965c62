package trace

import (
	"fmt"
	"slices"
	"sync"

	"github.com/eagerflow/eagerflow/control/graph"
	"github.com/eagerflow/eagerflow/control/internal/flow"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/plumb"
	"github.com/eagerflow/eagerflow/internal/regions"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Tracing While: the loop becomes a frame as TensorFlow builds one. Per
// loop value an Enter into the frame, a Merge of it with the value's
// NextIteration, a Switch on the predicate, an Exit from the Switch's false
// side and the body reading its true side; values from outside enter as
// loop constants. The condition and the body are recorded once, on the
// first iteration's values (the body runs on the initial values even when
// the loop takes no iteration, just to be recorded); then the loop goes on
// eagerly, unrecorded, to give this call its result.

var identityOp = sync.OnceValue(func() *eager.Op {
	for _, op := range eager.Ops() {
		if op.Name == "Identity" {
			return op
		}
	}
	panic("trace: no Identity op registered")
})

// while records While(cond, body, init, o) into the trace and returns the
// loop's values for this call, or nil when the loop is to run eagerly
// (recorded op by op).
func (t *tracer) While(cond func([]*tensor.Tensor) *tensor.Tensor, body func([]*tensor.Tensor) []*tensor.Tensor,
	init []*tensor.Tensor, o flow.Options) []*tensor.Tensor {
	if t.unroll {
		return nil
	}
	if o.MaxIterations > 0 {
		// The bound becomes a counter loop value and a conjunct of the
		// condition (evaluated even when the bound stops the loop).
		// The counter lives where the condition runs (loopDevice).
		dev := loopDevice(init)
		bound, one, nv := tensor.FullOn(dev, tensor.Int64, float64(o.MaxIterations)), tensor.FullOn(dev, tensor.Int64, 1), len(init)
		out := t.While(
			func(v []*tensor.Tensor) *tensor.Tensor { return ops.LogicalAnd(ops.Lt(v[nv], bound), cond(v[:nv])) },
			func(v []*tensor.Tensor) []*tensor.Tensor {
				return slices.Concat(body(v[:nv]), []*tensor.Tensor{ops.Add(v[nv], one)})
			},
			slices.Concat(init, []*tensor.Tensor{tensor.FullOn(dev, tensor.Int64, 0)}),
			flow.Options{ParallelIterations: o.ParallelIterations, Checkpoint: o.Checkpoint, Bound: o.MaxIterations})
		if out == nil {
			return nil
		}
		return out[:nv]
	}
	mark, from := t.Mark(), regions.Mark()
	fr, err := t.frame(cond, body, init, o.ParallelIterations, &traceCtx{})
	if err != nil {
		t.fail(err)
		return nil
	}
	if fr.ctx.needsTape || regions.Records(init...) || (regions.Recording() && len(regions.Captures(from, regions.Mark(), fr.outs, nil)) > 0) {
		// A tape records the loop too (its values, or tensors its body
		// reads, are tracked): the loop and its gradient become frames.
		t.RollbackTo(mark)
		return t.whileOnTape(cond, body, init, o)
	}
	// This call's values: the first iteration has run (if the condition
	// held); the rest run eagerly, unrecorded.
	final := init
	if plumb.Tensor.Item(fr.pred).(bool) { // the frame decides at each run
		t.unrecorded(func() {
			final = flow.While(cond, body, fr.outs, flow.Options{ParallelIterations: o.ParallelIterations, Checkpoint: o.Checkpoint})
		})
	}
	res := make([]*tensor.Tensor, len(init))
	for i, x := range final {
		res[i] = t.alias(x, fr.exits[i])
	}
	return res
}

// frameTrace is a loop frame as traced: its context, its Exits (one per
// loop value), and the predicate and body results on the initial values.
type frameTrace struct {
	ctx   *traceCtx
	exits []graph.Output
	pred  *tensor.Tensor
	outs  []*tensor.Tensor
}

// frameTaped marks a frame whose gradient will be traced (whileOnTape).
var frameTaped = &traceCtx{taped: true}

// frame records a loop frame for cond and body over init at the current
// context. kind gives the frame's role: its forward field is set for the
// backward loop of a gradient (the frame whose per-iteration values it
// reads through stacks), its taped field for a loop whose gradient will be
// traced. The error says what kept the loop from being traced.
func (t *tracer) frame(cond func([]*tensor.Tensor) *tensor.Tensor, body func([]*tensor.Tensor) []*tensor.Tensor,
	init []*tensor.Tensor, parallel int, kind *traceCtx) (*frameTrace, error) {
	forward := kind.forward
	if len(init) == 0 {
		return nil, fmt.Errorf("trace: a traced While needs at least one loop value")
	}
	for i, x := range init {
		if x == nil {
			return nil, fmt.Errorf("trace: While loop value %d is nil", i)
		}
	}
	loop := t.loops.Add(1)
	if parallel <= 0 {
		parallel = 10
	}
	outer := t.ctx
	name := fmt.Sprintf("while%d", loop)
	if forward != nil {
		name = forward.frame + "_grad"
	}
	ctx := &traceCtx{parent: outer, start: len(t.g.Nodes), frame: name,
		parallel: parallel, switched: map[graph.Output]graph.Output{}, forward: forward, taped: kind.taped}
	n := len(init)
	merges := make([]*graph.Node, n)
	vars := make([]*tensor.Tensor, n)
	for i, x := range init {
		spec := specOf(x)
		en := t.g.Enter(t.anchor(outer, t.route(outer, t.value(x))), ctx.frame, false, parallel)
		en.Node.Specs = []eager.Out{spec}
		merges[i] = t.g.Merge(en)
		merges[i].Specs = mergeSpecs(spec)
		t.iter[merges[i]], t.varies[merges[i]] = true, true
		vars[i] = t.alias(x, merges[i].Out(0))
	}
	ctx.pivot = merges[0]
	var p *tensor.Tensor
	t.within(ctx, func() { p = cond(vars) })
	if p == nil || p.DType() != tensor.Bool || p.Rank() != 0 {
		flow.Fail("While", tensor.ErrDType, []*tensor.Tensor{p}, "the predicate must be a bool scalar, got %s", tensor.Describe(p))
	}
	pv := t.route(ctx, t.valueIn(ctx, p))
	switches := make([]*graph.Node, n)
	exits := make([]graph.Output, n)
	bodyIn := make([]*tensor.Tensor, n)
	for i := range init {
		switches[i] = t.switchOn(merges[i].Out(0), pv)
		exits[i] = t.g.Exit(switches[i].Out(0))
		exits[i].Node.Specs = merges[i].Specs[:1]
		t.varies[exits[i].Node] = true
		t.iter[exits[i].Node] = t.innerFrame(outer) != nil // per iteration of an enclosing loop
		bodyIn[i] = t.alias(vars[i], switches[i].Out(1))
	}
	pivot := t.g.Apply(identityOp(), nil, 1, switches[0].Out(1))
	pivot.Specs = merges[0].Specs[:1]
	t.iter[pivot], t.varies[pivot] = true, true
	ctx.pivot = pivot

	var outs []*tensor.Tensor
	if err := catchPanic(func() { t.within(ctx, func() { outs = body(bodyIn) }) }); err != nil {
		return nil, fmt.Errorf("trace: tracing While: the body failed: %v", err)
	}
	if len(outs) != n {
		return nil, fmt.Errorf("trace: While body returns %d values for %d loop values", len(outs), n)
	}
	for i, y := range outs {
		if y == nil || y.DType() != init[i].DType() || !y.Shape().Equal(init[i].Shape()) {
			return nil, fmt.Errorf("trace: While loop value %d changes from %v to %s in the body", i,
				merges[i].Specs[0], tensor.Describe(y))
		}
		v := t.valueIn(ctx, y)
		if v.Node.ID < ctx.start || !t.iter[v.Node] {
			// A constant or a loop constant: pass it on only while the
			// iteration lives.
			v = t.switchOn(t.route(ctx, v), pv).Out(1)
		}
		next := t.g.NextIteration(v)
		next.Node.Specs = merges[i].Specs[:1]
		next.Node.After = slices.Concat(ctx.pops, ctx.after)
		ctx.nexts = append(ctx.nexts, next.Node)
		t.g.SetBackEdge(merges[i], next)
	}
	ctx.end = len(t.g.Nodes)
	return &frameTrace{ctx: ctx, exits: exits, pred: p, outs: outs}, nil
}

// anchor makes a constant a value of ctx (it has no tag of its own): in a
// loop frame an Identity of it that waits on the frame's pivot, in a Cond
// branch a Switch of it on the branch's predicate. A loop's initial value
// that is a constant needs this to start the loop once per enclosing
// iteration or only on its branch.
func (t *tracer) anchor(ctx *traceCtx, v graph.Output) graph.Output {
	if ctx == nil || v.Node.Kind != graph.Const {
		return v
	}
	if ctx.frame == "" {
		return t.branchSwitch(ctx, v)
	}
	id := t.g.Apply(identityOp(), nil, 1, v)
	id.Control = []*graph.Node{ctx.pivot}
	id.Specs = []eager.Out{spec1(v)}
	t.iter[id] = true
	return id.Out(0)
}

// alias returns a fresh tensor sharing x's buffer whose graph value is v.
func (t *tracer) alias(x *tensor.Tensor, v graph.Output) *tensor.Tensor {
	a := x.View(x.Shape(), x.Layout())
	t.setVal(a, v)
	return a
}

// scan records Scan as a While over (step, carry..., stacked outputs...):
// step t reads xs[t] by Gather and writes its outputs into row t of
// buffers of the full [steps ...] shape by DynamicUpdateSlice, so the trace
// holds one frame, not one copy of fn per step. The outputs' shapes come
// from an unrecorded probe of step 0.
func (t *tracer) Scan(fn func(carry, x []*tensor.Tensor) ([]*tensor.Tensor, []*tensor.Tensor),
	init, xs []*tensor.Tensor, steps int) (carry, ys []*tensor.Tensor) {
	step0 := func(i *tensor.Tensor) []*tensor.Tensor {
		x := make([]*tensor.Tensor, len(xs))
		for k, s := range xs {
			x[k] = ops.Gather(s, i, 0)
		}
		return x
	}
	// The step counter lives where the sequences do: Gather and
	// DynamicUpdateSlice take their indices on their operands' device.
	dev := xs[0].Device()
	count := func(v int64) *tensor.Tensor { return tensor.FullOn(dev, tensor.Int64, float64(v)) }
	var probe []*tensor.Tensor
	t.unrecorded(func() { _, probe = fn(init, step0(count(0))) })
	nc := len(init)
	vars := append([]*tensor.Tensor{count(0)}, init...)
	for _, y := range probe {
		vars = append(vars, tensor.FullOn(y.Device(), y.DType(), 0, append([]int{steps}, y.Shape()...)...))
	}
	last, one := count(int64(steps)), count(1)
	out := flow.While(func(v []*tensor.Tensor) *tensor.Tensor { return ops.Lt(v[0], last) },
		func(v []*tensor.Tensor) []*tensor.Tensor {
			c, y := fn(v[1:1+nc], step0(v[0]))
			if len(y) != len(probe) {
				flow.Fail("Scan", tensor.ErrArity, y, "a step returned %d outputs, step 0 returned %d", len(y), len(probe))
			}
			next := append([]*tensor.Tensor{ops.Add(v[0], one)}, c...)
			for j, yj := range y {
				acc := v[1+nc+j]
				// starts = [t, 0, 0, ...] on acc's device
				starts := ops.Pad(ops.Reshape(v[0], 1), count(0), ops.PadDim{High: acc.Rank() - 1})
				next = append(next, ops.DynamicUpdateSlice(acc, ops.ExpandDims(yj, 0), starts))
			}
			return next
		}, vars, flow.Options{Bound: steps})
	return out[1 : 1+nc], out[1+nc:]
}
