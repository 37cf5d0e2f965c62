package trace_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// hasGuard reports whether f's graph for args holds a Guard.
func hasGuard(f *trace.Function, args ...T) bool {
	g := f.Graph(args...)
	return g != nil && strings.Contains(g.String(), "Guard(")
}

// A traced function that reads a varying value on the host (Item, Float,
// ToSlice, HostBytes) and decides on it in Go returns what it computes on every
// call: the graph guards the value read, a call where it differs runs
// the function eagerly (Logf told once, naming where it was read), the
// same values run the graph. The trace froze such a decision, silently,
// before.
func TestHostReadsOfVaryingValuesAreGuarded(t *testing.T) {
	eagerCalls := 0
	sign := func(a []T) []T {
		eagerCalls++
		if ops.Sum(a[0]).Float() > 0 {
			return []T{ops.Neg(a[0])}
		}
		return []T{a[0]}
	}
	countPositive := func(a []T) []T {
		eagerCalls++
		k := 0
		for _, v := range tensor.ToSlice[float32](a[0]) {
			if v > 0 {
				k++
			}
		}
		return []T{ops.Mul(a[0], ops.ScalarLike(a[0], float64(k)))}
	}
	countPositiveBytes := func(a []T) []T { // as a codec reading raw bytes would
		eagerCalls++
		k, raw := 0, a[0].HostBytes()
		for i := 0; i < len(raw); i += 4 {
			if math.Float32frombits(binary.LittleEndian.Uint32(raw[i:])) > 0 {
				k++
			}
		}
		return []T{ops.Mul(a[0], ops.ScalarLike(a[0], float64(k)))}
	}
	for _, c := range []struct {
		name string
		fn   func([]T) []T
	}{{"Float", sign}, {"ToSlice", countPositive}, {"HostBytes", countPositiveBytes}} {
		t.Run(c.name, func(t *testing.T) {
			f := trace.NewFunction(c.fn)
			var logs []string
			f.Logf = func(format string, args ...any) { logs = append(logs, fmt.Sprintf(format, args...)) }
			var debug bytes.Buffer // EAGERFLOW_DEBUG=trace's note, the same once
			t.Setenv("EAGERFLOW_DEBUG", "trace")
			defer trace.SetDebugOut(&debug)()
			eagerCalls = 0
			for i, v := range [][]float32{{1, 2}, {-1, -2}, {1, 2}, {3, -4}, {1, 2}} {
				x := f32(v...)
				got, err := f.Call(x)
				if err != nil {
					t.Fatal(err)
				}
				want := c.fn([]T{x})
				eagerCalls--
				if fmt.Sprint(got[0]) != fmt.Sprint(want[0]) {
					t.Errorf("call %d on %v: %v, fn gives %v", i, v, got[0], want[0])
				}
			}
			// The trace, then two calls whose values differ run fn.
			if eagerCalls != 3 || f.Traces() != 1 {
				t.Errorf("fn ran %d times in 5 calls, %d traces; want 3 (the trace and the two calls whose value differs) and 1", eagerCalls, f.Traces())
			}
			if len(logs) != 1 || !strings.Contains(logs[0], "read on the host (Item, Float, ToSlice or HostBytes) at trace/host_read_test.go:") ||
				!strings.Contains(logs[0], "differs from its value at the trace") {
				t.Errorf("Logf was told %q; want once, naming the read", logs)
			}
			if len(logs) == 1 && debug.String() != logs[0]+"\n" {
				t.Errorf("EAGERFLOW_DEBUG=trace printed %q; want Logf's note", debug.String())
			}
			if !hasGuard(f, f32(1, 2)) {
				t.Error("the graph has no Guard")
			}
		})
	}
}

// Where the guards fail call after call (a value read on the host that
// every call changes), the calls stop trying the graph first after
// guardGiveUp of them, trying it again every guardRetry calls, and still
// return what fn computes.
func TestGuardsThatAlwaysFailStopTryingTheGraph(t *testing.T) {
	f := trace.NewFunction(func(a []T) []T {
		return []T{ops.Mul(a[0], ops.ScalarLike(a[0], ops.Sum(a[0]).Float()))}
	})
	for i := range 40 {
		x := f32(float32(i), 1)
		got, err := f.Call(x)
		if err != nil {
			t.Fatal(err)
		}
		if want := float32(i) * float32(i+1); tensor.ToSlice[float32](got[0])[0] != want {
			t.Fatalf("call %d: %v, want %v first", i, got[0], want)
		}
	}
	// The trace, then 4 tries, then one in 16 of the 35 calls left.
	if runs := f.GraphRuns(f32(0, 1)); runs != 4+2 {
		t.Errorf("the graph ran %d times in 39 calls after the trace, want 6", runs)
	}
}

// Reads that decide nothing the graph does not compute keep the graph
// unguarded: a kernel's read of its inputs (Gather's indices), a value
// printed, a captured constant or a value of none of the arguments.
// A read through the library (nn.Accuracy) is the function's and guards.
func TestHostReadsThatNeedNoGuard(t *testing.T) {
	table := f32(10, 20, 30)
	w := tape.NewVariable("w", f32(1, 2))
	for _, c := range []struct {
		name  string
		fn    func([]T) []T
		guard bool
	}{
		{"Gather's kernel reads its indices", func(a []T) []T { return []T{ops.Gather(table, ops.Cast(a[0], tensor.Int32), 0)} }, false},
		{"a printed value", func(a []T) []T { _ = fmt.Sprint(a[0]); return []T{ops.Square(a[0])} }, false},
		{"a captured constant", func(a []T) []T { return []T{ops.Mul(a[0], ops.ScalarLike(a[0], ops.Sum(table).Float()))} }, false},
		{"a variable's value", func(a []T) []T { return []T{ops.Mul(a[0], ops.ScalarLike(a[0], ops.Sum(w.Value()).Float()))} }, true},
		{"nn.Accuracy of the arguments", func(a []T) []T {
			acc := nn.Accuracy(ops.Reshape(a[0], 1, -1), tensor.FromSlice([]int32{0}, 1))
			return []T{ops.Mul(a[0], ops.ScalarLike(a[0], acc))}
		}, true},
	} {
		f := trace.NewFunction(c.fn)
		x := f32(0, 1)
		if _, err := f.Call(x); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := hasGuard(f, x); got != c.guard {
			t.Errorf("%s: the graph has a Guard: %v, want %v", c.name, got, c.guard)
		}
	}
}

// A variable assigned inside a traced function a value that varies
// between calls (computed from the arguments, or from variables alone)
// refuses it, naming why: the assignment is not an op, so the graph would
// not repeat it, and later calls would silently skip the update.
func TestTracedAssignmentsAreRefused(t *testing.T) {
	w := tape.NewVariable("w", f32(1, 2))
	for _, c := range []struct {
		name string
		fn   func([]T) []T
	}{
		{"AssignScaled of an argument", func(a []T) []T { w.AssignScaled(-0.1, a[0]); return []T{ops.Identity(w.Value())} }},
		{"Assign of a value of the variable", func(a []T) []T {
			w.Assign(ops.Mul(w.Value(), tensor.Scalar(float32(0.5))))
			return []T{ops.Add(a[0], w.Value())}
		}},
	} {
		f := trace.NewFunction(c.fn)
		err := tensor.Catch(func() { _, _ = f.Call(f32(1, 2)) })
		if err == nil || !strings.Contains(err.Error(), `the value for variable "w" is computed inside a traced function`) {
			t.Errorf("%s: %v", c.name, err)
		}
		if got := tensor.ToSlice[float32](w.Value()); got[0] != 1 || got[1] != 2 {
			t.Errorf("%s: w is %v after the refusal, want [1 2]", c.name, got)
		}
	}
	// A constant assigned to a variable the function reads, after the
	// read or before it, or to one it never reads, fails the trace (the
	// assignment ran once, on the tracing call); a variable assigned
	// between calls is read afresh.
	for _, c := range []struct {
		name string
		fn   func([]T) []T
	}{
		{"assigned after it is read", func(a []T) []T {
			y := ops.Add(a[0], w.Value())
			w.Assign(f32(0, 0))
			return []T{y}
		}},
		{"assigned before it is read", func(a []T) []T { w.Assign(f32(5, 5)); return []T{ops.Add(a[0], w.Value())} }},
		// A state reset, by fn's goroutine: later calls would skip it.
		{"assigned, never read", func(a []T) []T { w.Assign(f32(0, 0)); return []T{ops.Neg(a[0])} }},
		{"AssignAdd of a constant, never read", func(a []T) []T { w.AssignAdd(f32(1, 1)); return []T{ops.Neg(a[0])} }},
	} {
		w.Assign(f32(1, 2))
		_, err := trace.NewFunction(c.fn).Call(f32(1, 1))
		if err == nil || !strings.Contains(err.Error(), `variable "w" was assigned while the function was traced`) {
			t.Errorf("%s: %v", c.name, err)
		}
	}
	// Another goroutine's assignment while fn is traced is not fn's.
	other := tape.NewVariable("other", f32(0, 0))
	assigning, assigned := make(chan bool), make(chan bool)
	go func() {
		<-assigning
		other.Assign(f32(9, 9))
		assigned <- true
	}()
	_, err := trace.NewFunction(func(a []T) []T {
		assigning <- true
		<-assigned
		return []T{ops.Neg(a[0])}
	}).Call(f32(1, 1))
	if err != nil {
		t.Errorf("a variable assigned on another goroutine during the trace: %v", err)
	}
	f := trace.NewFunction(func(a []T) []T { return []T{ops.Add(a[0], w.Value())} })
	for _, v := range []float32{3, 7} {
		w.Assign(f32(v, v))
		got, err := f.Call(f32(1, 1))
		if err != nil || tensor.ToSlice[float32](got[0])[0] != v+1 {
			t.Errorf("w assigned %v between calls: %v, %v; want %v", v, got, err, v+1)
		}
	}
}

// Kernels read their inputs' bytes on the CPU's workers while the trace
// records on its own goroutine: those reads are not fn's, and must not
// look into the trace's tables (a concurrent map read and write, fatal,
// found by the differential suite: attention's gradient, sharded over
// the workers, inside a traced function). Under the race detector
// (scripts/test) any such read is reported.
func TestKernelsOnWorkersDoNotReadTheTrace(t *testing.T) {
	r := tensor.NewRNG(5)
	q := tensor.RandNormal(r, tensor.Float32, 4, 128, 64)
	k := tensor.RandNormal(r, tensor.Float32, 4, 128, 64)
	v := tensor.RandNormal(r, tensor.Float32, 4, 128, 64)
	f := trace.NewFunction(func(a []T) []T {
		tp := tape.New()
		tp.Watch(a...)
		y := a[0]
		for range 3 {
			y = ops.Tanh(ops.Attention(y, a[1], a[2], nil, true, 0))
		}
		return tp.Gradient(ops.Sum(y), a...)
	})
	for range 3 {
		if _, err := f.Call(q, k, v); err != nil {
			t.Fatal(err)
		}
	}
}
