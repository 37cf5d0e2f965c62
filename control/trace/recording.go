package trace

import (
	"github.com/eagerflow/eagerflow/control/internal/flow"
	"github.com/eagerflow/eagerflow/tensor"
)

// Recording reports whether a trace being made records the ops on any of
// xs now: they are values of a Function's trace whose fn is running (not
// the results a finished trace handed back). Work a layer does in Go
// rather than in ops (a random draw, an assignment) would run once and
// be frozen into that trace's graph; nn's BatchNorm and Dropout ask this
// to refuse it.
func Recording(xs ...*tensor.Tensor) bool { return flow.RecordingOf(xs...) != nil }
