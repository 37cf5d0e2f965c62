package trace_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// condLoop has a Cond and a While on its argument's values.
func condLoop(a []T) []T {
	x := a[0]
	y := control.Cond(ops.Gt(ops.Sum(x), tensor.Scalar(float32(0))),
		func() []T { return []T{ops.Tanh(x)} }, func() []T { return []T{ops.Neg(x)} })[0]
	out := control.While(func(v []T) T { return ops.Lt(ops.Sum(ops.Abs(v[0])), tensor.Scalar(float32(8))) },
		func(v []T) []T { return []T{ops.Add(ops.Mul(v[0], tensor.Scalar(float32(1.5))), y)} }, []T{x})
	return []T{out[0], y}
}

// condLoopGraph traces condLoop alone on x and returns its graph's text.
func condLoopGraph(t *testing.T, x T) string {
	t.Helper()
	solo := trace.NewFunction(condLoop)
	if _, err := solo.Call(x); err != nil {
		t.Fatal(err)
	}
	return solo.Graph(x).String()
}

// A goroutine tracing and one recording a tape never see each other: the
// graph traced beside the tape is the graph traced alone (no gradient
// frames, no stacks), and the tape's gradients are the ones it gets alone.
func TestTraceAndTapeOnTwoGoroutinesNeverMeet(t *testing.T) {
	x := f32(0.5, -0.25)
	want := condLoopGraph(t, x)

	// The tape's computation: a loop and a cond on its own watched tensor.
	taped := func() T {
		w := f64s(1.25, -0.5)
		tp := tape.New()
		tp.Watch(w)
		h := control.While(func(v []T) T { return ops.Lt(ops.Sum(ops.Square(v[0])), tensor.Scalar(20.0)) },
			func(v []T) []T { return []T{ops.Mul(v[0], tensor.Scalar(1.5))} }, []T{w})[0]
		y := control.Cond(ops.Gt(ops.Sum(h), tensor.Scalar(0.0)),
			func() []T { return []T{ops.Square(h)} }, func() []T { return []T{h} })[0]
		return tp.Gradient(ops.Sum(y), w)[0]
	}
	wantGrad := tensor.ToSlice[float64](taped())

	var wg sync.WaitGroup
	stop, ready := make(chan struct{}), make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		// A tape records on this goroutine for the whole test, besides
		// the ones each step makes.
		long := tape.New()
		defer long.Stop()
		close(ready)
		for {
			select {
			case <-stop:
				return
			default:
			}
			if g := tensor.ToSlice[float64](taped()); fmt.Sprint(g) != fmt.Sprint(wantGrad) {
				t.Errorf("the tape beside a trace: gradient %v, alone %v", g, wantGrad)
				return
			}
		}
	}()
	<-ready
	for i := range 40 {
		f := trace.NewFunction(condLoop)
		got, err := f.Call(x)
		if err != nil {
			t.Fatal(err)
		}
		if g := f.Graph(x).String(); g != want {
			t.Fatalf("trace %d beside a tape differs from the trace alone:\n%s\nalone:\n%s", i, g, want)
		}
		again, err := f.Call(x)
		if err != nil {
			t.Fatal(err)
		}
		for k := range got {
			eq32(t, fmt.Sprintf("trace %d result %d", i, k), again[k], got[k])
		}
	}
	close(stop)
	wg.Wait()
}

// Two goroutines trace at once (there is no lock between traces); each
// graph is the one its function makes alone.
func TestConcurrentTraces(t *testing.T) {
	x := f32(0.5, -0.25)
	want := condLoopGraph(t, x)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 25 {
				f := trace.NewFunction(condLoop)
				if _, err := f.Call(x); err != nil {
					t.Error(err)
					return
				}
				if got := f.Graph(x).String(); got != want {
					t.Errorf("goroutine %d trace %d differs from the trace alone", g, i)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// Ops that fn leaves to other goroutines, on values of the trace, are in
// the graph: a later call computes them from its own arguments.
func TestFunctionRecordsOtherGoroutinesOpsOnItsValues(t *testing.T) {
	fn := func(a []T) []T {
		parts := make([]T, 4)
		var wg sync.WaitGroup
		for i := range parts {
			wg.Add(1)
			go func() {
				defer wg.Done()
				parts[i] = ops.Mul(a[0], tensor.Scalar(float32(i+1)))
			}()
		}
		wg.Wait()
		return []T{ops.Add(ops.Add(parts[0], parts[1]), ops.Add(parts[2], parts[3]))}
	}
	f := trace.NewFunction(fn)
	for _, in := range [][]float32{{1, 2}, {-3, 0.5}, {7, 8}} {
		got, err := f.Call(f32(in...))
		if err != nil {
			t.Fatal(err)
		}
		eq32(t, fmt.Sprint(in), got[0], fn([]T{f32(in...)})[0])
	}
	if f.Traces() != 1 {
		t.Errorf("%d traces", f.Traces())
	}
}
