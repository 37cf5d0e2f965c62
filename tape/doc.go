// Package tape records ops and differentiates them (reverse mode).
//
//	tp := tape.New()
//	tp.Watch(x)
//	y := ops.Sum(ops.Tanh(ops.MatMul(x, w.Value())))
//	tp.Stop()
//	g := tp.Gradient(y, x, w.Value()) // g[0]: x's shape, g[1]: w's shape
//
// # What is recorded
//
// While at least one tape is recording, every differentiable op with a
// tracked input is recorded. An input is tracked when a tape watches it,
// when it is a Variable (all tapes watch variables), or when a recorded op
// produced it. The record lives in the tensors: each output points at the
// node that made it, and the node at its inputs. A tape is a window of that
// record (the nodes made between New and Stop) plus the tensors it watches.
//
// # Concurrency
//
// Go has no goroutine-local state, so recording is carried by the tensors
// and not by a current-tape variable: two goroutines each running their own
// tape on their own tensors build disjoint records, and each Gradient walks
// only back from its own target, so each gets exactly its own gradients.
// The cost of one goroutine's tape being active is that ops on tracked
// tensors in other goroutines are recorded too (their nodes hang off their
// own tensors and are garbage once those are). A Tape's methods may be
// called from any goroutine; a tensor may be watched from several at once.
//
// # Gradients
//
// Gradient walks the nodes in the reverse of the order they were recorded
// (never map order), sums each op's rule results into its inputs, sums a
// broadcast gradient back to its input's shape (in one place, here), and
// drops each intermediate gradient as soon as it has been used. Integer
// tensors get no gradient; StopGradient and comparisons block it. A rule is
// computed with ops, so a recording outer tape records it: nested tapes
// give second-order gradients. Persistent tapes answer many times;
// Jacobian builds full Jacobians; CustomGradient replaces the rule of a
// whole function; CheckGradient compares gradients with finite differences.
// GradientEach hands each source's gradient over as soon as it is final
// (an all-reduce overlapping the rest of the pass); GradientSplit computes
// some sources' gradients first and the others when asked, nothing twice
// (a pipeline stage's input gradient before its weights').
//
// # Errors
//
// Misuse (asking a one-shot tape twice, assigning a value of the wrong shape
// to a Variable) panics with a *tensor.Error, as ops do.
package tape
