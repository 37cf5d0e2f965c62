package eager_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/control/graph"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Ops in a placement scope run on its device: inputs elsewhere are copied
// there (recorded copies: a tape differentiates back through them to the
// host), tensors made inside are made there, a loop's integer counter and
// predicate stay where they are; after the scope, ops run where their
// inputs are again.
func TestPlacementScope(t *testing.T) {
	other := device.SecondCPU()
	x := tensor.FromSlice([]float64{0.5, -1})
	tp := tape.New()
	tp.Watch(x)
	var y, made, count *tensor.Tensor
	if err := device.With(other, func() {
		y = ops.Mul(ops.Tanh(x), tensor.Scalar(2.0))
		made = tensor.Zeros(tensor.Float32, 3)
		count = ops.Add(tensor.Scalar(int32(1)), tensor.Scalar(int32(2)))
	}); err != nil {
		t.Fatal(err)
	}
	if y.Device() != other || made.Device() != other {
		t.Errorf("in the scope: %s, %s", y.Device().Name(), made.Device().Name())
	}
	if d, _ := device.Scope(); d != nil || device.Default() != device.Host() {
		t.Errorf("after the scope: scope %v, default %s", d, device.Default().Name())
	}
	if count.Device() != device.Host() && count.Device() != other {
		t.Errorf("count on %s", count.Device().Name())
	}
	g := tp.Gradient(ops.Sum(y), x)[0]
	if g.Device() != device.Host() {
		t.Errorf("the gradient is on %s", g.Device().Name())
	}
	want := ops.Mul(ops.Sub(tensor.Scalar(1.0), ops.Square(ops.Tanh(x))), tensor.Scalar(2.0))
	if d := ops.Amax(ops.Abs(ops.Sub(g, want))).Float(); d > 1e-15 {
		t.Errorf("gradient %v, want %v", g, want)
	}
	back := ops.Add(x, x) // outside: where x is
	if back.Device() != device.Host() {
		t.Errorf("after the scope an op ran on %s", back.Device().Name())
	}
}

// A traced function with a scope records the copies, so that its graph
// spans the devices and Partition cuts it where the scope begins and ends.
func TestPlacementScopeTraced(t *testing.T) {
	other := device.SecondCPU()
	fn := func(a []*tensor.Tensor) []*tensor.Tensor {
		l := control.While(func(v []*tensor.Tensor) *tensor.Tensor { return ops.Lt(v[0], a[1]) }, func(v []*tensor.Tensor) []*tensor.Tensor {
			var h *tensor.Tensor
			if err := device.With(other, func() { h = ops.Sin(ops.Mul(v[1], tensor.Scalar(1.5))) }); err != nil {
				panic(err)
			}
			back, err := h.To(device.Host())
			if err != nil {
				panic(err)
			}
			return []*tensor.Tensor{ops.Add(v[0], tensor.Scalar(int32(1))), ops.Add(back, v[1])}
		}, []*tensor.Tensor{tensor.Scalar(int32(0)), a[0]})
		return []*tensor.Tensor{l[1]}
	}
	f := trace.NewFunction(fn)
	args := []*tensor.Tensor{tensor.FromSlice([]float64{0.3, 2}), tensor.Scalar(int32(4))}
	if _, err := f.Call(args...); err != nil {
		t.Fatal(err)
	}
	p, err := graph.Partition(f.Graph(args...))
	if err != nil || len(p.Parts) != 2 {
		t.Fatalf("%v partitions, %v", p, err)
	}
	got, err := p.Execute(args...)
	if err != nil {
		t.Fatal(err)
	}
	if d := ops.Amax(ops.Abs(ops.Sub(got[0], fn(args)[0]))).Float(); d > 1e-12 {
		t.Errorf("partitioned %v, eager %v", got[0], fn(args)[0])
	}
}

// An op with no kernel on the scope's device fails naming the scope; in a
// soft scope it runs where its inputs are.
func TestPlacementScopeWithoutKernel(t *testing.T) {
	x := tensor.FromSlice([]float32{1, 2})
	err := tensor.Catch(func() { _ = device.With(otherDevice{}, func() { ops.Exp(x) }) })
	if !errors.Is(err, tensor.ErrNoKernel) || !strings.Contains(err.Error(), "the device scope's") {
		t.Errorf("hard scope: %v", err)
	}
	var y *tensor.Tensor
	if err := device.WithSoft(otherDevice{}, func() { y = ops.Exp(x) }); err != nil {
		t.Fatal(err)
	}
	if y.Device() != device.Host() {
		t.Errorf("soft scope: on %s", y.Device().Name())
	}
	// Inputs on a device without the kernel, or on two devices: the soft
	// scope runs the op on the host, which has it; a hard scope fails.
	far, err := x.To(otherDevice{})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range [][2]*tensor.Tensor{{far, far}, {x, far}} {
		var z *tensor.Tensor
		if err := device.WithSoft(otherDevice{}, func() { z = ops.Add(ops.Exp(in[0]), in[1]) }); err != nil {
			t.Fatal(err)
		}
		want := ops.Add(ops.Exp(x), x)
		if z.Device() != device.Host() || ops.Amax(ops.Abs(ops.Sub(z, want))).Float() != 0 {
			t.Errorf("soft scope, inputs on %s and %s: %v on %s, want %v on the host", in[0].Device().Name(), in[1].Device().Name(), z, z.Device().Name(), want)
		}
		err := tensor.Catch(func() { _ = device.With(otherDevice{}, func() { ops.Add(in[0], in[1]) }) })
		if !errors.Is(err, tensor.ErrNoKernel) {
			t.Errorf("hard scope, inputs on %s and %s: %v, want ErrNoKernel", in[0].Device().Name(), in[1].Device().Name(), err)
		}
	}
}

// RunPlaced and RunTo (a graph executor's calls) run where their inputs
// are whatever scope is in force; Run in the same scope moves them.
func TestRunPlacedIgnoresScopes(t *testing.T) {
	other := device.SecondCPU()
	x := tensor.FromSlice([]float64{1, 2})
	neg := eager.Lookup("Neg")
	if neg == nil {
		t.Fatal("no op Neg")
	}
	var moved, placed, to *tensor.Tensor
	if err := device.With(other, func() {
		moved = eager.Run(neg, nil, x)[0]
		placed = eager.RunPlaced(neg, nil, x)[0]
		to = eager.RunTo(nil, neg, nil, x)[0]
	}); err != nil {
		t.Fatal(err)
	}
	if moved.Device() != other {
		t.Errorf("Run in the scope ran on %s, want %s", moved.Device().Name(), other.Name())
	}
	if placed.Device() != device.Host() || to.Device() != device.Host() {
		t.Errorf("RunPlaced ran on %s, RunTo on %s; want the host (where x is)", placed.Device().Name(), to.Device().Name())
	}
}

// A variable's updates stay where it lives: in a scope for another device,
// Assign, AssignSub and the optimizers (fused and by ops) take values
// made there back to the variable's device, and give what the same steps
// give outside the scope. Outside scopes a value elsewhere is refused.
func TestPlacementScopeVariableUpdates(t *testing.T) {
	other := device.SecondCPU()
	steps := func(v *tape.Variable, opts []nn.Optimizer) {
		tp := tape.New()
		loss := ops.Sum(ops.Square(ops.Tanh(v.Value())))
		g := tp.Gradient(loss, v.Value())
		for _, o := range opts {
			if err := o.Apply([]*tape.Variable{v}, g); err != nil {
				t.Fatal(err)
			}
		}
		v.AssignSub(ops.Mul(v.Value(), tensor.Scalar(0.25)))
		v.Assign(ops.Add(v.Value(), tensor.Scalar(1.0)))
	}
	optimizers := func() []nn.Optimizer {
		return []nn.Optimizer{nn.NewAdam(nn.Constant(0.1)), nn.NewRMSProp(nn.Constant(0.1)), &nn.SGD{LR: nn.Constant(0.1), Momentum: 0.9}}
	}
	init := tensor.FromSlice([]float64{0.5, -1, 2})
	want := tape.NewVariable("w", init)
	steps(want, optimizers())
	got := tape.NewVariable("w", init)
	if err := device.With(other, func() { steps(got, optimizers()) }); err != nil {
		t.Fatal(err)
	}
	if got.Value().Device() != device.Host() {
		t.Fatalf("the variable moved to %s", got.Value().Device().Name())
	}
	if d := ops.Amax(ops.Abs(ops.Sub(got.Value(), want.Value()))).Float(); d > 1e-15 {
		t.Errorf("updated in the scope: %v, outside: %v", got.Value(), want.Value())
	}
	far, err := init.To(other)
	if err != nil {
		t.Fatal(err)
	}
	if err := tensor.Catch(func() { got.Assign(far) }); !errors.Is(err, tensor.ErrDevice) {
		t.Errorf("Assign of a value on %s outside a scope: %v, want ErrDevice", other.Name(), err)
	}
}
