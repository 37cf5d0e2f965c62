package cuda

import (
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// LayerNorm's gradient on the GPU of float32 rows far from zero (1e4 ±
// 1, 1e6 ± 1): the kernels' statistics are float64, but the mean the
// backward reads is stored in float32, off by δ, which every x̂ carried
// (1e-4 and 7e-3 off); within 1e-6 of the CPU's float64 gradient now.
func TestLayerNormOfRowsFarFromZeroOnGPU(t *testing.T) {
	d := testGPU(t)
	w := tensor.RandUniform(tensor.NewRNG(4), tensor.Float64, -1, 1, 8, 300)
	for _, offset := range []float64{1e4, 1e6} {
		x := ops.Add(tensor.RandUniform(tensor.NewRNG(3), tensor.Float64, -1, 1, 8, 300), tensor.Scalar(offset))
		x32 := ops.Cast(x, tensor.Float32)
		run := func(x, w *tensor.Tensor) []float64 {
			dt := x.DType()
			tp := tape.New()
			tp.Watch(x)
			out := ops.LayerNorm(x, ops.ToDevice(tensor.FullOf(dt, 1.5, 300), x.Device()), ops.ToDevice(tensor.Zeros(dt, 300), x.Device()), 1e-5)
			dx := tp.Gradient(ops.Sum(ops.Mul(out, ops.Cast(w, dt))), x)[0]
			return tensor.ToSlice[float64](ops.Cast(onHost(t, dx), tensor.Float64))
		}
		got := run(onGPU(t, d, x32), onGPU(t, d, w))
		want := run(ops.Cast(x32, tensor.Float64), w)
		for i := range got {
			if math.Abs(got[i]-want[i]) > 1e-6 {
				t.Fatalf("about %g, element %d: %v, want %v", offset, i, got[i], want[i])
			}
		}
	}
}
