package trace_test

import (
	"errors"
	"slices"
	"strings"
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

// A traced graph that spans devices knows where each node runs
// (graph.Placement: the copies to the other CPU and what follows them
// there, the rest on the arguments' device, a loop's primitives with
// their data), and WriteDOT draws each device's nodes as a partition
// cluster of their own colour, each holding its share of the loop's
// frame.
func TestTracedGraphPlacement(t *testing.T) {
	other := device.SecondCPU()
	f := trace.NewFunction(func(a []T) []T {
		l := control.While(func(v []T) T { return ops.Lt(v[0], a[1]) }, func(v []T) []T {
			b, err := ops.Tanh(v[1]).To(other)
			if err != nil {
				panic(err)
			}
			c, err := ops.Mul(b, b).To(device.Host())
			if err != nil {
				panic(err)
			}
			return []T{ops.Add(v[0], tensor.Scalar(int32(1))), c}
		}, []T{tensor.Scalar(int32(0)), a[0]})
		return []T{ops.Neg(l[1])}
	})
	x, n := tensor.FromSlice([]float64{0.5, -1}), tensor.Scalar(int32(3))
	if _, err := f.Call(x, n); err != nil {
		t.Fatal(err)
	}
	g := f.Graph(x, n)
	placed := g.Placement()
	on := map[string]map[string]bool{} // device -> op names
	for _, n := range g.Nodes {
		if n.Op != nil {
			if on[placed[n].Name()] == nil {
				on[placed[n].Name()] = map[string]bool{}
			}
			on[placed[n].Name()][n.Op.Name] = true
		}
	}
	host, second := device.Host().Name(), other.Name()
	for _, c := range []struct {
		dev, op string
	}{{host, "Tanh"}, {host, "Neg"}, {second, "Mul"}} {
		if !on[c.dev][c.op] {
			t.Errorf("%s is not placed on %s: %v", c.op, c.dev, on)
		}
	}
	if on[host]["Mul"] || on[second]["Tanh"] {
		t.Errorf("placement %v", on)
	}
	var dot strings.Builder
	if err := g.WriteDOT(&dot); err != nil {
		t.Fatal(err)
	}
	d := dot.String()
	for _, want := range []string{`subgraph "cluster_partition_` + host, `subgraph "cluster_partition_` + second, "fillcolor="} {
		if !strings.Contains(d, want) {
			t.Errorf("DOT lacks %s:\n%s", want, d)
		}
	}
	if strings.Count(d, `label="frame `) < 2 { // the loop's frame in both partitions
		t.Errorf("the loop's frame is not drawn in each partition:\n%s", d)
	}
	if strings.Count(d, "{") != strings.Count(d, "}") {
		t.Errorf("unbalanced braces:\n%s", d)
	}
}

// Collectives inside a traced function are nodes of its graph that
// communicate on every call (they ran once, at tracing, and every later
// call returned the first call's result): in straight-line code, in a
// loop's body, and in the gradient a tape inside the function takes.
// Point-to-point Send and Recv, which are not ops, still refuse the
// trace's values with collective.ErrTraced.
func TestTracedCollectivesRunEachCall(t *testing.T) {
	comm := collective.Single()
	f := trace.NewFunction(func(a []T) []T {
		x := a[0]
		tp := tape.New()
		tp.Watch(x)
		s := must(comm.AllReduce(ops.Mul(x, x), collective.Sum))
		g := must(comm.AllGather(s)) // [1 2]
		// A loop whose body all-reduces: three rounds of doubling.
		l := control.While(func(v []T) T { return ops.Lt(v[0], tensor.Scalar(int32(3))) },
			func(v []T) []T {
				return []T{ops.Add(v[0], tensor.Scalar(int32(1))), must(comm.AllReduce(ops.Add(v[1], v[1]), collective.Mean))}
			}, []T{tensor.Scalar(int32(0)), x})
		dx := tp.Gradient(ops.Sum(ops.Add(ops.Sum(g), ops.Sum(l[1]))), x)[0] // 2x + 8
		return []T{g, l[1], dx}
	})
	for _, in := range [][]float32{{1, 2}, {3, -1}, {0.5, 4}} {
		out, err := f.Call(tensor.FromSlice(in))
		if err != nil {
			t.Fatal(err)
		}
		for k, want := range [][]float32{{in[0] * in[0], in[1] * in[1]}, {8 * in[0], 8 * in[1]}, {2*in[0] + 8, 2*in[1] + 8}} {
			if got := tensor.ToSlice[float32](out[k]); !slices.Equal(got, want) {
				t.Errorf("input %v, result %d: %v, want %v", in, k, got, want)
			}
		}
	}
	if f.Traces() != 1 {
		t.Errorf("%d traces", f.Traces())
	}
	reduces := 0
	for _, n := range f.Graph(tensor.FromSlice([]float32{1, 2})).Nodes {
		if n.Name == "AllReduce" {
			reduces++
		}
	}
	if reduces < 3 { // forward, in the loop, and the gradient's
		t.Errorf("the graph holds %d AllReduce nodes, want 3 or more", reduces)
	}

	var err error
	g := trace.NewFunction(func(a []T) []T {
		err = comm.Send(a[0], 0, 1)
		return a
	})
	if _, cerr := g.Call(tensor.FromSlice([]float32{1, 2})); cerr != nil {
		t.Fatal(cerr)
	}
	if !errors.Is(err, collective.ErrTraced) || !errors.Is(err, collective.ErrCollective) {
		t.Fatalf("Send inside a trace: %v, want ErrTraced", err)
	}
}
