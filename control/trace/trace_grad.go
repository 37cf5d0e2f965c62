package trace

import (
	"fmt"
	"math"
	"slices"

	"github.com/eagerflow/eagerflow/control/graph"
	"github.com/eagerflow/eagerflow/control/internal/flow"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/regions"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Tracing a While that a tape records, as TensorFlow builds a loop's
// gradient ("Implementation of Control Flow in TensorFlow", section 7.2):
//   - The forward loop is a frame with one more loop value, a counter, whose
//     Exit is the trip count N.
//   - Its gradient is a second loop frame, "<frame>_grad", over (n, the loop
//     values' gradients, the captured tensors' gradients), starting from
//     (N, the gradients of the loop's results, zeros) and running while
//     n > 0: each iteration is the gradient of one body iteration, the
//     captured tensors' gradients are summed as it goes (loop-invariant
//     accumulation).
//   - The backward body is the body's gradient rules (regions.WindowVJP over
//     the body's record), traced once. Each per-iteration value of the
//     forward frame that a rule reads gets a stack: a StackPush in the
//     forward frame at every iteration, a StackPop in the backward frame
//     (found as the rules read them: route sends such a read to popped).
//     A frame's NextIterations wait for its pushes or pops (ordering edges,
//     which do not pass deadness on), so pops come in the reverse order of
//     pushes.
//   - A Cond in the body is differentiated by a Cond on the same predicate
//     (trace_cond.go): its predicate is popped like any value, and a value
//     made in one of its branches, pushed only where the branch was taken,
//     is popped only where the popped predicate takes it (backGate).
// The call being traced still returns eager values: the loop runs eagerly
// on the tape (unrecorded by the trace), and its gradient, when the tape
// asks for it, runs eagerly beside the recording of the backward frame.

// loopWindow is the body's record on the first iteration's values: its
// detached inputs and its results, between two tape marks.
type loopWindow struct {
	from, to uint64
	in, out  []*tensor.Tensor
}

// whileOnTape records a While whose gradient a tape will ask for. It
// returns nil (the loop then runs eagerly, recorded op by op) when the loop
// is not at the top level of the trace or its body cannot be traced on its
// own (a construct inside that is traced only unrolled).
func (t *tracer) whileOnTape(cond func([]*tensor.Tensor) *tensor.Tensor, body func([]*tensor.Tensor) []*tensor.Tensor,
	init []*tensor.Tensor, o flow.Options) []*tensor.Tensor {
	if !t.gradTraceable(t.ctx, false) {
		return nil
	}
	nv := len(init)
	dev := loopDevice(init)
	one := tensor.FullOn(dev, tensor.Int64, 1)
	var win loopWindow
	counted := func(v []*tensor.Tensor) []*tensor.Tensor {
		win.in = make([]*tensor.Tensor, nv)
		for i, x := range v[:nv] {
			win.in[i] = t.detach(x)
		}
		win.from = regions.Mark()
		win.out = body(win.in)
		win.to = regions.Mark()
		if len(win.out) != nv {
			flow.Fail("While", tensor.ErrArity, v[:nv], "the body returned %d values for %d loop values", len(win.out), nv)
		}
		return slices.Concat(win.out, []*tensor.Tensor{ops.Add(v[nv], one)})
	}
	nodes := len(t.g.Nodes)
	fr, err := t.frame(func(v []*tensor.Tensor) *tensor.Tensor { return cond(v[:nv]) }, counted,
		slices.Concat(init, []*tensor.Tensor{tensor.FullOn(dev, tensor.Int64, 0)}), o.ParallelIterations, frameTaped)
	if err != nil || t.err() != nil {
		// Drop what was recorded: the loop runs eagerly instead, and fails
		// there if it must.
		t.rollback(nodes)
		return nil
	}
	fr.ctx.bound = o.Bound
	caps := regions.Captures(win.from, win.to, win.out, win.in)
	if f := t.innerFrame(t.ctx); f != nil {
		// Nested: the enclosing loop's next iteration waits for this loop
		// to be done, so that their pushes do not interleave.
		for _, x := range fr.exits {
			f.after = append(f.after, x.Node)
		}
	}

	// This call's values: the loop on the tape, unrecorded by the trace.
	l := &flow.Loop{Name: "While", NVars: nv, Checkpoint: o.Checkpoint, Body: body, Recording: true}
	var final []*tensor.Tensor
	t.unrecorded(func() { final = l.While(cond, init, 0) })
	outs := make([]*tensor.Tensor, nv)
	for i, x := range final {
		outs[i] = x.View(x.Shape(), x.Layout())
	}
	fr.ctx.trips = l.Trips
	trips := tensor.FullOn(dev, tensor.Int64, float64(l.Trips))
	t.setVal(trips, fr.exits[nv])
	backward := func(dys []*tensor.Tensor) []*tensor.Tensor {
		return t.whileGradient(l, fr, &win, caps, init, trips, dys)
	}
	var res []*tensor.Tensor
	t.unrecorded(func() { res = regions.RecordRegion(slices.Concat(init, caps), outs, backward, nil) })
	for i, y := range res {
		t.setVal(y, fr.exits[i])
	}
	return res
}

// gradTraceable reports whether a loop's gradient can be traced at ctx:
// every loop frame around it is a forward loop whose own gradient is being
// traced (backward: a backward loop), with Conds anywhere between.
func (t *tracer) gradTraceable(ctx *traceCtx, backward bool) bool {
	for ; ctx != nil; ctx = ctx.parent {
		if ctx.frame == "" {
			continue
		}
		if (backward && ctx.forward == nil) || (!backward && !ctx.taped) {
			return false
		}
	}
	return true
}

// rollback forgets a failed recording: the nodes from ID nodes on and the
// graph values that name them (tensors first seen there are captured
// again when read).
func (t *tracer) rollback(nodes int) {
	t.failure.Store(nil)
	for x, v := range t.vals {
		if v.Node.ID >= nodes {
			delete(t.vals, x)
		}
	}
	for ctx := t.ctx; ctx != nil; ctx = ctx.parent {
		for v, r := range ctx.switched {
			if v.Node.ID >= nodes || r.Node.ID >= nodes {
				delete(ctx.switched, v)
			}
		}
		ctx.after = slices.DeleteFunc(ctx.after, func(n *graph.Node) bool { return n.ID >= nodes })
		ctx.pops = slices.DeleteFunc(ctx.pops, func(n *graph.Node) bool { return n.ID >= nodes })
	}
	t.g.Truncate(nodes)
}

// detach returns regions.Detach(x) with x's graph value: a leaf of the body's
// record that reads the same value in the graph.
func (t *tracer) detach(x *tensor.Tensor) *tensor.Tensor {
	var d *tensor.Tensor
	t.unrecorded(func() { d = regions.Detach(x) })
	t.setVal(d, t.value(x))
	return d
}

// whileGradient is the backward of a loop recorded by whileOnTape: the
// gradients of init and caps given those of the loop's results. It records
// the backward frame when the trace that made the loop is still recording
// at the top level, and computes this call's values eagerly from the
// loop's own record either way.
func (t *tracer) whileGradient(l *flow.Loop, fr *frameTrace, win *loopWindow, caps, init []*tensor.Tensor,
	trips *tensor.Tensor, dys []*tensor.Tensor) []*tensor.Tensor {
	nv := len(init)
	var graph []graph.Output
	if t.Recording() {
		if !t.gradTraceable(t.ctx, true) {
			t.fail(fmt.Errorf("trace: the gradient of a traced While is asked for inside a Cond or While; " +
				"ask the tape outside of them"))
		} else {
			var err error
			if graph, err = t.backwardFrame(fr, win, caps, init, trips, dys); err != nil {
				t.fail(err)
			}
		}
	}
	var now []*tensor.Tensor
	t.unrecorded(func() { now = l.Backward(dys) })
	res := make([]*tensor.Tensor, nv+len(caps))
	copy(res, now[:nv])
	for k, c := range l.Caps {
		j := slices.Index(caps, c)
		if j < 0 {
			t.fail(fmt.Errorf("trace: a traced While's body reads %s at a later iteration but not at the first; "+
				"the trace holds the first iteration's body only", tensor.Describe(c)))
			continue
		}
		res[nv+j] = now[nv+k]
	}
	if graph == nil {
		return res
	}
	sources := slices.Concat(init, caps)
	// What the backward frame reads: a tape that differentiates one of its
	// gradients differentiates through these, whatever this call's eager
	// record says (a loop that took no iteration here has no record).
	reads := slices.Concat(sources, slices.DeleteFunc(slices.Clone(dys), func(d *tensor.Tensor) bool { return d == nil }))
	for i, s := range sources {
		if graph[i].Node == nil {
			continue
		}
		r := res[i]
		if r == nil {
			r = tensor.FullOn(s.Device(), s.DType(), 0, s.Shape()...)
		}
		res[i] = t.differentiable(r, reads, graph[i])
	}
	return res
}

// differentiable returns a tensor with r's value whose graph value is v
// (a gradient computed eagerly beside the backward frame that computes it
// in the graph), differentiable through r by a tape that records it: a
// second derivative. The frame holds no record a tape could follow, so a
// tape that asks for one while this trace records fails the trace with
// errUnroll (the Function traces again, loops unrolled); asked after the
// trace, it follows r's eager record.
//
// reads are the tensors the frame's value depends on. The region reads
// them too, so that a tape differentiating through it while the trace
// records reaches it even where r's eager record is connected to none of
// them: a loop that took fewer iterations at the trace than the graph
// takes later (none, or one whose gradient is constant) must not make the
// trace conclude that the second derivative is nil.
func (t *tracer) differentiable(r *tensor.Tensor, reads []*tensor.Tensor, v graph.Output) *tensor.Tensor {
	a := r.View(r.Shape(), r.Layout())
	var res []*tensor.Tensor
	t.unrecorded(func() {
		res = regions.RecordRegion(slices.Concat([]*tensor.Tensor{r}, reads), []*tensor.Tensor{a}, func(dys []*tensor.Tensor) []*tensor.Tensor {
			if t.Recording() {
				t.fail(fmt.Errorf("%w (a loop's gradient differentiated again)", errUnroll))
			}
			return append(dys, make([]*tensor.Tensor, len(reads))...)
		}, nil)
	})
	t.setVal(res[0], v)
	return res[0]
}

// backwardFrame records the gradient loop of fr (see the top of the file)
// and returns the graph values of the gradients of init and caps (a zero
// Output for those that are not floating point).
func (t *tracer) backwardFrame(fr *frameTrace, win *loopWindow, caps, init []*tensor.Tensor,
	trips *tensor.Tensor, dys []*tensor.Tensor) ([]graph.Output, error) {
	sources := slices.Concat(win.in, caps)
	var diff []int // indices into sources of those with gradients
	for i, s := range sources {
		if s.DType().IsFloat() {
			diff = append(diff, i)
		}
	}
	nv := len(init)
	vars := []*tensor.Tensor{trips}
	for _, i := range diff {
		switch {
		case i < nv && dys[i] != nil:
			vars = append(vars, dys[i])
		default:
			s := sources[i]
			vars = append(vars, tensor.FullOn(s.Device(), s.DType(), 0, s.Shape()...))
		}
	}
	dev := loopDevice(init)
	zero, one := tensor.FullOn(dev, tensor.Int64, 0), tensor.FullOn(dev, tensor.Int64, 1)
	bwd, err := t.frame(func(v []*tensor.Tensor) *tensor.Tensor { return ops.Gt(v[0], zero) },
		func(v []*tensor.Tensor) []*tensor.Tensor {
			seeds := make([]*tensor.Tensor, len(win.out))
			for k, i := range diff {
				if i < nv {
					seeds[i] = v[1+k]
				}
			}
			var src []*tensor.Tensor
			for _, i := range diff {
				src = append(src, sources[i])
			}
			grads := regions.WindowVJP(win.out, seeds, src, win.from, win.to)
			next := []*tensor.Tensor{ops.Sub(v[0], one)}
			for k, i := range diff {
				g := grads[k]
				switch {
				case i >= nv && g != nil: // a captured tensor's: summed
					g = ops.Add(v[1+k], g)
				case i >= nv:
					g = v[1+k]
				case g == nil:
					g = tensor.FullOn(sources[i].Device(), sources[i].DType(), 0, sources[i].Shape()...)
				}
				next = append(next, g)
			}
			return next
		}, vars, fr.ctx.parallel, &traceCtx{forward: fr.ctx})
	if err != nil {
		return nil, fmt.Errorf("trace: tracing the gradient of a While: %v", err)
	}
	if f := t.innerFrame(t.ctx); f != nil {
		for _, x := range bwd.exits {
			f.after = append(f.after, x.Node)
		}
	}
	out := make([]graph.Output, len(sources))
	for k, i := range diff {
		out[i] = bwd.exits[1+k]
	}
	return out, nil
}

// loopDevice is where a loop's counters live: the placement scope's
// device, or else its values'.
func loopDevice(init []*tensor.Tensor) device.Device {
	if dev, _ := device.Scope(); dev != nil {
		return dev
	}
	return init[0].Device()
}

// stackCapacity is the most values a stack pushed at each iteration of
// frame fwd holds: the product of the bounds of fwd and the frames around
// it, 0 where one is not known.
func stackCapacity(fwd *traceCtx) int {
	return stackDepth(fwd, func(ctx *traceCtx) int { return ctx.bound })
}

// stackDepth is the product over fwd and the frames around it of their
// iterations, per(frame), 0 where one is 0 or the product passes 2^31.
// With the trip counts the trace saw (where a frame has no bound), it is
// a recording's guess at the stack's depth (graph.Node.Depth).
func stackDepth(fwd *traceCtx, per func(*traceCtx) int) int {
	c := 1
	for ctx := fwd; ctx != nil; ctx = ctx.parent {
		if ctx.frame == "" {
			continue
		}
		n := per(ctx)
		if n <= 0 || c > math.MaxInt32/n {
			return 0
		}
		c *= n
	}
	return c
}

// routeHandle returns a stack's handle as seen in ctx: entered into every
// loop frame from the top level down (as a loop constant), switched into
// every Cond branch.
func (t *tracer) routeHandle(ctx *traceCtx, st graph.Output) graph.Output {
	if ctx == nil {
		return st
	}
	inner := t.routeHandle(ctx.parent, st)
	if ctx.frame != "" {
		return t.g.Enter(inner, ctx.frame, true, ctx.parallel)
	}
	return t.branchSwitch(ctx, inner)
}

// backGate returns the node of the backward frame bctx that is live
// exactly in the iterations whose forward iteration took Cond branch fc:
// an Identity of fc's predicate, popped from its own stack, switched on
// itself.
func (t *tracer) backGate(bctx *traceCtx, fc *traceCtx) *graph.Node {
	if g, ok := bctx.gates[fc]; ok {
		return g
	}
	pred := fc.pred
	if pred.Node.Kind == graph.Enter && pred.Node.IsConstant {
		pred = pred.Node.Inputs[0] // decided outside the loop
	}
	p := t.route(bctx, pred)
	sw := t.switchOn(p, p)
	sw.Cond = int(t.conds.Add(1)) // a Cond of its own, joined by no Merge
	g := t.g.Apply(identityOp(), nil, 1, sw.Out(fc.branch))
	g.Specs = []eager.Out{spec1(p)}
	t.iter[g], t.varies[g] = true, true
	if bctx.gates == nil {
		bctx.gates = map[*traceCtx]*graph.Node{}
	}
	bctx.gates[fc] = g
	return g
}

// popped returns, for the backward frame bctx, the value v of its forward
// frame at the matching iteration: a stack made at the top level, pushed
// in the forward frame at every iteration, popped in bctx.
func (t *tracer) popped(bctx *traceCtx, v graph.Output) graph.Output {
	fwd := bctx.forward
	for v.Node.Op == identityOp() && v.Node.Kind == graph.OpNode && t.iter[v.Node.Inputs[0].Node] &&
		v.Node.Inputs[0].Node.ID >= fwd.start {
		v = v.Node.Inputs[0] // an Identity's input has its value: one stack for both
	}
	if r, ok := bctx.switched[v]; ok {
		return r
	}
	st := t.g.NewStack()
	st.Node.Capacity = stackCapacity(fwd)
	if st.Node.Capacity == 0 {
		st.Node.Depth = stackDepth(fwd, func(ctx *traceCtx) int {
			if ctx.bound > 0 {
				return ctx.bound
			}
			return ctx.trips
		})
	}
	// The handle enters every frame (and branch) around each loop: a loop
	// nested in another runs in a frame of the outer one's iteration.
	push := t.g.Push(t.routeHandle(fwd, st), v)
	push.Specs = []eager.Out{spec1(v)}
	t.iter[push] = true
	for _, next := range fwd.nexts {
		next.After = append(next.After, push)
	}
	gate := bctx.pivot
	if fc := t.branchOf[v.Node]; fc != nil && t.innerFrame(fc) == fwd {
		// Pushed only where its Cond branch was taken: popped likewise.
		// (The gate is made first, so that the graph's nodes come after
		// what they read: a gate of a Cond inside another pops its own
		// predicate under the outer one's gate.)
		gate = t.backGate(bctx, fc)
	}
	pop := t.g.Pop(t.routeHandle(bctx, st))
	pop.Control = []*graph.Node{gate}
	pop.Specs = push.Specs
	t.iter[pop], t.varies[pop] = true, true
	bctx.pops = append(bctx.pops, pop)
	bctx.switched[v] = pop.Out(0)
	return pop.Out(0)
}
