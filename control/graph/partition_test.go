package graph

import (
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// markLog is what the TestMark op saw, in the order it ran.
var markLog struct {
	mu   sync.Mutex
	seen []int64
}

// markOp (TestMark) has no outputs: it logs its int64 scalar input, an
// effect other nodes order themselves after by control edges.
// markedOp (TestMarked) returns how many marks were logged when it ran.
var markOp, markedOp = func() (*eager.Op, *eager.Op) {
	mark := eager.Register(&eager.Op{Name: "TestMark", Inputs: 1, NonDifferentiable: true,
		Infer: func(c *eager.Call) []eager.Out { return nil }})
	eager.RegisterKernel(mark.Name, device.CPU, tensor.Int64, func(c *eager.Call, outs []*tensor.Tensor) {
		time.Sleep(2 * time.Millisecond) // slow: a reader not made to wait runs first
		markLog.mu.Lock()
		markLog.seen = append(markLog.seen, tensor.HostData[int64](c.Inputs[0])[0])
		markLog.mu.Unlock()
	})
	marked := eager.Register(&eager.Op{Name: "TestMarked", Inputs: 1, Ordered: true, NonDifferentiable: true,
		Infer: func(c *eager.Call) []eager.Out { return c.Out1(tensor.Int64, nil) }})
	eager.RegisterKernel(marked.Name, device.CPU, tensor.Int64, func(c *eager.Call, outs []*tensor.Tensor) {
		markLog.mu.Lock()
		tensor.HostData[int64](outs[0])[0] = int64(len(markLog.seen))
		markLog.mu.Unlock()
	})
	return mark, marked
}()

// on places op node n on d and returns it.
func on(n *Node, d device.Device) *Node {
	n.Device = d
	return n
}

// moveTo adds a ToDevice of x to d.
func (b graphBuilder) moveTo(x Output, d device.Device) Output {
	return b.Apply(opNamed(b.t, "ToDevice"), opattr.DeviceAttrs{Device: d}, 1, x).Out(0)
}

// mark adds a TestMark of x on d, kept though nothing reads it.
func (b graphBuilder) mark(x Output, d device.Device) *Node {
	m := on(b.Apply(markOp, nil, 0, b.moveTo(x, d)), d)
	m.Keep = true
	return m
}

// runMarked runs g (one executor) and its partitions with args, each
// from an empty log, and checks both give want and log marks.
func runMarked(t *testing.T, g *Graph, args []*tensor.Tensor, want, marks []int64) {
	t.Helper()
	p, err := Partition(g)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Parts) != 2 {
		t.Fatalf("%d partitions, want 2", len(p.Parts))
	}
	for _, run := range []struct {
		name string
		exec func() ([]*tensor.Tensor, error)
	}{{"one executor", func() ([]*tensor.Tensor, error) { return Execute(g, args...) }},
		{"partitioned", func() ([]*tensor.Tensor, error) { return p.Execute(args...) }}} {
		for range 3 {
			markLog.seen = nil
			out, err := run.exec()
			if err != nil {
				t.Fatalf("%s: %v", run.name, err)
			}
			if got := ints(t, out); !slices.Equal(got, want) || !slices.Equal(markLog.seen, marks) {
				t.Fatalf("%s: %v, marks %v; want %v, marks %v", run.name, got, markLog.seen, want, marks)
			}
		}
	}
}

// A node that waits, by a control edge, on a node of another device that
// has no outputs runs after it (a token crosses), at each iteration of a
// loop, and is dead with it on a branch not taken.
func TestPartitionWaitsOnNodesWithoutOutputs(t *testing.T) {
	other := device.SecondCPU()
	t.Run("straight line", func(t *testing.T) {
		b := graphBuilder{&Graph{}, t}
		x := b.Input("x")
		m := b.mark(x, other)
		seen := b.Apply(markedOp, nil, 1, x)
		seen.Control = []*Node{m}
		b.Result = []Output{seen.Out(0)}
		runMarked(t, b.Graph, []*tensor.Tensor{tensor.Scalar(int64(7))}, []int64{1}, []int64{7})
	})
	t.Run("in a loop", func(t *testing.T) {
		// for i < n: mark i on the other device; here, after it, count
		// the marks seen: at least i+1 (later iterations' marks may run
		// first). The loop's result sums by how many fewer were seen.
		b := graphBuilder{&Graph{}, t}
		n := b.Input("n")
		exits := b.while("loop", []Output{b.i64(0), b.i64(0)}, []Output{n},
			func(v, inv []Output) Output { return b.op("Lt", v[0], inv[0]) },
			func(v, inv []Output) []Output {
				m := b.mark(v[0], other)
				seen := b.Apply(markedOp, nil, 1, v[0])
				seen.Control = []*Node{m}
				next := b.op("Add", v[0], b.i64(1))
				short := b.op("Max", b.op("Sub", next, seen.Out(0)), b.op("Mul", v[0], b.i64(0)))
				return []Output{next, b.op("Add", v[1], short)}
			})
		b.Result = []Output{exits[1], exits[0]}
		runMarked(t, b.Graph, []*tensor.Tensor{tensor.Scalar(int64(4))}, []int64{0, 4}, []int64{0, 1, 2, 3})
		runMarked(t, b.Graph, []*tensor.Tensor{tensor.Scalar(int64(0))}, []int64{0, 0}, nil)
	})
	t.Run("on a branch", func(t *testing.T) {
		b := graphBuilder{&Graph{}, t}
		x, p := b.Input("x"), b.Input("pred")
		sw := b.Switch(x, p)
		m := b.mark(sw.Out(1), other)
		seen := b.Apply(markedOp, nil, 1, sw.Out(1))
		seen.Control = []*Node{m}
		merge := b.Merge(b.op("Neg", sw.Out(0)), seen.Out(0))
		b.Result = []Output{merge.Out(0)}
		runMarked(t, b.Graph, []*tensor.Tensor{tensor.Scalar(int64(5)), tensor.Scalar(true)}, []int64{1}, []int64{5})
		runMarked(t, b.Graph, []*tensor.Tensor{tensor.Scalar(int64(5)), tensor.Scalar(false)}, []int64{-5}, nil)
	})
}

// A stack pushed from two devices and popped on both is on one device:
// its other push's value crosses to it and its pops' values cross back,
// in the order the graph's ordering edges give.
func TestPartitionStackOnTwoDevices(t *testing.T) {
	other := device.SecondCPU()
	b := graphBuilder{&Graph{}, t}
	x := b.Input("x")
	s := b.NewStack()
	a := b.op("Mul", x, b.i64(2))
	far := on(b.Apply(opNamed(t, "Mul"), nil, 1, b.moveTo(x, other), b.moveTo(b.i64(3), other)), other).Out(0)
	p1 := b.Push(s, a)
	p2 := b.Push(s, far)
	p2.After = []*Node{p1}
	q1 := b.Pop(s) // far's value
	q1.After = []*Node{p2}
	q2 := b.Pop(s) // a's
	q2.After = []*Node{q1}
	// 10*q1 + q2 on the other device, q1 - q2 here.
	ten := b.moveTo(b.i64(10), other)
	sum := on(b.Apply(opNamed(t, "Add"), nil, 1,
		on(b.Apply(opNamed(t, "Mul"), nil, 1, b.moveTo(q1.Out(0), other), ten), other).Out(0),
		b.moveTo(q2.Out(0), other)), other)
	b.Result = []Output{b.moveTo(sum.Out(0), device.Host()), b.op("Sub", b.moveTo(q1.Out(0), device.Host()), q2.Out(0)), p1.Out(0)}
	placed := b.Placement()
	if placed[p2] != placed[s.Node] || placed[q1] != placed[s.Node] || placed[s.Node] != device.Host() {
		t.Errorf("the stack on %v, its second push on %v, a pop on %v: want all on the first push's device %v",
			placed[s.Node].Name(), placed[p2].Name(), placed[q1].Name(), device.Host().Name())
	}
	// x = 5: a = 10, far = 15: 10*15 + 10, 15 - 10.
	runMarked(t, b.Graph, []*tensor.Tensor{tensor.Scalar(int64(5))}, []int64{160, 5, 10}, nil)
}
