// Package control is eagerflow's control flow: Cond and Case choose a
// branch by a tensor's value, While loops while a predicate holds, Fori
// counts, and Scan runs a function over the leading dimension of tensors
// (the loop RNNs are written with). They take and return slices of
// tensors.
//
// # Eager
//
// Eagerly they simply run: Cond evaluates one branch, While loops in Go.
// With no tape recording they cost nothing beyond the ops they run.
//
// # On a tape: regions
//
// While a tape records, each Cond, While and Scan is recorded as one region
// (TensorFlow's design, see the README's map). A branch or an iteration runs
// on detached copies of its inputs, between two marks of the record, so its
// ops form a record of their own. The region node's inputs are the initial
// loop values and the tensors the body reads from outside (captured weights,
// watched inputs). Its backward runs the iterations in reverse, popping the
// per-iteration records (the stack), and adds each iteration's gradient for
// a captured tensor into one running sum, so loop-invariant gradients are
// accumulated as the backward loop runs. Regions nest to any depth; a Cond
// inside a loop remembers, per iteration, the branch it took. Gradients of
// gradients work through loops, since a region's backward runs ops that an
// outer tape records.
//
// WhileOptions{Checkpoint: true} keeps only the loop values per iteration
// and recomputes each iteration's body in the backward pass (the body must
// then compute the same thing twice: no hidden state, seeded randomness).
// BenchmarkWhileMemory in package bench reports both ways' memory.
//
// # Errors
//
// A predicate that is not a Bool scalar, a Case index that is not an
// integer scalar, a body that returns the wrong number of loop values or
// changes a loop value's dtype or shape: each panics with a *tensor.Error
// naming the construct, the loop value and its shape before and after.
// eager.Catch recovers them. Predicates get no gradient.
//
// # Traced
//
// Under package trace (control/trace), a Function's trace records Cond,
// Case, While and Scan on the trace's values as TensorFlow's control-flow
// graphs (package graph, control/graph). A construct finds the trace by
// the tensors it reads, never by the goroutine it runs on: the contract
// between the two packages is in control/internal/flow, with the loop
// engine both use.
//
// # Concurrency
//
// Control flow keeps its state in the call; goroutines may run loops at
// once, each with its own tape.
package control
