package control

import (
	"github.com/eagerflow/eagerflow/control/internal/flow"
	"github.com/eagerflow/eagerflow/tensor"
)

// The constructs check their arguments at the door: a nil function or
// tensor is named there, with a *tensor.Error, instead of crashing where
// it is first used.

// needFns fails construct when a function it was given is nil; names
// are the functions' roles, in the order of fns.
func needFns(construct string, names []string, fns ...bool) {
	for i, isNil := range fns {
		if isNil {
			flow.Fail(construct, tensor.ErrAttr, nil, "%s is nil", names[i])
		}
	}
}

// needValues fails construct when xs (its what: "loop value", "sequence")
// is empty and empty is not allowed, or holds a nil tensor.
func needValues(construct, what string, xs []*tensor.Tensor, allowEmpty bool) {
	if len(xs) == 0 && !allowEmpty {
		flow.Fail(construct, tensor.ErrArity, nil, "needs at least one %s", what)
	}
	for i, x := range xs {
		if x == nil {
			flow.Fail(construct, tensor.ErrArity, xs, "%s %d is nil", what, i)
		}
	}
}
