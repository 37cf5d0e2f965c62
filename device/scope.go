package device

import (
	"errors"
	"sync/atomic"
)

// Placement scopes: With(d, fn) runs fn with ops placed on d. An op whose
// inputs are elsewhere copies them to d first (a recorded copy, so that
// tapes differentiate through it and traces keep it as a node, which
// partitioning cuts at), unless its inputs are all small integer or bool
// scalars (loop counters and predicates stay with their loop); tensors
// made inside fn are made on d (With sets the default device too); a
// variable's updates (tape.Variable's Assign and the optimizers) run where
// the variable lives, values made on d copied there. An op
// with no kernel on d fails, naming the scope, or, under WithSoft, runs
// where its inputs are when that device has a kernel for it, else on the
// host when it has one. Scopes nest; each ends when fn returns or panics.
//
// A scope is the whole process's while fn runs, as the default device
// is (Go has no goroutine-local state): ops that other goroutines run
// meanwhile are placed by it too.

type scope struct {
	d    Device
	soft bool
}

var placement atomic.Pointer[scope]

// With runs fn with ops placed on d (see the package's placement scopes).
// It returns an error, running nothing, when d or fn is nil; fn's panics
// pass through, the scope ended.
func With(d Device, fn func()) error { return withScope("With", d, false, fn) }

// WithSoft is With whose ops run on another device when d has no kernel
// for them: where their inputs are, or else on the host.
func WithSoft(d Device, fn func()) error { return withScope("WithSoft", d, true, fn) }

func withScope(name string, d Device, soft bool, fn func()) error {
	switch {
	case d == nil:
		return errors.New("device: " + name + ": the device is nil")
	case fn == nil:
		return errors.New("device: " + name + ": the function is nil")
	}
	prev := placement.Swap(&scope{d, soft})
	restore := SetDefault(d)
	defer func() {
		restore()
		placement.Store(prev)
	}()
	fn()
	return nil
}

// Scope returns the device of the placement scope in force (nil outside
// one) and whether it is soft.
func Scope() (d Device, soft bool) {
	if s := placement.Load(); s != nil {
		return s.d, s.soft
	}
	return nil, false
}
