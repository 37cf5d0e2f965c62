// Package trace turns a Go function over tensors into a graph (package
// graph) and runs it from that graph afterwards: NewFunction wraps the
// function; its first call with an input signature traces it (records the
// ops it runs on the trace's values while it runs eagerly), the graph is
// optimised once, and later calls with the signature run the graph. The
// Function doc lists what a trace records and what it cannot.
//
// Cond, Case, While and Scan (package control) on the trace's values
// become TensorFlow's control-flow graphs (trace_cond.go, trace_while.go);
// a While that a tape records inside the function becomes two frames, the
// backward loop popping the stacks the forward one pushes (trace_grad.go);
// what cannot be a frame is traced unrolled, its decisions kept as guards
// (trace_guard.go). NewFunctionWithSignature declares dims that vary
// between calls; the graph is then rebuilt for new sizes without tracing
// (signature.go, generalize.go).
//
// # Concurrency
//
// A trace keeps its state in the tensors it makes (tensor.Traced), as a
// tape does in the tensors it tracks: no goroutine is singled out and
// there is no lock between traces. Goroutines may trace at once, and a
// goroutine that traces and one that records a tape do not see each other.
// A Function is safe for concurrent use.
package trace
