package tensor

import (
	"errors"
	"fmt"
	"strings"

	"github.com/eagerflow/eagerflow/internal/callsite"
)

// Sentinels for programmer errors; every *Error wraps exactly one (or,
// for a tensor no device can hold, the device's error wrapping
// device.ErrOutOfMemory), so errors.Is(err, tensor.ErrShape) tells what
// kind of mistake it was.
var (
	ErrShape  = errors.New("shape mismatch")
	ErrDType  = errors.New("dtype mismatch")
	ErrRank   = errors.New("bad rank")
	ErrAxis   = errors.New("bad axis")
	ErrArity  = errors.New("wrong number of inputs")
	ErrAttr   = errors.New("bad attribute")
	ErrDevice = errors.New("device mismatch")
	ErrIndex  = errors.New("index out of range")
	ErrValue  = errors.New("bad value")
	// ErrDropped: the tensor stands for another whose values were let go
	// (a tape keeps such stand-ins for values no gradient rule reads).
	ErrDropped = errors.New("values dropped")
	// ErrReleased: the tensor's buffer went back to its device (Release, or
	// a tape made with ReleaseIntermediates).
	ErrReleased = errors.New("buffer released")
	// ErrNoKernel: the op has no kernel for the device and dtype of its
	// inputs (the error names the devices that have one).
	ErrNoKernel = errors.New("no kernel")
	// ErrInternal: a kernel failed where it should not (a bug in
	// eagerflow); the error carries the kernel's stack.
	ErrInternal = errors.New("internal error")
	// ErrDeviceFailed: the device could not run the op (a driver call or
	// a kernel launch failed); the error carries the device's own.
	ErrDeviceFailed = errors.New("device failure")
)

// Error is the panic value of a programmer error in calling an op or a
// constructor: a shape, dtype, rank, axis, arity, attribute or device that
// does not fit. It names the op, its attributes, its inputs and the caller's
// file:line. Recover it into an error with Catch.
type Error struct {
	Pkg    string   // package prefix: "ops", "tensor", "tape"
	Op     string   // op or function name
	Kind   error    // one of the sentinels above, or a device's allocation error (wrapping device.ErrOutOfMemory)
	Detail string   // what was wrong
	Inputs []string // inputs as "float32[2 3]"
	Attrs  string   // attributes, formatted
	Caller string   // file:line of the first caller outside eagerflow
	Stack  string   // for ErrInternal: the stack where the kernel failed
}

// maxAttrs is the most of an error's attributes its message shows: a long
// list (a shape of a million dims, a padding per element) is cut there.
const maxAttrs = 240

func (e *Error) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s: %s", e.Pkg, e.Op, e.Detail)
	attrs := e.Attrs
	if len(attrs) > maxAttrs {
		attrs = fmt.Sprintf("%s... (%d bytes more)", attrs[:maxAttrs], len(attrs)-maxAttrs)
	}
	if len(e.Inputs) > 0 {
		fmt.Fprintf(&b, " (inputs %s", strings.Join(e.Inputs, ", "))
		if attrs != "" {
			fmt.Fprintf(&b, "; attrs %s", attrs)
		}
		b.WriteByte(')')
	} else if attrs != "" {
		fmt.Fprintf(&b, " (attrs %s)", attrs)
	}
	if e.Caller != "" {
		fmt.Fprintf(&b, " at %s", e.Caller)
	}
	if e.Stack != "" {
		fmt.Fprintf(&b, "\n\n%s", e.Stack)
	}
	return b.String()
}

// Unwrap returns the sentinel.
func (e *Error) Unwrap() error { return e.Kind }

// Describe returns "float32[2 3]" for a tensor, "<nil>" for nil.
func Describe(t *Tensor) string {
	if t == nil {
		return "<nil>"
	}
	return t.dtype.String() + t.shape.String()
}

// Panicf panics with an *Error built from its arguments.
//
// Deprecated: the library's own way of raising typed errors, internal
// since v0.2.0; a caller outside eagerflow panics with an *Error it
// builds (its fields are exported).
func Panicf(pkg, op string, kind error, inputs []*Tensor, attrs string, format string, args ...any) {
	panicf(pkg, op, kind, inputs, attrs, format, args...)
}

// panicf panics with an *Error built from its arguments.
func panicf(pkg, op string, kind error, inputs []*Tensor, attrs string, format string, args ...any) {
	panic(NewError(pkg, op, kind, inputs, attrs, format, args...))
}

// NewError returns an *Error for function op of package pkg, of kind
// (a sentinel above), with the inputs described and the first caller
// outside eagerflow: what eagerflow's functions panic with, for the
// functions of a package built on it to do the same.
func NewError(pkg, op string, kind error, inputs []*Tensor, attrs string, format string, args ...any) *Error {
	in := make([]string, len(inputs))
	for i, t := range inputs {
		in[i] = Describe(t)
	}
	return &Error{Pkg: pkg, Op: op, Kind: kind, Detail: fmt.Sprintf(format, args...),
		Inputs: in, Attrs: attrs, Caller: callsite.Caller()}
}

// Catch runs fn and returns the *Error it panicked with (a programmer
// error: a shape, a dtype, an axis, a nil tensor...), or nil; other panics
// pass through unchanged. It is how code that calls ops turns their
// panics into errors:
//
//	if err := tensor.Catch(func() { y = ops.MatMul(a, b) }); err != nil { ... }
func Catch(fn func()) (err error) {
	if fn == nil {
		return NewError("tensor", "Catch", ErrAttr, nil, "", "fn is nil")
	}
	defer func() {
		if r := recover(); r != nil {
			var te *Error
			if e, ok := r.(error); ok && errors.As(e, &te) {
				err = te
				return
			}
			panic(r)
		}
	}()
	fn()
	return nil
}

// Caller returns file:line of the first stack frame outside the eagerflow
// library (test files count as outside).
//
// Deprecated: an Error made by NewError carries it; it is internal since
// v0.2.0.
func Caller() string { return callsite.Caller() }
