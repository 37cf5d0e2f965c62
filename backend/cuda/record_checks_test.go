package cuda

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/control/graph"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// loopSecondDerivative is a loss through a While whose trip count x
// decides, its gradient and the gradient of that gradient's sum: traced,
// the loop is unrolled and each iteration's decision guarded.
func loopSecondDerivative(a []*tensor.Tensor) []*tensor.Tensor {
	x := a[0]
	outer, inner := tape.New(), tape.New()
	outer.Watch(x)
	inner.Watch(x)
	limit := ops.Mul(ops.Sum(x), ops.ScalarLike(x, 10))
	out := control.While(func(v []*tensor.Tensor) *tensor.Tensor { return ops.Lt(ops.Sum(v[0]), limit) },
		func(v []*tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{ops.Add(ops.Mul(v[0], ops.ScalarLike(x, 1.5)), ops.Square(x))}
		}, []*tensor.Tensor{x})
	y := ops.Sum(ops.Sin(out[0]))
	g := inner.Gradient(y, x)[0]
	return []*tensor.Tensor{y, g, outer.Gradient(ops.Sum(g), x)[0]}
}

// A traced function whose graph has guards (a second derivative through
// a loop the data decide, traced unrolled) is recorded with its guards
// run on the device: a call whose decisions go as at the trace replays
// one graph, and a call where one goes another way (another trip count)
// runs the function eagerly, both with the eager results; the Function's
// tail, recorded apart, is replayed only after a replay whose guards held
// and runs op by op after one where they failed, once per call either way.
func TestRecordedGuards(t *testing.T) {
	d := testGPU(t)
	awaitNoObservers(t)
	launches := graphLaunches(d)
	_, emulated := d.ctx.(*emu.Context)
	f := trace.NewFunction(loopSecondDerivative)
	f.Record = true
	var notes []string
	f.Logf = func(format string, args ...any) { notes = append(notes, fmt.Sprintf(format, args...)) }
	sink := onGPU(t, d, tensor.Zeros(tensor.Float64, 2))
	copyInto := func(out []*tensor.Tensor) error {
		return d.Copy(sink.Buffer(), 0, []int{1}, out[2].Buffer(), 0, tensor.Strides(out[2].Shape(), out[2].Layout()), []int{2}, 8)
	}
	befores, runs := 0, 0
	f.Tail = &graph.Tail{Keep: 2,
		Record: func(out []*tensor.Tensor) (func() error, error) {
			return func() error { befores++; return nil }, copyInto(out)
		},
		Run: func(out []*tensor.Tensor) error { runs++; return copyInto(out) },
	}
	type call struct {
		x              []float64
		replayed, fell bool // a replay whose guards held; one where one failed
	}
	calls := []call{
		{x: []float64{0.5, 1.5}},                 // traces: 4 iterations
		{x: []float64{0.7, 1.1}, replayed: true}, // 4 too
		{x: []float64{1.3, 2.5}, fell: true},     // 3
		{x: []float64{0.2, 0.3}, fell: true},     // 5
		{x: []float64{0.5, 1.4}, replayed: true}, // 4
	}
	for i, c := range calls {
		x := onGPU(t, d, tensor.FromSlice(c.x, 2))
		want := loopSecondDerivative([]*tensor.Tensor{x})
		before, b, r := launches(), befores, runs
		got, err := f.Call(x)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		for k, w := range want[:2] {
			g, w := tensor.ToSlice[float64](onHost(t, got[k])), tensor.ToSlice[float64](onHost(t, w))
			for j := range w {
				if math.Abs(g[j]-w[j]) > 1e-12*(1+math.Abs(w[j])) {
					t.Errorf("call %d, result %d: %v, want %v", i, k, g, w)
					break
				}
			}
		}
		if s, w := tensor.ToSlice[float64](onHost(t, sink)), tensor.ToSlice[float64](onHost(t, want[2])); math.Abs(s[0]-w[0]) > 1e-12*(1+math.Abs(w[0])) {
			t.Errorf("call %d: the tail copied %v, want %v", i, s, w)
		}
		wantBefores, wantRuns := b, r+1
		if c.replayed {
			wantBefores, wantRuns = b+1, r
		}
		if befores != wantBefores || runs != wantRuns {
			t.Errorf("call %d: the tail's host function ran %d times and its Run %d; want %d and %d", i, befores-b, runs-r, wantBefores-b, wantRuns-r)
		}
		if !emulated {
			continue
		}
		// The graph's, then the tail's where the guards held.
		if n, want := launches()-before, int(boolf(c.replayed || c.fell)+boolf(c.replayed)); n != want {
			t.Errorf("call %d: %d graph launches, want %d", i, n, want)
		}
	}
	if err := f.RecordError(onGPU(t, d, tensor.FromSlice([]float64{1, 2}, 2))); err != nil {
		t.Errorf("RecordError: %v", err)
	}
	if len(notes) != 1 || !strings.Contains(notes[0], "went another way") {
		t.Errorf("Logf heard %q, want one note that a decision went another way", notes)
	}
}

// A recorded guard that fails where an op after it finds a bad index (an
// index read on the host decides whether to gather at all: the replay
// gathers out of range, which the device reports at the read of the
// guards' flag) is the guard's failure, as unrecorded, where the run
// stops at the guard: the call runs the function eagerly. A tail without
// Run is refused for a graph with guards, and a graph with loops and
// guards is not recorded, saying why.
func TestRecordedGuardBeforeABadIndex(t *testing.T) {
	d := testGPU(t)
	awaitNoObservers(t)
	fn := func(a []*tensor.Tensor) []*tensor.Tensor {
		if a[1].Item().(int32) >= 3 {
			return []*tensor.Tensor{ops.ZerosLike(a[0])}
		}
		return []*tensor.Tensor{ops.Mul(ops.Gather(a[0], a[1], 0), a[0])}
	}
	f := trace.NewFunction(fn)
	f.Record = true
	table := onGPU(t, d, tensor.FromSlice([]float32{1, 2, 3}, 3))
	for i, c := range []struct {
		index int32
		want  []float32
	}{{1, []float32{2, 4, 6}}, {1, []float32{2, 4, 6}}, {2, []float32{3, 6, 9}}, {7, []float32{0, 0, 0}}, {0, []float32{1, 2, 3}}} {
		got, err := f.Call(table, onGPU(t, d, tensor.Scalar(c.index)))
		if err != nil {
			t.Fatalf("call %d (index %d): %v", i, c.index, err)
		}
		if g := tensor.ToSlice[float32](onHost(t, got[0])); !slices.Equal(g, c.want) {
			t.Errorf("call %d (index %d): %v, want %v", i, c.index, g, c.want)
		}
	}
	if err := f.RecordError(table, onGPU(t, d, tensor.Scalar(int32(0)))); err != nil {
		t.Errorf("RecordError: %v", err)
	}
	if err := d.Synchronize(); err != nil {
		t.Errorf("an index error outlived the call: %v", err)
	}

	x := onGPU(t, d, tensor.FromSlice([]float64{0.5, 1.5}, 2))
	h := trace.NewFunction(loopSecondDerivative)
	if _, err := h.Call(x); err != nil {
		t.Fatal(err)
	}
	if _, err := graph.RecordTail(h.Graph(x), &graph.Tail{Keep: 1, Record: func([]*tensor.Tensor) (func() error, error) { return nil, nil }}, x); !errors.Is(err, device.ErrCapture) || !strings.Contains(err.Error(), "checks decisions") {
		t.Errorf("a tail without Run after guards: %v, want ErrCapture saying the graph checks decisions", err)
	}
	loop := trace.NewFunction(func(a []*tensor.Tensor) []*tensor.Tensor {
		y := control.While(func(v []*tensor.Tensor) *tensor.Tensor { return ops.Lt(ops.Sum(v[0]), ops.ScalarLike(v[0], 10)) },
			func(v []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{ops.Add(v[0], v[0])} }, []*tensor.Tensor{a[0]})
		if a[0].Float() > 0 { // read on the host: a guard
			return y
		}
		return []*tensor.Tensor{ops.Neg(y[0])}
	})
	loop.Record = true
	s := onGPU(t, d, tensor.Scalar(float32(1)))
	for range 2 {
		out, err := loop.Call(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := onHost(t, out[0]).Float(); got != 16 {
			t.Errorf("the loop with a guard gives %g, want 16", got)
		}
	}
	if err := loop.RecordError(s); !errors.Is(err, device.ErrCapture) || !strings.Contains(err.Error(), "straight-line") {
		t.Errorf("a graph with a loop and a guard: RecordError %v, want ErrCapture saying only straight-line graphs' checks are recorded", err)
	}
}
