package trace_test

import (
	"errors"
	"testing"

	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// A trace with its loops unrolled (a Function with Record's first try on
// a device that records) is straight-line and unguarded for a counted
// loop, guarded for a loop whose trip count an argument decides, and
// abandoned (ErrTooLong) once its graph outgrows its bound.
func TestUnrolledTraces(t *testing.T) {
	counted := func(a []T) []T {
		return control.Fori(0, 100, func(_ T, v []T) []T { return []T{ops.Tanh(ops.Add(v[0], a[0]))} }, []T{a[0]})
	}
	decided := func(a []T) []T {
		return control.While(func(v []T) T { return ops.Lt(ops.Sum(v[0]), tensor.Scalar(float32(5))) },
			func(v []T) []T { return []T{ops.Add(v[0], a[0])} }, []T{a[0]})
	}
	x := f32(0.5, 0.25)
	straight, guarded, err := trace.TraceUnrolled(counted, []T{x}, 0)
	if err != nil || !straight || guarded {
		t.Errorf("a counted loop unrolled: straight-line %v, guarded %v, error %v; want a straight-line, unguarded graph", straight, guarded, err)
	}
	if _, guarded, err := trace.TraceUnrolled(decided, []T{x}, 0); err != nil || !guarded {
		t.Errorf("a loop an argument decides, unrolled: guarded %v, error %v; want guards", guarded, err)
	}
	if _, _, err := trace.TraceUnrolled(counted, []T{x}, 50); !errors.Is(err, trace.ErrTooLong) {
		t.Errorf("a counted loop of 100 iterations under a bound of 50 nodes: %v, want ErrTooLong", err)
	}
}
