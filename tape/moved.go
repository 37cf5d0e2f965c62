package tape

import "github.com/eagerflow/eagerflow/tensor"

// The tape's region primitives were exported until November 2026; control
// flow now reaches them through internal/regions. They stay here,
// deprecated, for at least one minor release (CHANGELOG.md).

// Detach returns a tensor with x's value and no history that tapes track:
// ops on it are recorded, and their record ends at it.
//
// Deprecated: to stop gradients at a tensor use ops.StopGradient; regions
// are built by package control.
func Detach(x *tensor.Tensor) *tensor.Tensor {
	need("Detach", "x", x)
	return detach(x)
}

// Mark returns the current position in the record.
//
// Deprecated: a region primitive, internal since November 2026 (package
// control builds regions).
func Mark() uint64 { return mark() }

// Recording reports whether any tape is recording.
//
// Deprecated: a region primitive, internal since November 2026.
func Recording() bool { return anyRecording() }

// Captures returns the tensors the ops recorded in (from, to] read from
// outside the window.
//
// Deprecated: a region primitive, internal since November 2026.
func Captures(from, to uint64, outputs, inside []*tensor.Tensor) []*tensor.Tensor {
	return captures(from, to, outputs, inside)
}

// DropUnread lets go of the values of the window's intermediates that no
// gradient rule reads.
//
// Deprecated: a region primitive, internal since November 2026.
func DropUnread(from, to uint64, outputs, keep []*tensor.Tensor) { dropUnread(from, to, outputs, keep) }

// WindowVJP differentiates the ops recorded in (from, to].
//
// Deprecated: a region primitive, internal since November 2026.
func WindowVJP(outputs, seeds, sources []*tensor.Tensor, from, to uint64) []*tensor.Tensor {
	grads, _ := windowVJP(outputs, seeds, sources, from, to, nil)
	return grads
}

// RecordRegion records one node that produces outputs from inputs, whose
// backward is backward.
//
// Deprecated: use CustomGradient, which records a function with its own
// gradient; regions are internal since November 2026.
func RecordRegion(inputs, outputs []*tensor.Tensor, backward func(dys []*tensor.Tensor) []*tensor.Tensor) []*tensor.Tensor {
	return recordRegion(inputs, outputs, backward, nil, false)
}
