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
// # Graphs and tracing
//
// Graph is a dataflow graph with TensorFlow's control-flow primitives
// (Switch, Merge, Enter, Exit, NextIteration) and execution frames;
// Execute runs one by the rules of "Implementation of Control Flow in
// TensorFlow": values carry a dead flag and a frame/iteration tag, Switch
// kills its untaken output, Merge forwards its live input, an op with a
// dead input emits dead outputs without running, Enter opens a child frame
// (constants are seen by every iteration), NextIteration moves to the next
// iteration, and Exit returns to the parent, held back while dead until
// the frame can do nothing more. Graphs without those primitives run as a
// straight-line plan that releases each intermediate after its last reader.
//
// NewFunction wraps a Go function over tensors: its first call with an
// input signature traces it (records its ops while it runs eagerly) into a
// Graph, optimised once (constant folding, pruning, common subexpressions,
// fusion of float32 elementwise chains); later calls run the graph. The
// Function doc lists what a trace captures and what it cannot. Cond, Case
// and While deciding on the arguments become frames; a While that a tape
// records inside the function becomes two, the backward loop popping the
// stacks the forward one pushes (trace_grad.go). NewFunctionWithSignature
// declares dims that vary between calls; the graph is then rebuilt for
// new sizes without tracing (signature.go, generalize.go). Graph.String
// and Graph.WriteDOT show what was traced.
//
// The executor (executor.go, executor_parallel.go) also runs Stack,
// StackPush and StackPop nodes (a loop gradient's saved values), holds each
// loop frame to its ParallelIterations active iterations, and runs heavy op
// nodes that are ready together on the workers of the graph's CPU device at
// once.
//
// # Concurrency
//
// Control flow keeps its state in the call; goroutines may run loops at
// once, each with its own tape, and call a Function at once (each run of
// a graph has an executor of its own). A trace keeps its state in the
// tensors it makes, as a tape does: goroutines may trace at once, and a
// goroutine that traces and one that records a tape do not see each other.
package control
