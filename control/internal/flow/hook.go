// Package flow is what package control and package trace share: the
// engine that runs loops eagerly and on tapes, and the contract by which
// control flow on a trace's values lets the trace record it.
package flow

import (
	"sync"

	"github.com/eagerflow/eagerflow/internal/plumb"
	"github.com/eagerflow/eagerflow/tensor"
)

// Options are a loop's options (control.WhileOptions).
type Options struct {
	MaxIterations      int
	ParallelIterations int
	Checkpoint         bool
	// Bound is set by a trace on a loop whose iterations it knows to be
	// at most this many (one it made of a While with MaxIterations, a
	// counter in its condition; a Scan's steps): its frame's gradient
	// stacks hold that many (graph.Node.Capacity).
	Bound int
}

// While is control.While, which package control installs here: package
// trace runs loops through it (the rest of a traced loop's first call,
// the loop a traced Scan becomes) without importing control, which
// imports trace to forward the names that moved there.
var While func(cond func([]*tensor.Tensor) *tensor.Tensor, body func([]*tensor.Tensor) []*tensor.Tensor,
	init []*tensor.Tensor, o Options) []*tensor.Tensor

// Tracer is a trace, as control flow sees it; package trace implements it.
// A construct finds the trace its tensors belong to (TraceOf) and lets it
// record the construct.
type Tracer interface {
	// Recording reports whether the trace records ops now (not while it
	// is paused or once it has failed or ended).
	Recording() bool
	// Unroll reports whether the trace records loops iteration by
	// iteration instead of as frames.
	Unroll() bool
	// Derived reports whether x's value may differ between calls.
	Derived(x *tensor.Tensor) bool
	// Cond records a cond of the two branches (false first) on pred and
	// returns this call's values.
	Cond(pred *tensor.Tensor, branches [2]func() []*tensor.Tensor) []*tensor.Tensor
	// While records a loop and returns this call's values, or nil when the
	// loop is to run eagerly (recorded op by op).
	While(cond func([]*tensor.Tensor) *tensor.Tensor, body func([]*tensor.Tensor) []*tensor.Tensor,
		init []*tensor.Tensor, o Options) []*tensor.Tensor
	// Scan records a scan of steps steps as one loop.
	Scan(fn func(carry, x []*tensor.Tensor) ([]*tensor.Tensor, []*tensor.Tensor), init, xs []*tensor.Tensor,
		steps int) (carry, ys []*tensor.Tensor)
	// Guard records that construct decided p (a bool scalar that may
	// differ between calls) as it did now.
	Guard(construct string, p *tensor.Tensor)
	// Mark returns where the trace stands; RollbackTo drops what it
	// recorded since.
	Mark() Mark
	RollbackTo(m Mark)
	// PassThrough runs fn unrecorded: fn returns a copy of each of xs made
	// for a tape's bookkeeping, which then stands for it in the trace.
	PassThrough(xs []*tensor.Tensor, fn func() []*tensor.Tensor) []*tensor.Tensor
}

// Mark is where a trace stands: how many nodes and loop frames it has made.
type Mark struct{ Nodes, Loops int }

// Ref is what the tensors of a trace carry (tensor.Traced.Trace): Tracer
// returns the trace while it is live, and nil after.
type Ref interface{ Tracer() Tracer }

// TraceOf returns the live trace one of xs is a value of, or nil.
func TraceOf(xs ...*tensor.Tensor) Tracer {
	for _, x := range xs {
		if x == nil {
			continue
		}
		if m := x.Traced(); m != nil {
			if r, ok := m.Trace.(Ref); ok {
				if t := r.Tracer(); t != nil {
					return t
				}
			}
		}
	}
	return nil
}

// RecordingOf returns the trace recording now that one of xs is a value
// of, or nil.
func RecordingOf(xs ...*tensor.Tensor) Tracer {
	if t := TraceOf(xs...); t != nil && t.Recording() {
		return t
	}
	return nil
}

// FromVariables reports whether x was computed from variables alone while
// a trace was live (it carries a recipe: tensor.Traced.Recipe).
func FromVariables(x *tensor.Tensor) bool {
	m := x.Traced()
	return m != nil && m.Recipe != nil
}

// live is the set of traces fn is running for.
var live sync.Map // Tracer -> struct{}

// Started and Ended keep the set of live traces, for LiveMarks.
func Started(t Tracer) { live.Store(t, struct{}{}) }
func Ended(t Tracer)   { live.Delete(t) }

// Live returns the live traces.
func Live() []Tracer {
	var out []Tracer
	live.Range(func(k, _ any) bool {
		out = append(out, k.(Tracer))
		return true
	})
	return out
}

// LiveMarks returns where each live trace stands, or nil when none is: a
// construct that may turn out to be traced (a loop whose values become a
// trace's only in its first iteration) rolls back what it recorded while
// it looked. It reads where traces are; it decides nothing about which one
// records an op.
func LiveMarks() map[Tracer]Mark {
	var marks map[Tracer]Mark
	live.Range(func(k, _ any) bool {
		t := k.(Tracer)
		if marks == nil {
			marks = map[Tracer]Mark{}
		}
		marks[t] = t.Mark()
		return true
	})
	return marks
}

// Predicate evaluates the predicate of construct name, which must be a
// Bool scalar; a decision on a trace's value that may differ between calls
// becomes a guard of that trace.
func Predicate(name string, p *tensor.Tensor) bool {
	if p == nil || p.DType() != tensor.Bool || p.Rank() != 0 {
		Fail(name, tensor.ErrDType, []*tensor.Tensor{p}, "the predicate must be a bool scalar, got %s", tensor.Describe(p))
	}
	if t := RecordingOf(p); t != nil && t.Derived(p) {
		t.Guard(name, p)
	}
	return plumb.Tensor.Item(p).(bool) // guarded above
}

// Fail panics with a *tensor.Error of package control for construct name.
func Fail(name string, kind error, in []*tensor.Tensor, format string, args ...any) {
	panic(tensor.NewError("control", name, kind, in, "", format, args...))
}
