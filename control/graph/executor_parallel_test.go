package graph

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// A loop whose counter runs ahead of a slow chain of ops on the other
// loop value: ParallelIterations bounds how many iterations are active at
// once, and the result does not depend on the bound.
func TestParallelIterations(t *testing.T) {
	for _, p := range []int{1, 2, 3, 10} {
		b := graphBuilder{&Graph{}, t}
		n := b.Input("n")
		out := b.whileP("loop", p, []Output{b.i64(0), b.i64(0)}, []Output{n},
			func(v, inv []Output) Output { return b.op("Lt", v[0], inv[0]) },
			func(v, inv []Output) []Output {
				acc := v[1]
				for range 6 { // the slow chain: acc*1 + i, six times over
					acc = b.op("Add", b.op("Mul", acc, b.i64(1)), v[0])
				}
				return []Output{b.op("Add", v[0], b.i64(1)), acc}
			})
		b.Result = []Output{out[1]}
		res, st, err := execute(b.Graph, ExecOptions{}, []*tensor.Tensor{tensor.Scalar(int64(25))})
		if err != nil {
			t.Fatal(err)
		}
		if got := res[0].Item().(int64); got != 6*300 {
			t.Errorf("parallel %d: %d, want %d", p, got, 6*300)
		}
		if st.active > p || (p > 1 && st.active < 2) {
			t.Errorf("parallel %d: %d iterations active at once", p, st.active)
		}
	}
}

// concurrencyProbe is an identity op that sleeps and records how many of
// its kernels ran at once. It sleeps until a second probe runs beside it or
// probeWait passes: long where two are expected (a loaded machine may be
// slow to start the second), short where one is.
var probeRunning, probePeak atomic.Int32

var probeWait = func() *atomic.Int64 { // nanoseconds
	var w atomic.Int64
	w.Store(int64(20 * time.Millisecond))
	return &w
}()

var concurrencyProbe = func() *eager.Op {
	op := eager.Register(&eager.Op{Name: "TestConcurrencyProbe", Inputs: 1, NonDifferentiable: true,
		Infer: func(c *eager.Call) []eager.Out { return c.Out1(c.Inputs[0].DType(), c.Inputs[0].Shape()) }})
	eager.RegisterKernel(op.Name, device.CPU, tensor.Int64, func(c *eager.Call, outs []*tensor.Tensor) {
		now := probeRunning.Add(1)
		for {
			peak := probePeak.Load()
			if now <= peak || probePeak.CompareAndSwap(peak, now) {
				break
			}
		}
		for start := time.Now(); probeRunning.Load() < 2 && time.Since(start) < time.Duration(probeWait.Load()); {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(5 * time.Millisecond) // the second, if any, sees this one
		copy(tensor.HostData[int64](outs[0]), tensor.HostData[int64](c.Inputs[0]))
		probeRunning.Add(-1)
	})
	return op
}()

// Independent op nodes ready together run at once on the device's
// workers; a panicking op's error reaches the caller.
func TestIndependentOpsRunConcurrently(t *testing.T) {
	if device.Host().Workers() < 2 {
		t.Skip("the CPU device has no workers (GOMAXPROCS=1)")
	}
	b, sw := probeGraph(t, nil)
	if peak := runProbes(t, b, 2); peak != 2 {
		t.Errorf("%d probes ran at once, want 2", peak)
	}
	var err error
	// An op that fails on a worker (a probe runs beside it) fails the
	// call with the op's error, as eagerly.
	bad := b.op("Add", sw.Out(1), b.Constant(tensor.FromSlice([]int64{1, 2, 3})))
	b.Result = []Output{b.op("Add", b.Apply(concurrencyProbe, nil, 1, sw.Out(1)).Out(0), bad)}
	err = tensor.Catch(func() { _, err = Execute(b.Graph, tensor.FromSlice([]int64{1, 2}), tensor.Scalar(true)) })
	if err == nil || !strings.Contains(err.Error(), "Add: shapes [2] and [3] are not broadcastable") {
		t.Errorf("a failing op in a concurrent batch: %v", err)
	}
}

// queuedDevice stands for a device that orders its kernels itself (a GPU
// stream): not a *device.CPUDevice, so a graph on it runs its ready ops
// one at a time on the caller's goroutine.
type queuedDevice struct{ *device.CPUDevice }

// The executor's concurrency follows the graph's device: independent ops
// run at once on a CPU device's workers only.
func TestConcurrencyFollowsTheGraphsDevice(t *testing.T) {
	if device.Host().Workers() < 2 {
		t.Skip("the CPU device has no workers (GOMAXPROCS=1)")
	}
	for _, c := range []struct {
		dev  device.Device
		peak int32
	}{{device.SecondCPU(), 2}, {queuedDevice{device.Host()}, 1}} {
		b, _ := probeGraph(t, c.dev)
		if peak := runProbes(t, b, c.peak); peak != c.peak {
			t.Errorf("%s: %d probes ran at once, want %d", c.dev.Name(), peak, c.peak)
		}
	}
}

// probeGraph builds, on dev, a graph of two probes ready together
// (behind a Switch: a frame-free graph still takes the executor) whose
// results are added; it returns the Switch too.
func probeGraph(t *testing.T, dev device.Device) (graphBuilder, *Node) {
	b := graphBuilder{&Graph{Device: dev}, t}
	x, p := b.Input("x"), b.Input("p")
	sw := b.Switch(x, p)
	l := b.Apply(concurrencyProbe, nil, 1, sw.Out(1)).Out(0)
	r := b.Apply(concurrencyProbe, nil, 1, sw.Out(1)).Out(0)
	b.Result = []Output{b.op("Add", l, r)}
	return b, sw
}

// runProbes runs a probeGraph, where want probes should run at once, and
// returns how many did.
func runProbes(t *testing.T, b graphBuilder, want int32) int32 {
	t.Helper()
	probePeak.Store(0)
	wait := 20 * time.Millisecond
	if want > 1 {
		wait = 5 * time.Second
	}
	probeWait.Store(int64(wait))
	defer probeWait.Store(int64(20 * time.Millisecond))
	res, err := Execute(b.Graph, tensor.Scalar(int64(21)), tensor.Scalar(true))
	if err != nil || res[0].Item().(int64) != 42 {
		t.Fatalf("%v %v", res, err)
	}
	return probePeak.Load()
}
