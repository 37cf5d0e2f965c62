// Package regions is the tape's interface for control flow: the
// primitives package control builds differentiable Cond, While and Scan
// from, and package control/trace builds loop gradients from. A region is
// a stretch of recorded ops between two marks of the record (a branch, one
// loop iteration) that a tape differentiates as one node whose backward
// the caller supplies.
//
// Package tape implements it and installs itself when linked in; with no
// tape in the program nothing can record, Recording and Records report
// false, and the others are never reached.
package regions

import "github.com/eagerflow/eagerflow/tensor"

// Tape is what package tape provides; see the functions of the same
// names.
type Tape interface {
	Mark() uint64
	Recording() bool
	Records(xs ...*tensor.Tensor) bool
	Force(fn func())
	Detach(x *tensor.Tensor) *tensor.Tensor
	Captures(from, to uint64, outputs, inside []*tensor.Tensor) []*tensor.Tensor
	DropUnread(from, to uint64, outputs, keep []*tensor.Tensor)
	WindowVJP(outputs, seeds, sources []*tensor.Tensor, from, to uint64, deferred []bool) ([]*tensor.Tensor, []Product)
	RecordRegion(inputs, outputs []*tensor.Tensor, backward func(dys []*tensor.Tensor) []*tensor.Tensor, release func(keep func(*tensor.Tensor) bool)) []*tensor.Tensor
	ReleaseWindow(from, to uint64, outputs []*tensor.Tensor, keep func(*tensor.Tensor) bool)
}

var impl Tape

// Install makes t the implementation; package tape calls it at init.
func Install(t Tape) { impl = t }

// Mark returns the current position in the record; ops recorded from now
// on come after it.
func Mark() uint64 { return impl.Mark() }

// Recording reports whether any tape is recording (somewhere in the
// process): whether regions need recording at all.
func Recording() bool { return impl != nil && impl.Recording() }

// Records reports whether a recording tape records the ops that read any
// of xs (a variable, a watched tensor, or one a recorded op computed).
func Records(xs ...*tensor.Tensor) bool { return impl != nil && impl.Records(xs...) }

// Force runs fn recording its ops on tracked tensors as a tape would, even
// while the tapes have paused (a checkpointed loop recomputes an iteration
// inside a backward pass to differentiate it).
func Force(fn func()) { impl.Force(fn) }

// Detach returns a tensor with x's value and no history that tapes track:
// ops on it are recorded, and their record ends at it. A branch or an
// iteration runs on detached inputs so that its record is its own.
func Detach(x *tensor.Tensor) *tensor.Tensor { return impl.Detach(x) }

// Captures returns the tensors that ops recorded in (from, to] read from
// before from: what a region captured, besides its inputs.
func Captures(from, to uint64, outputs, inside []*tensor.Tensor) []*tensor.Tensor {
	return impl.Captures(from, to, outputs, inside)
}

// DropUnread lets go the values of the ops recorded in (from, to] that no
// gradient rule of the window reads, keeping keep's.
func DropUnread(from, to uint64, outputs, keep []*tensor.Tensor) {
	impl.DropUnread(from, to, outputs, keep)
}

// WindowVJP differentiates the ops recorded in (from, to]: the gradients
// of sources given seeds for outputs.
func WindowVJP(outputs, seeds, sources []*tensor.Tensor, from, to uint64) []*tensor.Tensor {
	grads, _ := impl.WindowVJP(outputs, seeds, sources, from, to, nil)
	return grads
}

// WindowVJPProducts is WindowVJP that leaves, for each source deferred
// marks, the share of its gradient of every matrix product in the window
// that takes it as an operand (a plain rank-2 MatMul) to the caller as a
// Product, instead of computing it: a loop sums its iterations' shares
// as one product of their operands side by side (flow.Loop.Backward).
// The returned gradients hold the rest.
func WindowVJPProducts(outputs, seeds, sources []*tensor.Tensor, from, to uint64, deferred []bool) ([]*tensor.Tensor, []Product) {
	return impl.WindowVJP(outputs, seeds, sources, from, to, deferred)
}

// Product is a source's share of a window's gradient that a matrix
// product left to the caller (WindowVJPProducts): Aᵀ·DY where the source
// was the product's right operand, DY·Aᵀ where it was the left one
// (Left), A the other operand and DY the product's output gradient.
// Owned says the pass made DY and nothing else holds it: the caller
// may release it once it is used.
type Product struct {
	Source int
	A, DY  *tensor.Tensor
	Left   bool
	Owned  bool
}

// RecordRegion puts one node on the recording tapes: outputs computed from
// inputs, whose gradients backward gives from the outputs'. release, when
// not nil, is called by a tape that releases its intermediates
// (tape.Options.ReleaseIntermediates) once its pass is over: it releases
// the values the region made inside (its windows', with ReleaseWindow)
// but those keep reports (the pass's target, sources and gradients).
func RecordRegion(inputs, outputs []*tensor.Tensor, backward func(dys []*tensor.Tensor) []*tensor.Tensor, release func(keep func(*tensor.Tensor) bool)) []*tensor.Tensor {
	return impl.RecordRegion(inputs, outputs, backward, release)
}

// ReleaseWindow releases the values that the ops recorded in (from, to]
// made on the way to outputs, but those keep reports and those an op
// passed on from its inputs.
func ReleaseWindow(from, to uint64, outputs []*tensor.Tensor, keep func(*tensor.Tensor) bool) {
	impl.ReleaseWindow(from, to, outputs, keep)
}
