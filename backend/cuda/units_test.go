package cuda

import (
	"math"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
	"github.com/eagerflow/eagerflow/internal/approx"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// The activations (ops/rectifiers.go, ops/smooth_units.go) on the GPU
// agree with the CPU's, values and gradients of weighted sums: the
// piecewise-linear ones and the selects at their kinks, ±0, infinities
// and NaN bit for bit where both compute the same rounded operations,
// the exponential ones within 8 ulps (float64) and 8 float32 ulps (the
// two exponentials differ by an ulp or two, the hardware's ex2.approx by
// three more) or, where a slope's terms cancel near its zero, 2⁻²⁰ (2⁻⁴⁸
// in float64) absolute; bfloat16 within its tolerance.
func TestActivationUnitsOnGPU(t *testing.T) {
	d := testGPU(t)
	xs := []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 3, -3, 6, -1.5, 1e30, -1e30, 100, -100, 50, -50}
	for _, k := range []float64{0, 3, -3, 6} {
		xs = append(xs, math.Nextafter(k, 10), math.Nextafter(k, -10))
	}
	for v := -12.0; v <= 12; v += 0.0173 {
		xs = append(xs, v)
	}
	n := len(xs)
	w := make([]float64, n)
	for i := range w {
		w[i] = float64(i%7) - 2.5
	}
	alpha := make([]float64, n)
	for i := range alpha {
		alpha[i] = 0.3 - float64(i%5)*0.1
	}
	for _, c := range []struct {
		name  string
		fn    func(x, alpha *tensor.Tensor) *tensor.Tensor
		exact bool // the same rounded operations on both devices
	}{
		{"LeakyRelu", func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.LeakyRelu(x, 0.1) }, true},
		{"Prelu", ops.Prelu, true},
		{"Relu6", func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Relu6(x) }, true},
		{"HardSigmoid", func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.HardSigmoid(x) }, true},
		{"HardSwish", func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.HardSwish(x) }, true},
		{"Softsign", func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Softsign(x) }, false},
		{"Elu", func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Elu(x) }, false},
		{"Selu", func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Selu(x) }, false},
		{"Celu", func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Celu(x, 2) }, false},
		{"Silu", func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Silu(x) }, false},
		{"Mish", func(x, _ *tensor.Tensor) *tensor.Tensor { return ops.Mish(x) }, false},
	} {
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64, tensor.BFloat16} {
			run := func(onDev func(*tensor.Tensor) *tensor.Tensor) (y, gx, ga []float64) {
				x, a := onDev(ops.Cast(tensor.FromSlice(xs), dt)), onDev(ops.Cast(tensor.FromSlice(alpha), dt))
				tp := tape.New()
				tp.Watch(x, a)
				out := c.fn(x, a)
				g := tp.Gradient(ops.Sum(ops.Mul(out, onDev(ops.Cast(tensor.FromSlice(w), dt)))), x, a)
				host := func(v *tensor.Tensor) []float64 {
					if v == nil {
						return make([]float64, n)
					}
					return tensor.ToSlice[float64](ops.Cast(onHost(t, v), tensor.Float64))
				}
				return host(out), host(g[0]), host(g[1])
			}
			cy, cgx, cga := run(func(v *tensor.Tensor) *tensor.Tensor { return v })
			gy, ggx, gga := run(func(v *tensor.Tensor) *tensor.Tensor { return onGPU(t, d, v) })
			for _, part := range []struct {
				what     string
				cpu, gpu []float64
			}{{"value", cy, gy}, {"gradient", cgx, ggx}, {"alpha's gradient", cga, gga}} {
				bad := 0
				for i, want := range part.cpu {
					got := part.gpu[i]
					ok := false
					switch {
					case dt == tensor.BFloat16:
						ok = approx.Close(got, want, approx.BFloat16)
					case c.exact:
						ok = got == want && math.Signbit(got) == math.Signbit(want) || math.IsNaN(got) && math.IsNaN(want)
					case dt == tensor.Float32:
						ok = ulps32(float32(got), float32(want)) <= 8 || math.Abs(got-want) <= 0x1p-20
					default:
						ok = ulps(got, want) <= 8 || math.Abs(got-want) <= 0x1p-48
					}
					if !ok && bad < 3 {
						bad++
						t.Errorf("%s %v %s at %v: GPU %v, CPU %v", c.name, dt, part.what, xs[i], got, want)
					}
				}
			}
		}
	}
}

// The binary ops with one operand a single value (the "single" family:
// a scaled tensor, LeakyRelu's slope) against the CPU, either operand
// single, float32 and bfloat16, lengths around the vector width.
func TestSingleValueOperandsOnGPU(t *testing.T) {
	d := testGPU(t)
	ops2 := map[string]func(a, b *tensor.Tensor) *tensor.Tensor{"add": ops.Add, "sub": ops.Sub, "mul": ops.Mul, "div": ops.Div,
		"max": ops.Max, "min": ops.Min, "pow": ops.Pow, "prelu": ops.Prelu}
	for name, f := range ops2 {
		for _, dt := range []tensor.DType{tensor.Float32, tensor.BFloat16} {
			for _, n := range []int{2, 7, 8, 33} {
				v := ops.Cast(tensor.RandUniform(tensor.NewRNG(uint64(n)), tensor.Float64, 0.5, 2, n), dt)
				s := ops.Cast(tensor.Scalar(1.25), dt)
				for _, pair := range [][2]*tensor.Tensor{{v, s}, {s, v}} {
					want := tensor.ToSlice[float64](ops.Cast(f(pair[0], pair[1]), tensor.Float64))
					a, b := onGPU(t, d, pair[0]), onGPU(t, d, pair[1])
					var ran []string
					if ctx, ok := d.ctx.(*emu.Context); ok {
						ctx.SetProfiler(func(p emu.Profile) { ran = append(ran, p.Kernel) })
					}
					y := f(a, b)
					if err := d.Synchronize(); err != nil {
						t.Fatal(err)
					}
					if ctx, ok := d.ctx.(*emu.Context); ok {
						ctx.SetProfiler(nil)
						variant := map[bool]string{true: "_sv", false: "_vs"}[pair[0] == s]
						if len(ran) != 1 || !strings.HasSuffix(ran[0], variant) {
							t.Fatalf("%s %v of %d: ran %v, want one %s kernel", name, dt, n, ran, variant)
						}
					}
					got := tensor.ToSlice[float64](ops.Cast(onHost(t, y), tensor.Float64))
					for i := range want {
						if !approx.Close(got[i], want[i], approx.Tolerance(dt)) {
							t.Fatalf("%s %v of %d, single %v: element %d %v, want %v", name, dt, n, pair[1] == s, i, got[i], want[i])
						}
					}
				}
			}
		}
	}
}
