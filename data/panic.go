package data

import (
	"context"
	"fmt"
	"runtime/debug"
)

// PanicError is a panic recovered in a pipeline stage (in the user's
// function or in the library), delivered to the consumer as the Err of a
// *StageError naming the stage, instead of ending the process from the
// goroutine the stage ran on. errors.As reaches the panic's value when it
// is an error (a *tensor.Error from a shape mistake, say).
type PanicError struct {
	Value any
	Stack []byte // where it panicked
}

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v\n\n%s", e.Value, e.Stack) }

// Unwrap returns the panic's value when it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// recovered turns a recovered panic value into the stage's error (nil
// for no panic).
func recovered(stage string, r any) error {
	if r == nil {
		return nil
	}
	return &StageError{Stage: stage, Err: &PanicError{Value: r, Stack: debug.Stack()}}
}

// guard calls fn, a user function of stage, returning a panic as an
// error.
func guard[R any](stage string, fn func(context.Context, Element) (R, error), ctx context.Context, e Element) (out R, err error) {
	defer func() {
		if perr := recovered(stage, recover()); perr != nil {
			err = perr
		}
	}()
	return fn(ctx, e)
}

// withoutContext adapts a user function that takes no context.
func withoutContext[R any](fn func(Element) (R, error)) func(context.Context, Element) (R, error) {
	if fn == nil {
		return nil // guard's call then panics, which it reports
	}
	return func(_ context.Context, e Element) (R, error) { return fn(e) }
}

// userErr is the error of a user function of stage: as it is when guard
// made it a *StageError already, else wrapped in one (io.EOF and context
// errors too: from a user function they are failures, not the end).
func userErr(stage string, err error) error {
	if err == nil {
		return nil
	}
	if se, ok := err.(*StageError); ok {
		return se
	}
	return &StageError{Stage: stage, Err: err}
}

// safeNext is it.next on a goroutine the pipeline started (a prefetch or
// a parallel map's feeder): any panic from the stages above, up names the
// stage read, comes back as an error.
func safeNext(it iterator, ctx context.Context, up string) (e Element, err error) {
	defer func() {
		if perr := recovered(up, recover()); perr != nil {
			e, err = nil, perr
		}
	}()
	return it.next(ctx)
}
