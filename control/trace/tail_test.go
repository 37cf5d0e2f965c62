package trace_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/control/graph"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// A Function's tail runs on every call's whole results (fn's indices, nil
// results in place), on the tracing call and on the graph's, and the call
// returns only the results it keeps; the tail's error is the call's.
func TestFunctionTailRunsOnEveryCall(t *testing.T) {
	f := trace.NewFunction(func(a []T) []T {
		return []T{ops.Neg(a[0]), nil, ops.Add(a[0], f32(1, 1))}
	})
	var seen [][]float32
	var failWith error
	f.Tail = &graph.Tail{Keep: 1, Run: func(out []T) error {
		if len(out) != 3 || out[1] != nil {
			t.Fatalf("the tail got %d results (the second %v)", len(out), out[1])
		}
		seen = append(seen, tensor.ToSlice[float32](out[2]))
		return failWith
	}}
	x := f32(1, 2)
	for i := range 3 {
		out, owned, err := f.CallOwned(x)
		if err != nil {
			t.Fatal(err)
		}
		if len(out) != 1 || len(owned) != 1 {
			t.Fatalf("call %d returned %d results (%d owned flags), want 1", i, len(out), len(owned))
		}
		if got := tensor.ToSlice[float32](out[0]); !slices.Equal(got, []float32{-1, -2}) {
			t.Errorf("call %d: %v", i, got)
		}
	}
	if len(seen) != 3 || !slices.Equal(seen[2], []float32{2, 3}) {
		t.Errorf("the tail saw %v, want three calls of [2 3]", seen)
	}
	if f.Traces() != 1 {
		t.Errorf("%d traces, want 1", f.Traces())
	}
	failWith = errors.New("no step")
	if _, err := f.Call(x); !errors.Is(err, failWith) {
		t.Errorf("a failing tail: the call's error is %v", err)
	}
	bad := trace.NewFunction(func(a []T) []T { return []T{a[0]} })
	bad.Tail = &graph.Tail{Keep: 2}
	if _, err := bad.Call(x); err == nil {
		t.Error("a tail keeping more results than fn returns: no error")
	}
}
