package trace_test

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/control/graph"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

func f32(xs ...float32) T { return tensor.FromSlice(xs) }

// chain is the elementwise chain of the tracing benchmark, with a captured
// (non-argument) tensor and a discarded intermediate that must be pruned.
func chain(args []T) []T {
	x, bias := args[0], tensor.Scalar(float32(0.5))
	_ = ops.Exp(x) // computed and thrown away
	for range 3 {
		x = ops.Tanh(ops.Add(ops.Mul(x, tensor.Scalar(float32(1.01))), bias))
	}
	return []T{ops.Mul(x, tensor.Scalar(float32(1.01))), ops.Sum(x)}
}

func TestFunctionTracesOnceAndMatchesEager(t *testing.T) {
	f := trace.NewFunction(chain)
	for call, in := range [][]float32{{1, -2, 3}, {0.25, 4, -1}, {7, 8, 9}} {
		x := f32(in...)
		got, err := f.Call(x)
		if err != nil {
			t.Fatal(err)
		}
		want := chain([]T{x})
		for i := range want {
			if !slices.Equal(tensor.ToSlice[float32](got[i]), tensor.ToSlice[float32](want[i])) {
				t.Errorf("call %d result %d: traced %v, eager %v", call, i, got[i], want[i])
			}
		}
	}
	if f.Traces() != 1 {
		t.Errorf("%d traces for one signature", f.Traces())
	}
	g := f.Graph(f32(0, 0, 0))
	for _, n := range g.Nodes {
		if n.Name == "Exp" {
			t.Errorf("the discarded Exp was not pruned: %v", g.Nodes)
		}
	}
	// A new shape retraces; the old graph stays.
	if _, err := f.Call(f32(1, 2)); err != nil || f.Traces() != 2 {
		t.Errorf("new shape: %v, %d traces", err, f.Traces())
	}
	if _, err := f.Call(f32(1, 2, 3)); err != nil || f.Traces() != 2 {
		t.Errorf("old shape again: %v, %d traces", err, f.Traces())
	}
}

func TestFunctionWarnsOnceWhenItRetracesOften(t *testing.T) {
	var warnings []string
	f := trace.NewFunction(chain)
	f.Logf = func(format string, args ...any) { warnings = append(warnings, fmt.Sprintf(format, args...)) }
	for n := 1; n <= trace.RetraceWarning+3; n++ {
		if _, err := f.Call(tensor.Zeros(tensor.Float32, n)); err != nil {
			t.Fatal(err)
		}
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "traced 6 times") {
		t.Errorf("warnings %q, want one at the sixth trace", warnings)
	}
}

func TestFunctionReadsVariablesByReference(t *testing.T) {
	w := tape.NewVariable("w", f32(2, 3))
	f := trace.NewFunction(func(a []T) []T { return []T{ops.Mul(a[0], w.Value())} })
	x := f32(1, 1)
	if _, err := f.Call(x); err != nil {
		t.Fatal(err)
	}
	w.Assign(f32(10, 20))
	got, err := f.Call(x)
	if err != nil || !slices.Equal(tensor.ToSlice[float32](got[0]), []float32{10, 20}) {
		t.Errorf("after Assign: %v %v, want [10 20]", got, err)
	}
}

// Values computed from variables alone (a weight penalty, a predicate on a
// variable) are read afresh by every call, not folded into constants.
func TestFunctionRecomputesWhatDependsOnVariablesOnly(t *testing.T) {
	w := tape.NewVariable("w", f32(1, 2))
	fn := func(a []T) []T {
		penalty := ops.Sum(ops.Square(w.Value()))
		big := ops.Gt(ops.Amax(w.Value()), tensor.Scalar(float32(3)))
		picked := control.Cond(big, func() []T { return []T{ops.Neg(a[0])} }, func() []T { return []T{a[0]} })
		return []T{ops.Add(a[0], penalty), picked[0]}
	}
	f := trace.NewFunction(fn)
	x := f32(0.5)
	for _, v := range [][]float32{{1, 2}, {3, 4}, {-1, 0}} {
		w.Assign(f32(v...))
		got, err := f.Call(x)
		if err != nil {
			t.Fatal(err)
		}
		want := fn([]T{x})
		for i := range want {
			eq32(t, fmt.Sprintf("w = %v, result %d", v, i), got[i], want[i])
		}
	}
}

// A value computed from a variable before the trace is a tensor the trace
// captures, by value, like any other; one computed inside fn follows the
// variable.
func TestFunctionCapturesValuesComputedBeforeItByValue(t *testing.T) {
	w := tape.NewVariable("w", f32(1, 2))
	before := ops.Sum(w.Value())
	fn := func(a []T) []T { return []T{ops.Add(a[0], before), ops.Add(a[0], ops.Sum(w.Value()))} }
	f := trace.NewFunction(fn)
	x := f32(0.5)
	if _, err := f.Call(x); err != nil {
		t.Fatal(err)
	}
	w.Assign(f32(10, 20))
	got, err := f.Call(x)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := got[0].Float(), got[1].Float(); a != 3.5 || b != 30.5 {
		t.Errorf("after Assign: %v and %v, want 3.5 (captured) and 30.5 (read afresh)", a, b)
	}
}

// loss is a training step's forward and backward, traced as one graph.
func gradStep(w *tape.Variable) func(a []T) []T {
	return func(a []T) []T {
		tp := tape.New()
		y := ops.Sum(ops.Tanh(ops.Mul(a[0], w.Value())))
		return []T{y, tp.Gradient(y, w.Value())[0]}
	}
}

func TestFunctionTracesATapeIntoAGradientGraph(t *testing.T) {
	w := tape.NewVariable("w", f32(0.5, -1, 2))
	step := gradStep(w)
	f := trace.NewFunction(step)
	for _, in := range [][]float32{{1, 2, 3}, {-0.5, 0.1, 0.7}} {
		x := f32(in...)
		got, err := f.Call(x)
		if err != nil {
			t.Fatal(err)
		}
		want := step([]T{x})
		for i := range want {
			if !slices.Equal(tensor.ToSlice[float32](got[i]), tensor.ToSlice[float32](want[i])) {
				t.Errorf("%v result %d: traced %v, eager %v", in, i, got[i], want[i])
			}
		}
	}
}

func TestTapeAroundATracedCall(t *testing.T) {
	f := trace.NewFunction(chain)
	x := f32(0.3, -0.2, 0.9)
	for call := range 2 { // the tracing call, then a graph call
		tp := tape.New()
		tp.Watch(x)
		got, err := f.Call(x)
		if err != nil {
			t.Fatal(err)
		}
		g := tp.Gradient(got[1], x)[0]
		tp2 := tape.New()
		tp2.Watch(x)
		want := tp2.Gradient(chain([]T{x})[1], x)[0]
		if !slices.Equal(tensor.ToSlice[float32](g), tensor.ToSlice[float32](want)) {
			t.Errorf("call %d: gradient %v, eager %v", call, g, want)
		}
	}
}

func TestFunctionBadArguments(t *testing.T) {
	f := trace.NewFunction(chain)
	if _, err := f.Call(nil); err == nil || !strings.Contains(err.Error(), "argument 0 is nil") {
		t.Errorf("nil argument: %v", err)
	}
}

// A traced function returns what the eager one returns, nil results
// included (the gradient of a source the target does not depend on), on
// the tracing call and from the graph.
func TestFunctionReturnsNil(t *testing.T) {
	fn := func(a []T) []T {
		tp := tape.New()
		tp.Watch(a[0], a[1])
		y := ops.Sum(ops.Square(a[0]))
		g := tp.Gradient(y, a[0], a[1])
		return []T{nil, y, g[0], g[1]}
	}
	f := trace.NewFunction(fn)
	for call := range 3 {
		got, err := f.Call(f32(1, 2), f32(3))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 4 || got[0] != nil || got[3] != nil || got[1].Float() != 5 || tensor.ToSlice[float32](got[2])[1] != 4 {
			t.Errorf("call %d: %v", call, got)
		}
	}
	if f.Traces() != 1 {
		t.Errorf("%d traces", f.Traces())
	}
}

func fusedNodes(g *graph.Graph) (names []string) {
	for _, n := range g.Nodes {
		if n.Fused != nil {
			names = append(names, n.Name)
		}
	}
	return names
}

// simKind is a device kind of the tests' own: host memory, the CPU's
// kernels for a few float32 ops registered for it, and no elementwise
// loops, so the fuser has nothing to fuse on it.
var simKind = device.RegisterKind("sim")

var simDevice = sync.OnceValue(func() *device.CPUDevice {
	for _, name := range []string{"Mul", "Add", "Tanh", "Reduce"} {
		eager.RegisterKernel(name, simKind, tensor.Float32, eager.Lookup(name).Kernel(device.CPU, tensor.Float32))
	}
	return device.NewHostDevice("sim:0", simKind)
})

// A graph is traced for its arguments' device: its signature names the
// device, the fuser fuses only what that device's kind has loops for, and
// the graph's results equal the eager ones there.
func TestFunctionTracesForItsArgumentsDevice(t *testing.T) {
	fn := func(a []T) []T {
		x := a[0]
		for range 2 {
			x = ops.Tanh(ops.Add(ops.Mul(x, ops.ScalarLike(x, 1.01)), ops.ScalarLike(x, 0.5)))
		}
		return []T{x, ops.Sum(x)}
	}
	f := trace.NewFunction(fn)
	host := f32(0.1, -0.2, 0.3)
	for _, c := range []struct {
		dev   device.Device
		fused bool
	}{{device.Host(), true}, {device.SecondCPU(), true}, {simDevice(), false}} {
		x, err := host.To(c.dev)
		if err != nil {
			t.Fatal(err)
		}
		for call := range 2 {
			got, err := f.Call(x)
			if err != nil {
				t.Fatalf("%s call %d: %v", c.dev.Name(), call, err)
			}
			want := fn([]T{x})
			for i := range want {
				if got[i].Device() != c.dev {
					t.Errorf("%s: result %d is on %s", c.dev.Name(), i, got[i].Device().Name())
				}
				eq32(t, fmt.Sprintf("%s call %d result %d", c.dev.Name(), call, i), got[i], want[i])
			}
		}
		g := f.Graph(x)
		if g == nil || g.Device != c.dev {
			t.Fatalf("%s: no graph traced for it (%v)", c.dev.Name(), g)
		}
		if fused := len(fusedNodes(g)) > 0; fused != c.fused {
			t.Errorf("%s: fused nodes %q, want some: %v", c.dev.Name(), fusedNodes(g), c.fused)
		}
	}
	if f.Traces() != 3 {
		t.Errorf("%d traces for three devices", f.Traces())
	}
}

func TestFunctionFusesElementwiseChains(t *testing.T) {
	f := trace.NewFunction(chain)
	x := f32(0.1, 0.2, 0.3)
	if _, err := f.Call(x); err != nil {
		t.Fatal(err)
	}
	// The last Tanh is read twice (the final Mul and Sum), so the chain
	// ends there.
	if got, want := fusedNodes(f.Graph(x)), []string{"Fused(Mul,Add,Tanh,Mul,Add,Tanh,Mul,Add,Tanh)"}; !slices.Equal(got, want) {
		t.Errorf("fused nodes %q, want %q", got, want)
	}

	// Chains with a second full input, a scalar that is an argument, an
	// intermediate read twice (a chain ends there) and a result taken from
	// the middle; 10000 elements: many blocks, split between workers.
	mixed := func(a []T) []T {
		x, y, s := a[0], a[1], a[2]
		u := ops.Tanh(ops.Mul(ops.Sub(x, y), s)) // chain 1: Sub, Mul, Tanh
		v := ops.Add(u, u)                       // u read twice: not inside a chain
		w := ops.Neg(ops.Div(s, ops.Exp(v)))     // chain 2: Add, Exp, Div (scalar first), Neg,
		mid := ops.Mul(w, y)                     // Mul, a result: chain 2 ends here
		return []T{mid, ops.Sigmoid(ops.Sub(mid, x))}
	}
	g := trace.NewFunction(mixed)
	rng := tensor.NewRNG(3)
	for call := range 2 {
		args := []T{tensor.RandNormal(rng, tensor.Float32, 4, 2500), tensor.RandNormal(rng, tensor.Float32, 4, 2500),
			tensor.Scalar(float32(0.5 + float32(call)))}
		got, err := g.Call(args...)
		if err != nil {
			t.Fatal(err)
		}
		want := mixed(args)
		for i := range want {
			if !slices.Equal(tensor.ToSlice[float32](got[i]), tensor.ToSlice[float32](want[i])) {
				t.Errorf("call %d result %d differs from eager", call, i)
			}
		}
		if call == 1 {
			want := []string{"Fused(Sub,Mul,Tanh)", "Fused(Add,Exp,Div,Neg,Mul)", "Fused(Sub,Sigmoid)"}
			if names := fusedNodes(g.Graph(args...)); !slices.Equal(names, want) {
				t.Errorf("fused %q, want %q", names, want)
			}
		}
	}
}

// A fused chain runs its steps one by one while a tape records anywhere
// (so that the tape sees the ops), each step's operand taken as the fused
// kernel takes it: a chain fed by another fused chain (the tail of
// dy·g·(1 - 2y), SigmoidGrad's gradient, reads Mul(g, dy) and the chain
// 1 - 2y) lost its operand there ("Mul: input 1 is nil"), so a traced
// function failed under a tape, differentiated or not.
func TestFusedChainsRunUnderATape(t *testing.T) {
	fn := func(a []T) []T {
		g, dy, y := a[0], a[1], a[2]
		return []T{ops.Mul(ops.Mul(g, dy), ops.Sub(ops.OnesLike(y), ops.Mul(ops.ScalarLike(y, 2), y)))}
	}
	f := trace.NewFunction(fn)
	args := []T{f32(0.5, -1, 2), f32(1, 2, 3), f32(0.1, 0.2, 0.3)}
	if _, err := f.Call(args...); err != nil {
		t.Fatal(err)
	}
	if len(fusedNodes(f.Graph(args...))) < 2 {
		t.Fatalf("fused nodes %q: want a chain feeding another", fusedNodes(f.Graph(args...)))
	}
	grads := func(call func([]T) []T) []T {
		tp := tape.New()
		tp.Watch(args...)
		return tp.Gradient(ops.Sum(call(args)[0]), args...)
	}
	got := grads(func(a []T) []T {
		out, err := f.Call(a...)
		if err != nil {
			t.Fatal(err)
		}
		return out
	})
	for i, w := range grads(fn) {
		if !slices.Equal(tensor.ToSlice[float32](got[i]), tensor.ToSlice[float32](w)) {
			t.Errorf("gradient %d through the traced call %v, eagerly %v", i, got[i], w)
		}
	}
}

func opNames(g *graph.Graph) (names []string) {
	for _, n := range g.Nodes {
		if n.Kind == graph.OpNode {
			names = append(names, n.Name)
		}
	}
	return names
}

func TestFunctionFoldsConstantsAndSharesRepeatedOps(t *testing.T) {
	fn := func(a []T) []T {
		scale := ops.Exp(ops.Mul(tensor.Scalar(float32(2)), tensor.Scalar(float32(0.5)))) // folded
		e1, e2 := ops.Log1p(ops.Abs(a[0])), ops.Log1p(ops.Abs(a[0]))                      // computed once
		return []T{ops.Mul(ops.Add(e1, e2), scale), ops.Sum(e2)}
	}
	f := trace.NewFunction(fn)
	for _, in := range [][]float32{{1, -2}, {3, 0.5}} {
		x := f32(in...)
		got, err := f.Call(x)
		if err != nil {
			t.Fatal(err)
		}
		want := fn([]T{x})
		for i := range want {
			if !slices.Equal(tensor.ToSlice[float32](got[i]), tensor.ToSlice[float32](want[i])) {
				t.Errorf("%v result %d: traced %v, eager %v", in, i, got[i], want[i])
			}
		}
	}
	// Abs and Log1p once (fused; their result is read three times, so the
	// chain ends there), then the fused Add-Mul and Sum (a Reduce); no Exp
	// or constant Mul.
	want := []string{"Fused(Abs,Log1p)", "Fused(Add,Mul)", "Reduce"}
	if got := opNames(f.Graph(f32(0, 0))); !slices.Equal(got, want) {
		t.Errorf("ops %q, want %q\n%v", got, want, f.Graph(f32(0, 0)))
	}
}

// Ops of other goroutines during a trace are not recorded, and do not race
// with the trace.
func TestFunctionIgnoresOtherGoroutines(t *testing.T) {
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		x := f32(1, 2, 3)
		for {
			select {
			case <-stop:
				return
			default:
				x = ops.Tanh(ops.Add(x, x))
				control.Cond(ops.Gt(ops.Sum(x), tensor.Scalar(float32(0))), func() []T { return nil }, func() []T { return nil })
			}
		}
	}()
	for n := range 20 {
		f := trace.NewFunction(chain)
		x := tensor.Zeros(tensor.Float32, n+1)
		if _, err := f.Call(x); err != nil {
			t.Fatal(err)
		}
		got, err := f.Call(x)
		if err != nil {
			t.Fatal(err)
		}
		eq32(t, "traced beside another goroutine", got[0], chain([]T{x})[0])
	}
	close(stop)
	<-done
}

// A Function called inside another's trace is traced inline (no deadlock,
// its control flow kept).

// Go numbers made tensors by Scalar take the dtype of what they meet in a
// traced function as they do eagerly, and their graph computes the same.
func TestFunctionPromotesWeakScalars(t *testing.T) {
	f := trace.NewFunction(func(args []T) []T {
		x := ops.Div(args[0], tensor.Scalar(255.0))
		return []T{ops.Sub(ops.Mul(x, tensor.Scalar(2)), tensor.Scalar(1))}
	})
	for _, in := range [][]float32{{0, 255, 51}, {127.5, 10, 200}} {
		x := f32(in...)
		got, err := f.Call(x)
		if err != nil {
			t.Fatal(err)
		}
		want := ops.Sub(ops.Mul(ops.Div(x, tensor.Scalar(255.0)), tensor.Scalar(2)), tensor.Scalar(1))
		if got[0].DType() != tensor.Float32 || !slices.Equal(tensor.ToSlice[float32](got[0]), tensor.ToSlice[float32](want)) {
			t.Fatalf("traced %v, eager %v", got[0], want)
		}
	}
	if n := f.Traces(); n != 1 {
		t.Errorf("%d traces, want 1", n)
	}
}

// Ops whose result's size depends on values (Nonzero, MaskedSelect, Index
// with a mask) inside a traced function: each call gives what the eager
// function gives, the count of the trace's call being guarded (issue 31).
func TestTracedMasksFollowTheirCounts(t *testing.T) {
	fn := func(a []T) []T {
		x := a[0]
		pos := ops.Gt(x, ops.ScalarLike(x, 0))
		sel := ops.MaskedSelect(x, pos)
		return []T{ops.Sum(ops.Square(sel)), ops.Nonzero(pos), ops.Index(x, pos), ops.MaskedFill(x, pos, ops.ScalarLike(x, 0))}
	}
	f := trace.NewFunction(fn)
	for i, v := range [][]float64{{1, -2, 3}, {-1, -2, 3}, {4, 5, 6}, {1, -2, 3}, {-1, -1, -1}} {
		x := tensor.FromSlice(v)
		got, err := f.Call(x)
		if err != nil {
			t.Fatal(err)
		}
		want := fn([]T{x})
		for k := range want {
			if !got[k].Shape().Equal(want[k].Shape()) || fmt.Sprint(got[k]) != fmt.Sprint(want[k]) {
				t.Errorf("call %d %v, result %d: %v, want %v", i, v, k, got[k], want[k])
			}
		}
	}
}

// A traced graph prints what each node computes (issue 31): an op's
// attributes (which reduction over which dims), a constant's value, a
// placeholder's dtype and shape, output indices only where a node has
// several.
func TestGraphListingSaysWhatNodesDo(t *testing.T) {
	f := trace.NewFunction(func(a []T) []T {
		return []T{ops.Mean(ops.Mul(a[0], tensor.Scalar(float32(3))), 0)}
	})
	x := tensor.FromSlice([]float32{1, 2})
	if _, err := f.Call(x); err != nil {
		t.Fatal(err)
	}
	g := f.Graph(x).String()
	for _, want := range []string{"= Placeholder arg0 -> float32[2]", "= Const 3.0 float32[]", "{mean dims=[0] keepdims=false} -> float32[]", "results: %"} {
		if !strings.Contains(g, want) {
			t.Errorf("the listing lacks %q:\n%s", want, g)
		}
	}
	if strings.Contains(g, ":0") {
		t.Errorf("output indices on single-output nodes:\n%s", g)
	}
}

// Det's gradient picks its way by the determinants' values (det·a⁻ᵀ, or
// the SVD where one is 0), read on the host: a traced gradient guards
// the choice, so a call whose matrix is singular after one that was not
// gets the cofactors, not the NaN of a⁻ᵀ.
func TestTracedDetGradientFollowsSingularity(t *testing.T) {
	fn := func(a []T) []T {
		tp := tape.New()
		tp.Watch(a[0])
		return tp.Gradient(ops.Det(a[0]), a[0])
	}
	f := trace.NewFunction(fn)
	for i, v := range [][]float64{{1, 2, 3, 5}, {1, 2, 2, 4}, {2, 1, 1, 1}, {0, 0, 0, 0}} {
		x := tensor.FromSlice(v, 2, 2)
		got, err := f.Call(x)
		if err != nil {
			t.Fatal(err)
		}
		want := []float64{v[3], -v[2], -v[1], v[0]}
		g := tensor.ToSlice[float64](got[0])
		for k := range want {
			if !(math.Abs(g[k]-want[k]) < 1e-12) {
				t.Errorf("call %d %v: %v, want %v", i, v, g, want)
				break
			}
		}
	}
}
