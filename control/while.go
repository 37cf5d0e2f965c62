package control

import (
	"github.com/eagerflow/eagerflow/internal/plumb"
	"slices"

	"github.com/eagerflow/eagerflow/control/internal/flow"
	"github.com/eagerflow/eagerflow/internal/regions"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// WhileOptions configure While. The zero value loops without limit and
// keeps each iteration's record for the backward pass, with only the
// values its ops' gradient rules read (eager.Op.GradReads): intermediates
// no rule reads are let go after each iteration unless the body hands
// them out.
type WhileOptions struct {
	// MaxIterations stops the loop after this many iterations (0: no limit).
	// A traced loop a tape records, recorded on a GPU
	// (trace.Function.Record), keeps its gradient's stacks there: that
	// many values where it is set (as XLA needs a bound on a loop it
	// differentiates); without it, as many as the trace saw, checked
	// after every replay (a wait for the device), a call that goes deeper
	// running op by op and the next recording holding at least twice as
	// many.
	MaxIterations int
	// ParallelIterations bounds how many iterations of a traced loop the
	// executor keeps active at once (0: 10, TensorFlow's default): values
	// for a later iteration wait until the oldest active one is done.
	// Eager loops run one iteration at a time.
	ParallelIterations int
	// Checkpoint keeps only the loop values per iteration on a tape and
	// recomputes the body in the backward pass: less memory, more time.
	Checkpoint bool
	// bound is the most iterations a loop a trace made runs, known to it
	// (a Scan's steps): flow.Options.Bound.
	bound int
}

// While runs body while cond holds: vars = body(vars), starting from
// loopVars, and returns the final values (loopVars themselves when cond is
// false at once). cond returns a Bool scalar; body returns as many values
// as it is given, each with its dtype and shape. On a tape the loop is one
// region (see the package doc). Panics with a *tensor.Error on a bad
// predicate or body result, a nil cond or body, or no loop values (a loop
// needs at least one: it is how its result is passed on).
func While(cond func(vars []*tensor.Tensor) *tensor.Tensor, body func(vars []*tensor.Tensor) []*tensor.Tensor,
	loopVars []*tensor.Tensor, opts ...WhileOptions) []*tensor.Tensor {
	needFns("While", []string{"cond", "body"}, cond == nil, body == nil)
	needValues("While", "loop value", loopVars, false)
	var o WhileOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.MaxIterations < 0 {
		flow.Fail("While", tensor.ErrValue, loopVars, "negative MaxIterations %d", o.MaxIterations)
	}
	l := &flow.Loop{Name: "While", NVars: len(loopVars), Checkpoint: o.Checkpoint, Body: body, Recording: regions.Recording()}
	if t := flow.RecordingOf(loopVars...); t != nil {
		if out := t.While(cond, body, loopVars, o.flow()); out != nil {
			return out
		}
	} else if marks := flow.LiveMarks(); marks != nil {
		// The loop is traced too when its first predicate or its values
		// after the first iteration (which run eagerly first in any case)
		// turn out to be values of a trace: what the look recorded is
		// rolled back, and the trace records the loop as a frame.
		var traced []*tensor.Tensor
		l.Look = func(xs []*tensor.Tensor) bool {
			t := flow.RecordingOf(xs...)
			m, ok := marks[t]
			if t == nil || !ok || t.Unroll() {
				return false
			}
			t.RollbackTo(m)
			traced = t.While(cond, body, loopVars, o.flow())
			return true
		}
		vars := l.While(cond, loopVars, o.MaxIterations)
		if !l.Looked {
			return done(l, loopVars, vars)
		}
		if traced != nil {
			return traced
		}
		// The trace took the loop but could not make it a frame: it runs
		// eagerly, recorded op by op.
		l = &flow.Loop{Name: "While", NVars: len(loopVars), Checkpoint: o.Checkpoint, Body: body, Recording: regions.Recording()}
	}
	return done(l, loopVars, l.While(cond, loopVars, o.MaxIterations))
}

// flow is o as package flow passes it to a trace.
func (o WhileOptions) flow() flow.Options {
	return flow.Options{MaxIterations: o.MaxIterations, ParallelIterations: o.ParallelIterations, Checkpoint: o.Checkpoint, Bound: o.bound}
}

func init() {
	flow.While = func(cond func([]*tensor.Tensor) *tensor.Tensor, body func([]*tensor.Tensor) []*tensor.Tensor,
		init []*tensor.Tensor, o flow.Options) []*tensor.Tensor {
		return While(cond, body, init, WhileOptions{MaxIterations: o.MaxIterations, ParallelIterations: o.ParallelIterations, Checkpoint: o.Checkpoint, bound: o.Bound})
	}
}

// done finishes a While loop that ran eagerly from init to vars.
func done(l *flow.Loop, init, vars []*tensor.Tensor) []*tensor.Tensor {
	out := init
	if l.Trips > 0 {
		out = l.Finish(init, vars)
	}
	if t := flow.RecordingOf(out...); t != nil {
		// Predicates on variables alone decided the trip count of a loop
		// whose values are the trace's: the graph checks them at each call.
		for _, p := range l.Decided {
			t.Guard(l.Name, p)
		}
	}
	return out
}

// Fori runs body for i = lo, lo+1, ..., hi-1 (i as an Int64 scalar) over
// the loop values, starting from init (at least one): a While with a
// counter. Options are While's (MaxIterations aside).
func Fori(lo, hi int, body func(i *tensor.Tensor, vars []*tensor.Tensor) []*tensor.Tensor, init []*tensor.Tensor,
	opts ...WhileOptions) []*tensor.Tensor {
	needFns("Fori", []string{"body"}, body == nil)
	needValues("Fori", "loop value", init, false)
	nvars := len(init)
	ck := len(opts) > 0 && opts[0].Checkpoint
	l := &flow.Loop{Name: "Fori", NVars: nvars, Recording: regions.Recording(), Checkpoint: ck,
		Body: func(in []*tensor.Tensor) []*tensor.Tensor { return body(in[nvars], in[:nvars]) }}
	vars := init
	var counters []*tensor.Tensor
	for i := lo; i < hi; i++ {
		c := tensor.Scalar(int64(i))
		counters = append(counters, c)
		vars, _ = l.Step(i-lo, vars, []*tensor.Tensor{c})
	}
	if l.Trips == 0 {
		return init
	}
	return l.Finish(append(append([]*tensor.Tensor{}, init...), counters...), vars)
}

// Scan runs fn over the leading dimension of xs, threading a carry:
// carry, y_t = fn(carry, x_t) for t = 0..T-1, where x_t holds the t-th
// slices of xs (all xs share the leading size T). It returns the final
// carry and each y stacked along a new leading dimension. fn must return
// the carry with its dtypes and shapes, and y values of the same shapes at
// every step. T = 0 returns init and no ys. On a tape the scan is one
// region; the gradients of xs are gathered per step.
func Scan(fn func(carry, x []*tensor.Tensor) (newCarry, y []*tensor.Tensor), init, xs []*tensor.Tensor) (carry, ys []*tensor.Tensor) {
	needFns("Scan", []string{"fn"}, fn == nil)
	needValues("Scan", "sequence", xs, false)
	needValues("Scan", "carry value", init, true)
	steps := -1
	for i, x := range xs {
		if x.Rank() == 0 {
			flow.Fail("Scan", tensor.ErrRank, xs, "sequence %d is a scalar; it needs a leading dimension", i)
		}
		if steps >= 0 && x.Dim(0) != steps {
			flow.Fail("Scan", tensor.ErrShape, xs, "sequence %d has %d steps, sequence 0 has %d", i, x.Dim(0), steps)
		}
		steps = x.Dim(0)
	}
	if steps == 0 {
		return init, nil
	}
	if t := flow.RecordingOf(slices.Concat(init, xs)...); t != nil && !t.Unroll() {
		return t.Scan(fn, init, xs, steps)
	}
	// The steps' slices come from one Unstack outside the region, so each
	// step's gradient for xs is one slice, stacked once at the end.
	slices := make([][]*tensor.Tensor, len(xs)) // slices[k][t]
	for k, x := range xs {
		slices[k] = ops.Unstack(x, 0)
		for _, s := range slices[k] {
			if s.Autodiff() == nil {
				// The loop's own, recorded nowhere: released with a
				// releasing tape's intermediates (plumb.FlagScratch).
				plumb.Tensor.MarkScratch(s)
			}
		}
	}
	nvars := len(init)
	l := &flow.Loop{Name: "Scan", NVars: nvars, Body: func(in []*tensor.Tensor) []*tensor.Tensor {
		c, y := fn(in[:nvars], in[nvars:])
		return append(append([]*tensor.Tensor{}, c...), y...)
	}, Recording: regions.Recording()}
	vars := init
	var inputs, perStep []*tensor.Tensor
	var ny int
	for t := 0; t < steps; t++ {
		x := make([]*tensor.Tensor, len(xs))
		for k := range xs {
			x[k] = slices[k][t]
		}
		var y []*tensor.Tensor
		vars, y = l.Step(t, vars, x)
		if t == 0 {
			ny = len(y)
		} else if len(y) != ny {
			flow.Fail("Scan", tensor.ErrArity, y, "step %d returned %d outputs, step 0 returned %d", t, len(y), ny)
		}
		inputs = append(inputs, x...)
		perStep = append(perStep, y...)
	}
	out := l.Finish(append(append([]*tensor.Tensor{}, init...), inputs...), append(append([]*tensor.Tensor{}, vars...), perStep...))
	carry, perStep = out[:nvars], out[nvars:]
	ys = make([]*tensor.Tensor, ny)
	for j := range ys {
		col := make([]*tensor.Tensor, steps)
		for t := range col {
			col[t] = perStep[t*ny+j]
			if !col[t].Shape().Equal(col[0].Shape()) {
				flow.Fail("Scan", tensor.ErrShape, col[:t+1], "output %d has shape %v at step %d and %v at step 0", j, col[t].Shape(), t, col[0].Shape())
			}
		}
		ys[j] = ops.Stack(0, col...)
	}
	return carry, ys
}
