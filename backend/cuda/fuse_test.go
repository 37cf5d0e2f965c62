package cuda

import (
	"math"
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/fusion"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// A traced function's elementwise chains run on the GPU as fused kernels
// (generated and loaded at run time), bit for bit what the eager ops give
// on the GPU: chains with a second full input, a scalar argument read
// first and last, an intermediate read twice and a result taken from a
// chain's middle.
func TestFusedChainsOnGPU(t *testing.T) {
	d := testGPU(t)
	mixed := func(a []*tensor.Tensor) []*tensor.Tensor {
		x, y, s := a[0], a[1], a[2]
		u := ops.Tanh(ops.Mul(ops.Sub(x, y), s))
		v := ops.Add(u, u)
		w := ops.Neg(ops.Div(s, ops.Exp(v)))
		mid := ops.Mul(w, y)
		return []*tensor.Tensor{mid, ops.Sigmoid(ops.Sub(mid, ops.Gelu(x))), ops.Pow(ops.Abs(mid), s)}
	}
	f := trace.NewFunction(mixed)
	r := tensor.NewRNG(4)
	for call := range 3 {
		args := []*tensor.Tensor{tensor.RandNormalOn(d, r, tensor.Float32, 3, 70), tensor.RandNormalOn(d, r, tensor.Float32, 3, 70),
			onGPU(t, d, tensor.Scalar(float32(0.5+float32(call))))}
		got, err := f.Call(args...)
		if err != nil {
			t.Fatal(err)
		}
		want := mixed(args)
		for i := range want {
			if got[i].Device() != d {
				t.Fatalf("call %d: result %d on %s", call, i, got[i].Device().Name())
			}
			if g, w := tensor.ToSlice[float32](onHost(t, got[i])), tensor.ToSlice[float32](onHost(t, want[i])); !slices.Equal(g, w) {
				t.Fatalf("call %d: result %d differs from the eager ops on the GPU", call, i)
			}
		}
		if call > 0 {
			want := []string{"Fused(Sub,Mul,Tanh)", "Fused(Add,Exp,Div,Neg,Mul)", "Fused(Gelu,Sub,Sigmoid)", "Fused(Abs,Pow)"}
			var names []string
			for _, n := range f.Graph(args...).Nodes {
				if n.Fused != nil {
					names = append(names, n.Name)
				}
			}
			if slices.Sort(names); !slices.Equal(names, slices.Sorted(slices.Values(want))) {
				t.Fatalf("fused nodes %q, want %q", names, want)
			}
		}
	}
}

// Gradient rules' elementwise chains (ops' chain: Pow's, Square's, Sqrt's,
// Rsqrt's, Abs's, Erf's, Log1p's, Cos's, Div's) compile for the GPU and give bitwise the gradients the
// ops give one by one (under a second tape, which observes), and the
// CPU's within float32's roundings.
func TestChainedGradientsOnGPU(t *testing.T) {
	d := testGPU(t)
	steps := []fusion.Step{{Op: eager.Lookup("Pow"), Args: []fusion.Operand{{Input: 0}, {Input: 1, Single: true}}},
		{Op: eager.Lookup("Mul"), Args: []fusion.Operand{{Input: 2, Single: true}, {Chain: true}}},
		{Op: eager.Lookup("Mul"), Args: []fusion.Operand{{Input: 3}, {Chain: true}}}}
	if fusion.Compile(device.GPU, steps, 4) == nil {
		t.Fatal("Pow's gradient chain does not compile for the GPU")
	}
	r := tensor.NewRNG(6)
	xh := tensor.RandUniform(r, tensor.Float32, 0.1, 3, 33, 70)
	x := onGPU(t, d, xh)
	for _, c := range []struct {
		name string
		f    func(x *tensor.Tensor) *tensor.Tensor
	}{
		{"Pow3", func(x *tensor.Tensor) *tensor.Tensor { return ops.Pow(x, ops.ScalarLike(x, 3)) }},
		{"Square", ops.Square},
		{"Sqrt", ops.Sqrt},
		{"Rsqrt", ops.Rsqrt},
		{"Abs", func(x *tensor.Tensor) *tensor.Tensor { return ops.Abs(ops.Sub(x, ops.ScalarLike(x, 1))) }},
		{"Erf", ops.Erf},
		{"Log1p", ops.Log1p},
		{"Cos", ops.Cos},
		{"Div", func(x *tensor.Tensor) *tensor.Tensor { return ops.Div(x, ops.Add(x, ops.ScalarLike(x, 1))) }},
	} {
		grad := func(x *tensor.Tensor, observed bool) []float32 {
			if observed {
				outer := tape.New()
				outer.Watch(x)
				defer outer.Stop()
			}
			tp := tape.New()
			tp.Watch(x)
			return tensor.ToSlice[float32](onHost(t, tp.Gradient(ops.Sum(c.f(x)), x)[0]))
		}
		fused, byOps, host := grad(x, false), grad(x, true), grad(xh, false)
		if !slices.Equal(fused, byOps) {
			t.Errorf("%s: the fused gradient differs from the ops' on the GPU", c.name)
		}
		for i := range host {
			if diff := math.Abs(float64(fused[i] - host[i])); diff > 4e-7*math.Abs(float64(host[i]))+1e-30 {
				t.Errorf("%s: element %d is %v on the GPU, %v on the CPU", c.name, i, fused[i], host[i])
				break
			}
		}
	}
}
