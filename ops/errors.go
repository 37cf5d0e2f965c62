package ops

import (
	"errors"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/plumb"
	"github.com/eagerflow/eagerflow/tensor"
)

// fail panics with a *tensor.Error for op, the function the user called.
func fail(op string, kind error, in []*tensor.Tensor, format string, args ...any) {
	panic(tensor.NewError("ops", op, kind, in, "", format, args...))
}

// needInputs fails op when one of its tensor arguments xs is nil, before
// anything reads it (dispatch checks an op's inputs likewise; composites
// and public functions that read their inputs first call this).
func needInputs(op string, xs ...*tensor.Tensor) {
	for i, x := range xs {
		if x == nil {
			fail(op, tensor.ErrArity, xs, "input %d is nil (%s)", i, plumb.NilHint)
		}
	}
}

// needFunc fails op when its function argument called name is nil.
func needFunc(op, name string, isNil bool) {
	if isNil {
		fail(op, tensor.ErrAttr, nil, "%s is nil", name)
	}
}

// asOp is deferred by the ops composed of other ops (Stack of ExpandDims
// and Concatenate, Sum of Reduce...): a *tensor.Error raised by an op they
// call is raised again under the composite's name, the inner op named in
// its detail, so that the error names the function the user called. The
// composites check what they can themselves first; asOp is the net for
// what only an inner op finds. Other panics pass unchanged.
//
// It must be deferred directly (defer asOp("Stack")): recover works only
// there.
func asOp(name string) {
	r := recover()
	if r == nil {
		return
	}
	err, ok := r.(error)
	var te *tensor.Error
	if !ok || !errors.As(err, &te) || te.Op == name || te.Kind == tensor.ErrInternal {
		panic(r)
	}
	outer := *te
	outer.Pkg, outer.Op = "ops", name
	outer.Detail = te.Op + ": " + te.Detail
	panic(&outer)
}

// rankOf is x's rank, 0 for nil (for the public functions that normalise
// attributes before dispatch, which reports a nil input).
func rankOf(x *tensor.Tensor) int {
	if x == nil {
		return 0
	}
	return x.Rank()
}

// shapeOf is a copy of x's shape, nil for nil.
func shapeOf(x *tensor.Tensor) tensor.Shape {
	if x == nil {
		return nil
	}
	return x.Shape().Clone()
}

// axisOf returns axis counted from the front of a rank-r operand when it
// counts from the end and is in range, else axis itself (the shape rule
// then reports it): the public functions normalise attributes, shape rules
// only check them.
func axisOf(axis, r int) int {
	if axis < 0 && axis >= -r {
		return axis + r
	}
	return axis
}

// checkAxis fails the call unless axis is in [0, rank).
func checkAxis(c *eager.Call, axis, rank int) int {
	if axis < 0 || axis >= rank {
		c.Fail(tensor.ErrAxis, "axis %d is out of range for rank %d", axis, rank)
	}
	return axis
}
