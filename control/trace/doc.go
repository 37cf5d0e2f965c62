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
// # When tracing pays
//
// A traced call skips what every eager op pays once per call: dispatch,
// dtype and shape checks, allocation decisions, and the tape's recording
// under a gradient. It also fuses elementwise chains into one kernel and
// turns loops into frames. So tracing pays where a call is many small ops:
// the elementwise chain of BenchmarkTraceElementwiseChain1K (seven ops on
// 1000 floats) runs in 3.7 µs traced against 22 µs eagerly. It does not
// pay where the time is in a few large kernels, which are the same kernels
// either way: the Fashion-MNIST CNN's training step (batch 128, about 40
// ms, nearly all of it convolutions, GEMMs and pooling) and the MLP step
// (64x784, GEMM-bound) run at parity within the noise of the machine, as
// does the 50-step RNN loop gradient. Measured on a 2-core AMD EPYC
// (Zen 5) with go test ./bench -bench 'Trace|FashionCNN|MLPStep|RNNLoop';
// bench/README.md keeps the figures. Trace a step to run it many times on
// small tensors, to save its graph, or to run its loops as frames; do not
// expect it to speed up a step made of large convolutions.
//
// # Concurrency
//
// A trace keeps its state in the tensors it makes (tensor.Traced), as a
// tape does in the tensors it tracks: no goroutine is singled out and
// there is no lock between traces. Goroutines may trace at once, and a
// goroutine that traces and one that records a tape do not see each other.
// A Function is safe for concurrent use.
package trace
