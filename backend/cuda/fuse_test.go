package cuda

import (
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/ops"
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
