package cuda

import (
	"bytes"
	"fmt"
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// The GPU draws the host's numbers from the same seed: uniforms and
// Bernoulli draws (of every dtype, the half types' drawn by the GPU too)
// bit for bit, normals within a few ulps; and a draw on either device
// advances the generator alike, so draws after it agree too.
func TestRandomOnGPU(t *testing.T) {
	d := testGPU(t)
	draws := []struct {
		name string
		ulps float64
		make func(dev device.Device, r *tensor.RNG) *tensor.Tensor
	}{
		{"uniform float32", 0, func(dev device.Device, r *tensor.RNG) *tensor.Tensor {
			return tensor.RandUniformOn(dev, r, tensor.Float32, -2, 3, 7, 3)
		}},
		{"uniform float64", 0, func(dev device.Device, r *tensor.RNG) *tensor.Tensor {
			return tensor.RandUniformOn(dev, r, tensor.Float64, 0.5, 1.5, 9)
		}},
		{"normal float64", 8, func(dev device.Device, r *tensor.RNG) *tensor.Tensor {
			return tensor.RandNormalOn(dev, r, tensor.Float64, 5, 5)
		}},
		{"normal float32", 1, func(dev device.Device, r *tensor.RNG) *tensor.Tensor {
			return tensor.RandNormalOn(dev, r, tensor.Float32, 33)
		}},
	}
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Bool, tensor.BFloat16, tensor.Float16} {
		draws = append(draws, struct {
			name string
			ulps float64
			make func(dev device.Device, r *tensor.RNG) *tensor.Tensor
		}{fmt.Sprintf("bernoulli %v", dt), 0, func(dev device.Device, r *tensor.RNG) *tensor.Tensor {
			return tensor.RandBernoulliOn(dev, r, dt, 0.3, 4, 5)
		}})
	}
	host, gpu := tensor.NewRNG(42), tensor.NewRNG(42)
	for round := range 2 {
		for _, dr := range draws {
			want := dr.make(device.Host(), host)
			got := onHost(t, dr.make(d, gpu))
			what := fmt.Sprintf("round %d, %s", round, dr.name)
			if !got.Shape().Equal(want.Shape()) || got.DType() != want.DType() {
				t.Fatalf("%s: %v%v, want %v%v", what, got.DType(), got.Shape(), want.DType(), want.Shape())
			}
			g, w := tensor.ToSlice[float64](ops.Cast(got, tensor.Float64)), tensor.ToSlice[float64](ops.Cast(want, tensor.Float64))
			for i := range w {
				ulp := math.Abs(math.Nextafter(w[i], math.Inf(1)) - w[i])
				if want.DType() == tensor.Float32 {
					ulp = math.Abs(float64(math.Nextafter32(float32(w[i]), float32(math.Inf(1))) - float32(w[i])))
				}
				if math.Abs(g[i]-w[i]) > dr.ulps*ulp {
					t.Fatalf("%s: element %d is %v, the host drew %v", what, i, g[i], w[i])
				}
			}
		}
	}
}

// A half-precision dropout on the GPU (a mixed-precision model's) draws
// its mask there: a kernel, no copy from the host.
func TestHalfDropoutDrawsOnGPU(t *testing.T) {
	d := testGPU(t)
	ctx, ok := d.ctx.(*emu.Context)
	if !ok {
		t.Skip("counts the emulator's calls")
	}
	x := onGPU(t, d, ops.Cast(tensor.RandNormal(tensor.NewRNG(3), tensor.Float32, 64, 32), tensor.BFloat16))
	for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		x := ops.Cast(x, dt)
		ops.Dropout(x, 0.25, tensor.NewRNG(5)) // the scale's shared constant filled
		waitGPU(t, d)
		queued, launches := ctx.Queued, ctx.Launches
		y := ops.Dropout(x, 0.25, tensor.NewRNG(4))
		waitGPU(t, d)
		if n := (ctx.Queued - queued) - (ctx.Launches - launches); n != 0 {
			t.Errorf("%v dropout queued %d copies or fills (a mask drawn on the host)", dt, n)
		}
		if n := ctx.Launches - launches; n == 0 {
			t.Errorf("%v dropout launched no kernel", dt)
		}
		want := ops.Dropout(onHost(t, x), 0.25, tensor.NewRNG(4))
		if !bytes.Equal(onHost(t, y).HostBytes(), want.HostBytes()) {
			t.Errorf("%v dropout on the GPU differs from the host's", dt)
		}
	}
}
