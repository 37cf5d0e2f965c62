package control

import (
	"github.com/eagerflow/eagerflow/control/internal/flow"
	"github.com/eagerflow/eagerflow/internal/regions"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Cond runs trueFn when pred (a Bool scalar) is true and falseFn otherwise,
// and returns what it returns. On a tape the branch that ran is recorded as
// one region. Eagerly only one branch runs, so branches that disagree on
// their outputs are only caught where the results meet (a loop's shape
// check, a traced graph). Panics with a *tensor.Error on a bad predicate.
func Cond(pred *tensor.Tensor, trueFn, falseFn func() []*tensor.Tensor) []*tensor.Tensor {
	needFns("Cond", []string{"trueFn", "falseFn"}, trueFn == nil, falseFn == nil)
	branches := [2]func() []*tensor.Tensor{falseFn, trueFn}
	if t := tracingCond(pred); t != nil && pred.DType() == tensor.Bool && pred.Rank() == 0 {
		return t.Cond(pred, branches)
	}
	marks := marksFor(pred)
	taken := 0
	if flow.Predicate("Cond", pred) {
		taken = 1
	}
	outs := branch(branches[taken])
	if t := tracingAfter(outs, marks); t != nil {
		// A predicate on variables alone, branches on a trace's values:
		// traced after all (the branch runs again, recorded).
		return t.Cond(pred, branches)
	}
	return outs
}

// tracingCond returns the recording trace when pred is a value of it that
// varies between calls (so Cond must be traced, not decided). A trace
// that unrolls its loops (a loop's gradient differentiated again) decides
// a Cond as it does a loop's iterations, its predicate guarded: a traced
// Cond's second derivative would read its branches' values outside them.
func tracingCond(pred *tensor.Tensor) flow.Tracer {
	if t := flow.RecordingOf(pred); t != nil && t.Derived(pred) && !t.Unroll() {
		return t
	}
	return nil
}

// marksFor returns where the live traces stand when a construct decides on
// pred computed from variables alone (for tracingAfter), else nil.
func marksFor(pred *tensor.Tensor) map[flow.Tracer]flow.Mark {
	if pred == nil || !flow.FromVariables(pred) {
		return nil
	}
	return flow.LiveMarks()
}

// tracingAfter returns the recording trace when a construct decided on a
// predicate computed from variables alone (no trace's value; marks from
// marksFor) and its results outs are values of that trace: the decision
// is the trace's to make at every call, so the construct must be traced
// after all. What the construct recorded on its way is rolled back.
func tracingAfter(outs []*tensor.Tensor, marks map[flow.Tracer]flow.Mark) flow.Tracer {
	t := flow.RecordingOf(outs...)
	m, ok := marks[t]
	if t == nil || !ok {
		return nil
	}
	t.RollbackTo(m)
	return t
}

// Case runs branches[index] (index an Int32 or Int64 scalar); an index out
// of range runs the last branch, as TensorFlow's switch_case does. Panics
// with a *tensor.Error when there are no branches or index is not an
// integer scalar.
func Case(index *tensor.Tensor, branches ...func() []*tensor.Tensor) []*tensor.Tensor {
	if len(branches) == 0 {
		flow.Fail("Case", tensor.ErrArity, nil, "needs at least one branch")
	}
	for i, b := range branches {
		if b == nil {
			flow.Fail("Case", tensor.ErrAttr, nil, "branch %d is nil", i)
		}
	}
	if index == nil || index.Rank() != 0 || (index.DType() != tensor.Int32 && index.DType() != tensor.Int64) {
		flow.Fail("Case", tensor.ErrDType, []*tensor.Tensor{index}, "the index must be an int32 or int64 scalar, got %s", tensor.Describe(index))
	}
	if t := flow.RecordingOf(index); t != nil && t.Derived(index) && len(branches) > 1 {
		// Traced as TensorFlow's switch_case lowers: a chain of conds,
		// index == 0, index == 1, ..., the last branch taking the rest
		// (each Cond traced, or decided with a guard where the trace
		// unrolls: tracingCond).
		pred := ops.Eq(index, ops.ScalarLike(index, 0))
		return Cond(pred, branches[0], func() []*tensor.Tensor { return Case(ops.Sub(index, ops.ScalarLike(index, 1)), branches[1:]...) })
	}
	i := 0 // a last branch takes every index, unread
	if len(branches) > 1 {
		i = int(index.Float())
	}
	if i < 0 || i >= len(branches) {
		i = len(branches) - 1
	}
	marks := marksFor(index)
	outs := branch(branches[i])
	if len(branches) > 1 && tracingAfter(outs, marks) != nil {
		pred := ops.Eq(index, ops.ScalarLike(index, 0))
		return Cond(pred, branches[0], func() []*tensor.Tensor { return Case(ops.Sub(index, ops.ScalarLike(index, 1)), branches[1:]...) })
	}
	return outs
}

// branch runs fn as a region when a tape records.
func branch(fn func() []*tensor.Tensor) []*tensor.Tensor {
	if !regions.Recording() {
		return fn()
	}
	from := regions.Mark()
	outs := fn()
	to := regions.Mark()
	caps := regions.Captures(from, to, outs, nil)
	return flow.PassThrough(outs, func() []*tensor.Tensor {
		return regions.RecordRegion(caps, outs, func(dys []*tensor.Tensor) []*tensor.Tensor {
			return regions.WindowVJP(outs, dys, caps, from, to)
		}, func(keep func(*tensor.Tensor) bool) { regions.ReleaseWindow(from, to, outs, keep) })
	})
}
