package control

import (
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Cond runs trueFn when pred (a Bool scalar) is true and falseFn otherwise,
// and returns what it returns. On a tape the branch that ran is recorded as
// one region. Eagerly only one branch runs, so branches that disagree on
// their outputs are only caught where the results meet (a loop's shape
// check, a traced graph). Panics with a *tensor.Error on a bad predicate.
func Cond(pred *tensor.Tensor, trueFn, falseFn func() []*tensor.Tensor) []*tensor.Tensor {
	branches := [2]func() []*tensor.Tensor{falseFn, trueFn}
	if t := tracingCond(pred); t != nil && pred.DType() == tensor.Bool && pred.Rank() == 0 {
		return t.cond(pred, branches)
	}
	marks := marksFor(pred)
	outs := branch(branches[btoi(predicate("Cond", pred))])
	if t := tracingAfter(pred, outs, marks); t != nil {
		// A predicate on variables alone, branches on a trace's values:
		// traced after all (the branch runs again, recorded).
		return t.cond(pred, branches)
	}
	return outs
}

// Case runs branches[index] (index an Int32 or Int64 scalar); an index out
// of range runs the last branch, as TensorFlow's switch_case does. Panics
// with a *tensor.Error when there are no branches or index is not an
// integer scalar.
func Case(index *tensor.Tensor, branches ...func() []*tensor.Tensor) []*tensor.Tensor {
	if len(branches) == 0 {
		fail("Case", tensor.ErrArity, nil, "needs at least one branch")
	}
	if index == nil || index.Rank() != 0 || (index.DType() != tensor.Int32 && index.DType() != tensor.Int64) {
		fail("Case", tensor.ErrDType, []*tensor.Tensor{index}, "the index must be an int32 or int64 scalar, got %s", tensor.Describe(index))
	}
	if t := tracingCond(index); t != nil && len(branches) > 1 {
		// Traced as TensorFlow's switch_case lowers: a chain of conds,
		// index == 0, index == 1, ..., the last branch taking the rest.
		pred := ops.Eq(index, ops.ScalarLike(index, 0))
		return Cond(pred, branches[0], func() []*tensor.Tensor { return Case(ops.Sub(index, ops.ScalarLike(index, 1)), branches[1:]...) })
	}
	i := int(index.Float())
	if i < 0 || i >= len(branches) {
		i = len(branches) - 1
	}
	marks := marksFor(index)
	outs := branch(branches[i])
	if len(branches) > 1 && tracingAfter(index, outs, marks) != nil {
		pred := ops.Eq(index, ops.ScalarLike(index, 0))
		return Cond(pred, branches[0], func() []*tensor.Tensor { return Case(ops.Sub(index, ops.ScalarLike(index, 1)), branches[1:]...) })
	}
	return outs
}

// branch runs fn as a region when a tape records.
func branch(fn func() []*tensor.Tensor) []*tensor.Tensor {
	if !tape.Recording() {
		return fn()
	}
	from := tape.Mark()
	outs := fn()
	to := tape.Mark()
	caps := tape.Captures(from, to, outs, nil)
	return passThrough(outs, func() []*tensor.Tensor {
		return tape.RecordRegion(caps, outs, func(dys []*tensor.Tensor) []*tensor.Tensor {
			return tape.WindowVJP(outs, dys, caps, from, to)
		})
	})
}
