package trace_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// A traced function that moves a value to another device with To copies
// each call's value: the move is recorded (ops.ToDevice), not captured
// as a constant of the first call (which it was: every later call
// returned the first call's result). A variable moved inside the trace
// is read at each call too.
func TestTracedToCopiesEachCall(t *testing.T) {
	other := device.SecondCPU()
	v := tape.NewVariable("v", tensor.FromSlice([]float32{1, 1}))
	f := trace.NewFunction(func(a []T) []T {
		y, err := ops.Mul(a[0], tensor.Scalar(float32(2))).To(other)
		if err != nil {
			panic(err)
		}
		w, err := v.Value().To(other)
		if err != nil {
			panic(err)
		}
		return []T{ops.Add(y, w)}
	})
	for i, c := range []struct{ in, v, want []float32 }{
		{[]float32{1, 2}, []float32{1, 1}, []float32{3, 5}},
		{[]float32{5, 6}, []float32{1, 1}, []float32{11, 13}},
		{[]float32{5, 6}, []float32{-1, 0}, []float32{9, 12}},
	} {
		v.Assign(tensor.FromSlice(c.v))
		got, err := f.Call(tensor.FromSlice(c.in))
		if err != nil {
			t.Fatal(err)
		}
		if got[0].Device() != other || !slices.Equal(tensor.ToSlice[float32](got[0]), c.want) {
			t.Errorf("call %d: %v on %s, want %v on %s", i, tensor.ToSlice[float32](got[0]), got[0].Device().Name(), c.want, other.Name())
		}
	}
	if f.Traces() != 1 {
		t.Errorf("%d traces", f.Traces())
	}
}

// A traced loop whose body alternates devices (and branches on the
// other device) computes what the eager loop computes, value and
// gradient, call after call: the copies are the loop's own op nodes,
// dead with their iteration.
func TestTracedLoopAlternatingDevices(t *testing.T) {
	other := device.SecondCPU()
	step := func(h, w T) T {
		a := ops.Tanh(ops.MatMul(h, w)) // on h's device (cpu:0)
		b, err := a.To(other)
		if err != nil {
			panic(err)
		}
		pos := ops.Gt(ops.Sum(b), tensor.FullOn(other, tensor.Float64, 0))
		c := control.Cond(pos,
			func() []T { return []T{ops.Mul(b, tensor.FullOn(other, tensor.Float64, 0.5))} },
			func() []T { return []T{ops.Neg(b)} })[0]
		back, err := c.To(h.Device())
		if err != nil {
			panic(err)
		}
		return back
	}
	run := func(a []T) []T {
		x, w := a[0], a[1]
		tp := tape.New()
		tp.Watch(w)
		h := control.Fori(0, 4, func(_ T, v []T) []T { return []T{step(v[0], w)} }, []T{x})[0]
		loss := ops.Sum(ops.Square(h))
		return []T{loss, tp.Gradient(loss, w)[0]}
	}
	f := trace.NewFunction(run)
	rng := tensor.NewRNG(5)
	for call := range 3 {
		x := tensor.RandNormal(rng, tensor.Float64, 2, 3)
		w := tensor.RandNormal(rng, tensor.Float64, 3, 3)
		got, err := f.Call(x, w)
		if err != nil {
			t.Fatal(err)
		}
		want := run([]T{x, w})
		for i := range want {
			g, e := tensor.ToSlice[float64](got[i]), tensor.ToSlice[float64](want[i])
			for k := range e {
				if d := g[k] - e[k]; d > 1e-12 || d < -1e-12 {
					t.Fatalf("call %d, result %d: traced %v, eager %v", call, i, g, e)
				}
			}
		}
	}
	if f.Traces() != 1 {
		t.Errorf("%d traces", f.Traces())
	}
}

// A collective called on a value of a function being traced fails with
// collective.ErrTraced: it would run once, at tracing, and every later
// call would return the first call's result (which it silently did).
// Outside the trace the same call works.
func TestCollectiveOnTracedValueFails(t *testing.T) {
	comm := collective.Single()
	var err error
	f := trace.NewFunction(func(a []T) []T {
		var s T
		if s, err = comm.AllReduce(ops.Mul(a[0], tensor.Scalar(float32(2))), collective.Sum); err != nil {
			return a
		}
		return []T{s}
	})
	if _, cerr := f.Call(tensor.FromSlice([]float32{1, 2})); cerr != nil {
		t.Fatal(cerr)
	}
	if !errors.Is(err, collective.ErrTraced) || !errors.Is(err, collective.ErrCollective) {
		t.Fatalf("AllReduce inside a trace: %v, want ErrTraced", err)
	}
	if _, err := comm.AllReduce(tensor.FromSlice([]float32{1, 2}), collective.Sum); err != nil {
		t.Errorf("AllReduce outside: %v", err)
	}
}
