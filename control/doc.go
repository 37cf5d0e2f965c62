// Package control is control flow that tensors decide and gradients go
// through: Cond and Case choose a branch by a tensor's value, While loops
// while a predicate holds, Fori counts, and Scan runs a function over the
// leading dimension of tensors (the loop recurrent networks are written
// with). Each takes and returns slices of tensors:
//
//	// halve x until it drops below 1
//	out := control.While(
//		func(v []*tensor.Tensor) *tensor.Tensor { return ops.Ge(v[0], tensor.Scalar(1)) },
//		func(v []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{ops.Mul(v[0], tensor.Scalar(0.5))} },
//		[]*tensor.Tensor{x})
//
// # Running and differentiating
//
// Eagerly they simply run: Cond evaluates one branch, While loops in Go,
// and with no tape recording they cost nothing beyond the ops they run.
// Under a tape they are differentiable: tp.Gradient(out[0], x) goes back
// through every iteration the loop took and the branches that were taken;
// gradients of gradients work too. A loop keeps, per iteration, only the
// values its gradient needs; WhileOptions{Checkpoint: true} keeps only
// the loop values and recomputes each iteration in the backward pass
// (BenchmarkWhileMemory in package bench reports both ways' memory). The
// body must then compute the same thing twice: no hidden state, seeded
// randomness.
//
// # Traced
//
// Inside a function traced by package trace (control/trace), the same
// calls on the trace's values become TensorFlow's control-flow graphs: a
// Cond a Switch and Merge per value, a While a loop frame, and a While
// under a tape a backward frame fed by stacks. Nothing in the calling code
// changes. DESIGN.md in this directory describes how regions and frames
// are built.
//
// # Errors
//
// A predicate that is not a Bool scalar, a Case index that is not an
// integer scalar, a body that returns the wrong number of loop values or
// changes a loop value's dtype or shape: each panics with a *tensor.Error
// naming the construct, the loop value and its shape before and after.
// tensor.Catch recovers them. Predicates get no gradient.
//
// # Concurrency
//
// Control flow keeps its state in the call; goroutines may run loops at
// once, each with its own tape.
package control
