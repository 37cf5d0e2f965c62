// Package eager is the engine every op goes through: op declarations and
// dispatch, the kernel registry backends fill, and the observer hook tapes
// and traces record through. Packages ops, tape, control and the backends
// are built on it; a program that computes with tensors does not import it
// (tensor.Catch turns an op's panic into an error).
//
// An op is declared once as an *Op (in package ops): name, arity, allowed
// dtypes, an Infer function that checks attributes and shapes and returns
// the outputs' dtypes and shapes, a gradient rule, and kernels registered
// per (device kind, dtype). Run executes a declaration on concrete inputs:
//
//  1. arity, device and dtype checks; Infer validates shapes and attributes;
//  2. inputs in a non-default layout are made row-major unless the kernel
//     reads any layout;
//  3. outputs are allocated on the inputs' device (the default device for
//     ops without inputs) from the device's cache;
//  4. the kernel for (device kind, dtype) runs (for a half dtype without
//     a kernel of its own, the Float32 kernel on widened inputs, each
//     half output rounded once: half.go);
//  5. active observers (a recording tape, a tracer) are told.
//
// Nothing is written before step 3, so an op that fails leaves every tensor
// as it was.
//
// # Errors
//
// Mistakes in calling an op (a shape, dtype, rank, axis, arity, attribute or
// a device that does not fit) panic with a *tensor.Error that wraps one of
// tensor's sentinels and names the op, its attributes, the input shapes and
// the caller's file:line, in the manner of gonum/mat. tensor.Catch turns
// such a panic into an error. Allocation failures panic with an error wrapping
// device.ErrOutOfMemory.
//
// # Concurrency
//
// Run is safe for concurrent use. Observers are process-wide and must be
// safe for concurrent use too; the tape's observer keeps its state in the
// tensors themselves, so two goroutines recording at once do not share it.
package eager
