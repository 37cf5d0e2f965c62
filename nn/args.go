package nn

import (
	"fmt"
	"reflect"

	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Nil arguments are checked at the door of the functions that take them,
// so that a missing dataset, step, model or communicator is named there
// instead of crashing later, somewhere inside.

// arg is an argument as the checks name it.
type arg struct {
	what string
	v    any
}

// isNil reports whether v is nil, or an interface holding a nil pointer,
// function, map, slice or channel.
func isNil(v any) bool {
	if v == nil {
		return true
	}
	switch r := reflect.ValueOf(v); r.Kind() {
	case reflect.Pointer, reflect.Func, reflect.Map, reflect.Slice, reflect.Chan, reflect.Interface:
		return r.IsNil()
	}
	return false
}

// nilArg returns an error naming the first of args that is nil (with
// a tensor-valued list or a variable list: its first nil element), or
// nil when none is.
func nilArg(fn string, args ...arg) error {
	for _, a := range args {
		switch v := a.v.(type) {
		case []*tape.Variable:
			for i, x := range v {
				if x == nil {
					return fmt.Errorf("nn: %s: %s[%d] is nil", fn, a.what, i)
				}
			}
			continue
		case []*tensor.Tensor:
			for i, x := range v {
				if x == nil {
					return fmt.Errorf("nn: %s: %s[%d] is nil", fn, a.what, i)
				}
			}
			continue
		}
		if isNil(a.v) {
			return fmt.Errorf("nn: %s: %s is nil", fn, a.what)
		}
	}
	return nil
}

// mustArgs is nilArg for functions that return no error: it panics with
// a *tensor.Error (ErrArity for a nil tensor, ErrAttr for anything else),
// as other programmer errors do.
func mustArgs(fn string, args ...arg) {
	for _, a := range args {
		if err := nilArg(fn, a); err != nil {
			kind := tensor.ErrAttr
			if _, ok := a.v.(*tensor.Tensor); ok {
				kind = tensor.ErrArity
			}
			panic(tensor.NewError("nn", fn, kind, nil, "", "%s is nil", a.what))
		}
	}
}

// needFeatures panics with a *tensor.Error naming the layer's kind (op)
// when x has no dimension axis (negative counts from the end) of size n,
// the features the layer was made for: the op's own error would name an
// op the caller never called (a Sequential adds the layer's name). hint
// is added to the message.
func needFeatures(op string, x *tensor.Tensor, axis, n int, what, hint string) {
	if x == nil {
		return // the op names the nil input
	}
	d := axis
	if d < 0 {
		d += x.Rank()
	}
	if d >= 0 && d < x.Rank() && x.Dim(d) == n {
		return
	}
	got := "has no such dimension"
	if d >= 0 && d < x.Rank() {
		got = fmt.Sprintf("has %d", x.Dim(d))
	}
	panic(tensor.NewError("nn", op, tensor.ErrShape, []*tensor.Tensor{x}, "",
		"the layer takes %d %s in dimension %d; the input %v %s%s", n, what, axis, x.Shape(), got, hint))
}
