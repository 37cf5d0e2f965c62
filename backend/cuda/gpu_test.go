package cuda

import (
	"fmt"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/approx"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Every generated module loads and every kernel in it is found (on
// hardware: the driver's JIT accepts the PTX; a failure carries its log).
func TestEveryKernelLoads(t *testing.T) {
	d := testGPU(t)
	for _, f := range kernels.Families() {
		for _, k := range f.Kernels {
			if _, err := d.function(f.Name, k.Name()); err != nil {
				t.Errorf("family %s, kernel %s: %v", f.Name, k.Name(), err)
			}
		}
	}
}

// onGPU moves x to d, failing the test on error.
func onGPU(t testing.TB, d *Device, x *tensor.Tensor) *tensor.Tensor {
	t.Helper()
	g, err := x.To(d)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// onHost moves x to cpu:0.
func onHost(t testing.TB, x *tensor.Tensor) *tensor.Tensor {
	t.Helper()
	h, err := x.To(device.Host())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// MatMul on the GPU, every transpose and every way of sharing an operand
// across a batch, agrees with the CPU.
func TestMatMulOnGPU(t *testing.T) {
	d := testGPU(t)
	r := tensor.NewRNG(7)
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for _, shapes := range [][2][]int{{{5, 3}, {3, 4}}, {{2, 5, 3}, {2, 3, 4}}, {{2, 5, 3}, {3, 4}}, {{5, 3}, {2, 3, 4}}, {{1, 7}, {7, 1}}} {
			for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
				sa, sb := append([]int(nil), shapes[0]...), append([]int(nil), shapes[1]...)
				if tr[0] {
					sa[len(sa)-1], sa[len(sa)-2] = sa[len(sa)-2], sa[len(sa)-1]
				}
				if tr[1] {
					sb[len(sb)-1], sb[len(sb)-2] = sb[len(sb)-2], sb[len(sb)-1]
				}
				a, b := tensor.RandNormal(r, dt, sa...), tensor.RandNormal(r, dt, sb...)
				what := fmt.Sprintf("%v %v·%v transposes %v", dt, sa, sb, tr)
				want := ops.MatMulT(a, b, tr[0], tr[1])
				got := ops.MatMulT(onGPU(t, d, a), onGPU(t, d, b), tr[0], tr[1])
				agree(t, what, got, want)
			}
		}
	}
}

// agree checks that got (on a GPU) matches want (on the CPU) within the
// dtype's tolerance.
func agree(t testing.TB, what string, got, want *tensor.Tensor) {
	t.Helper()
	if got.Device().Kind() == want.Device().Kind() {
		t.Fatalf("%s: the result is on %s", what, got.Device().Name())
	}
	if !got.Shape().Equal(want.Shape()) || got.DType() != want.DType() {
		t.Fatalf("%s: got %s, want %s", what, tensor.Describe(got), tensor.Describe(want))
	}
	g := tensor.ToSlice[float64](ops.Cast(onHost(t, got), tensor.Float64))
	w := tensor.ToSlice[float64](ops.Cast(want, tensor.Float64))
	if d := approx.Diff(g, w, approx.Tolerance(want.DType())); d != "" {
		t.Fatalf("%s: %s", what, d)
	}
}
