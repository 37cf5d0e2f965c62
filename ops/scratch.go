package ops

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/plumb"
	"github.com/eagerflow/eagerflow/tensor"
)

// Temporaries that library code makes and hands to nobody go back to
// their device's cache when their work is done, not when the garbage
// collector finds them: left to it, a training step's worth of them each
// step made the heap grow between collections and every step take fresh
// memory (nn's TestTrainStepLeavesNothingToTheCollector holds steps to
// it).

// temps collects a gradient rule's intermediates, to release (releaseTemp)
// once the rule has its results: keep(x) records x and returns it.
type temps []*tensor.Tensor

func (ts *temps) keep(x *tensor.Tensor) *tensor.Tensor {
	*ts = append(*ts, x)
	return x
}

// keepAll keeps each of xs (an op's several outputs).
func (ts *temps) keepAll(xs ...*tensor.Tensor) { *ts = append(*ts, xs...) }

// release releases what keep recorded (a pointer receiver: deferred at
// the rule's start, it sees what the rule kept after).
func (ts *temps) release() {
	for _, t := range *ts {
		releaseTemp(t)
	}
}

// releaseTemp releases t, made by a gradient rule and read by nothing
// any more, unless some tape or trace is observing ops (one may have
// recorded t: a second-order gradient reads it).
func releaseTemp(t *tensor.Tensor) {
	if !eager.Observing() {
		t.Release()
	}
}

// releaseUntraced releases t, made by an op no tape differentiates (an
// ArgSort's permutation) and handed to nobody, unless a trace records it:
// a tape holds only what it recorded, and an op that read t holds its own
// hold on t's buffer (a view of it that the caller keeps, too).
func releaseUntraced(t *tensor.Tensor) {
	if t.Traced() == nil {
		t.Release()
	}
}

// scratch marks t, made here for a recorded op to read and returned to
// nobody, so that a tape releasing its intermediates releases it with
// them (plumb.FlagScratch), and returns it. A trace's values are left
// alone.
func scratch(t *tensor.Tensor) *tensor.Tensor {
	return plumb.Tensor.MarkScratch(t).(*tensor.Tensor)
}

// scaled returns c·x, releasing the scalar it makes for c.
func scaled(x *tensor.Tensor, c float64) *tensor.Tensor {
	k := ScalarLike(x, c)
	y := Mul(k, x)
	releaseTemp(k)
	return y
}
