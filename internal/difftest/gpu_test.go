package difftest

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// testGPU opens gpu:0: the emulator's where EAGERFLOW_CUDA_DRIVER is
// unset, a GPU's where it says nvidia or EAGERFLOW_REQUIRE_GPU is 1 (the
// GPU machine's script).
func testGPU(t *testing.T) *cuda.Device {
	t.Helper()
	if os.Getenv(cuda.EnvDriver) == "" && os.Getenv("EAGERFLOW_REQUIRE_GPU") != "1" {
		t.Setenv(cuda.EnvDriver, "emulator")
	}
	d, err := cuda.Open(0)
	if err != nil {
		t.Fatalf("opening gpu:0 (%s=%q): %v", cuda.EnvDriver, os.Getenv(cuda.EnvDriver), err)
	}
	return d
}

// The seeded random op programs (the ones compared with PyTorch) run on
// the GPU as on the CPU: every step's value and every input's gradient,
// and in float64 the Hessian-vector products.
// In float64 within the PyTorch comparison's tolerance; in float32
// (inputs cast) as agree32 says. Each GPU kernel an op program reaches
// (windows, convolutions, gathers, reductions along any axes, broadcasts,
// their gradients) is so checked on shapes no hand-written test picked.
// -difftest.gpuseeds and -difftest.gpucases run more.
func TestOpsAgreeOnGPU(t *testing.T) {
	d := testGPU(t)
	for _, seed := range parseSeeds(t, *flagGPUSeeds) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			steps, checked32, strayed := 0, 0, 0
			for id := range *flagGPUCases {
				p := generate(seed, id)
				run := func(in []T, dt tensor.DType, dev device.Device) (vals, grads []T, err error) {
					moved := make([]T, len(in))
					for i, x := range in {
						if moved[i], err = ops.Cast(x, dt).To(dev); err != nil {
							return nil, nil, err
						}
					}
					err = tensor.Catch(func() { vals, grads = p.eagerly(moved) })
					return vals, grads, err
				}
				want, wantGrads, err := run(p.in, tensor.Float64, cpu)
				if err != nil {
					t.Fatalf("program %d on the CPU: %v\n%s", id, err, describe(p))
				}
				got, gotGrads, err := run(p.in, tensor.Float64, d)
				if err != nil {
					t.Errorf("program %d on %s: %v\n%s", id, d.Name(), err, describe(p))
					continue
				}
				check := func(what string, got, want []T) {
					for i := range want {
						if diff := sameAs(got[i], want[i]); diff != "" {
							t.Errorf("program %d, %s %d on %s: %s\n%s", id, what, i, d.Name(), diff, describe(p))
						}
					}
				}
				check("float64 step", got, want)
				check("float64 gradient of input", gotGrads, wantGrads)
				hv := func(dev device.Device) (out []T, err error) {
					in, vs := make([]T, len(p.in)), make([]T, len(p.in))
					for i := range p.in {
						if in[i], err = p.in[i].To(dev); err != nil {
							return nil, err
						}
						if vs[i], err = p.second[i].To(dev); err != nil {
							return nil, err
						}
					}
					err = tensor.Catch(func() { out = p.hessianVector(in, vs) })
					return out, err
				}
				wantHV, err := hv(cpu)
				if err != nil {
					t.Fatalf("program %d's Hessian-vector product on the CPU: %v\n%s", id, err, describe(p))
				}
				if gotHV, err := hv(d); err != nil {
					t.Errorf("program %d's Hessian-vector product on %s: %v\n%s", id, d.Name(), err, describe(p))
				} else {
					check("float64 Hessian-vector product, input", gotHV, wantHV)
				}
				cpu32, cpu32Grads, err32 := run(p.in, tensor.Float32, cpu)
				gpu32, gpu32Grads, err := run(p.in, tensor.Float32, d)
				check32 := func(what string, got, cpu32, want []T) {
					for i := range want {
						diff, stray := agree32(got[i], cpu32[i], want[i])
						if stray {
							strayed++
						}
						if diff != "" {
							t.Errorf("program %d, float32 %s %d on %s: %s\n%s", id, what, i, d.Name(), diff, describe(p))
						}
					}
				}
				switch {
				case err32 != nil:
					// Programs whose float32 form the ops refuse (an op of
					// float64 only) are the float64 comparison's.
				case err != nil:
					t.Errorf("program %d in float32 on %s: %v\n%s", id, d.Name(), err, describe(p))
				default:
					check32("step", gpu32, cpu32, want)
					check32("gradient of input", gpu32Grads, cpu32Grads, wantGrads)
					checked32++
				}
				steps += len(p.Steps)
			}
			t.Logf("seed %d: %d programs (%d in float32 too), %d steps on %s: every value, gradient and float64 Hessian-vector product compared with the CPU's (%d float32 ones ill-conditioned, held to the CPU's own error)",
				seed, *flagGPUCases, checked32, steps, d.Name(), strayed)
		})
	}
}

// f32Same is the agreement asked of the GPU's float32 results with the
// CPU's (other orders of the reductions), relative to the larger
// magnitude or to 1 below it.
const f32Same = 1e-4

// agree32 compares got, a float32 result of the GPU, with cpu, the
// CPU's, element by element: within f32Same, or within ten times the
// CPU's own error against the float64 result want where that is larger
// (a gradient that cancels terms much larger than itself: attention's
// dS where one key takes all the weight). stray says some element took
// the second allowance.
func agree32(got, cpu, want T) (diff string, stray bool) {
	if got == nil && cpu == nil {
		return "", false
	}
	zeros := func(x, like T) T {
		if x == nil {
			return ops.ZerosLike(like)
		}
		return x
	}
	ref := got
	if ref == nil {
		ref = cpu
	}
	got, cpu, want = zeros(got, ref), zeros(cpu, ref), zeros(want, ref)
	if !got.Shape().Equal(cpu.Shape()) {
		return fmt.Sprintf("shape %v, the CPU's %v", got.Shape(), cpu.Shape()), false
	}
	g, c, w := values(got), values(cpu), values(want)
	for i := range g {
		if closeWithin(g[i], c[i], f32Same) {
			continue
		}
		if e := math.Abs(c[i] - w[i]); !math.IsNaN(e) && math.Abs(g[i]-c[i]) <= 10*e {
			stray = true
			continue
		}
		return fmt.Sprintf("element %d of %d is %.9g, the CPU's %.9g (float64: %.17g)", i, len(g), g[i], c[i], w[i]), stray
	}
	return "", stray
}

// cpu is the host's device.
var cpu device.Device = device.Host()

// The control-flow programs (data-dependent While loops, Scans, Conds in
// loops, nested loops, trip counts read from arguments) run on the GPU as
// on the CPU: losses, gradients and Hessian-vector products, eagerly and
// traced with the derivatives inside (the first call per signature
// traces; later ones run the graph, its loops as frames on the GPU or
// unrolled where the device records), and traced with Record (a CUDA
// graph where the loops unroll without guards), float64 within the
// PyTorch comparison's tolerance; the loss alone traced with Record, its
// loops run on the device; and the loss and gradient alone traced with
// Record, the loops and their gradients' loops on the device, the
// stacks of loops without MaxIterations outgrown by calls deeper than
// the trace's.
func TestControlFlowAgreesOnGPU(t *testing.T) {
	d := testGPU(t)
	for _, seed := range parseSeeds(t, *flagGPUSeeds) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			var cases []*controlCase
			for i := range len(templates) * 3 {
				k := i % len(templates)
				cases = append(cases, newControlCase(seed, i, k, 1+min((i/len(templates))%3, 1)))
			}
			onGPU := func(xs ...T) []T {
				out := make([]T, len(xs))
				for i, x := range xs {
					var err error
					if out[i], err = x.To(d); err != nil {
						t.Fatal(err)
					}
				}
				return out
			}
			restore := device.SetDefault(d) // the templates' own constants on the GPU
			defer restore()
			for k := range templates {
				tpl := &templates[k]
				fn := func(in []T) []T { return derivatives(tpl.loss, in[:len(in)-1], in[len(in)-1]) }
				traced, recorded := trace.NewFunction(fn), trace.NewFunction(fn)
				recorded.Record = true
				// The loss alone, recorded: its loops, untaped, run on the
				// device (conditional nodes) where they have no Cond.
				forward := trace.NewFunction(func(in []T) []T { return []T{tpl.loss(in[:len(in)-1])} })
				forward.Record = true
				// The gradient alone, recorded: its loops as frames on the
				// device, their stacks there too.
				gradient := trace.NewFunction(func(in []T) []T { return gradients(tpl.loss, in) })
				gradient.Record = true
				for _, c := range cases {
					if c.tpl != tpl {
						continue
					}
					var want []T
					func() {
						defer device.SetDefault(device.Host())()
						want = derivatives(tpl.loss, c.in, c.v)
					}()
					in := onGPU(append(append([]T{}, c.in...), c.v)...)
					var eager, got, rec []T
					err := tensor.Catch(func() { eager = derivatives(tpl.loss, in[:len(in)-1], in[len(in)-1]) })
					if err == nil {
						got, err = traced.Call(in...)
					}
					if err == nil {
						rec, err = recorded.Call(in...)
					}
					var grads []T
					if err == nil {
						// A call on the inputs scaled down traces loops
						// that run shallower (thresholds squared), so that
						// the compared call may go deeper than the
						// recording's stacks of guessed depth (a loop
						// without MaxIterations: its gradient's stacks).
						loss := in[:len(in)-1]
						if _, err = gradient.Call(scaledFloats(loss, 0.25)...); err == nil {
							grads, err = gradient.Call(loss...)
						}
					}
					var fwd []T
					if err == nil {
						fwd, err = forward.Call(in...)
					}
					if err != nil {
						t.Errorf("case %d (%s) on %s: %v", c.ID, tpl.name, d.Name(), err)
						continue
					}
					if eager[0].Device() != device.Device(d) {
						t.Fatalf("case %d (%s): the loss is on %s, not %s", c.ID, tpl.name, eager[0].Device().Name(), d.Name())
					}
					for i, w := range want {
						for _, r := range []struct {
							how string
							got []T
						}{{"eagerly", eager}, {"traced", got}, {"traced and recorded", rec}} {
							if diff := sameAs(r.got[i], w); diff != "" {
								t.Errorf("case %d (%s) on %s %s, result %d: %s", c.ID, tpl.name, d.Name(), r.how, i, diff)
							}
						}
					}
					if diff := sameAs(fwd[0], want[0]); diff != "" {
						t.Errorf("case %d (%s) on %s, the loss alone traced and recorded: %s", c.ID, tpl.name, d.Name(), diff)
					}
					for i, g := range grads {
						if diff := sameAs(g, want[i]); diff != "" {
							t.Errorf("case %d (%s) on %s, the gradient alone traced and recorded, result %d: %s", c.ID, tpl.name, d.Name(), i, diff)
						}
					}
				}
			}
			t.Logf("seed %d: %d control-flow programs (%d templates) on %s, eager, traced and recorded: losses, gradients, Hessian-vector products", seed, len(cases), len(templates), d.Name())
		})
	}
}

// scaledFloats returns xs with each floating-point tensor multiplied by
// k (the others as they are).
func scaledFloats(xs []T, k float64) []T {
	out := make([]T, len(xs))
	for i, x := range xs {
		out[i] = x
		if x.DType().IsFloat() {
			out[i] = ops.Mul(x, ops.ScalarLike(x, k))
		}
	}
	return out
}

// The half-precision ops the PyTorch suite compares (elementwise,
// reductions, softmax, MatMul; bfloat16 and float16) agree on the GPU with
// the CPU as the CPU does with PyTorch: bit for bit where the float32
// result is exact, else within one unit in the last place; over shapes of
// odd sizes too (the vector kernels' tails).
func TestHalfOpsAgreeOnGPU(t *testing.T) {
	d := testGPU(t)
	r := rand.New(rand.NewPCG(29, 3))
	cases, off := 0, 0
	for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		for _, op := range halfOps {
			for _, shape := range [][2]int{{8, 16}, {7, 33}, {1, 129}} {
				shapeB := []int{shape[0], shape[1]}
				if op.name == "matmul" {
					shapeB = []int{shape[1], 5}
				}
				draw := func(shape ...int) *tensor.Tensor {
					f := make([]float32, shape[0]*shape[1])
					for i := range f {
						f[i] = op.lo + float32(r.Float64())*(4-op.lo)
					}
					return tensor.FromFloat32s(dt, f, shape...)
				}
				a, b := draw(shape[0], shape[1]), (*tensor.Tensor)(nil)
				if op.two {
					b = draw(shapeB...)
				}
				want := halfBits(op.fn(a, b))
				ga, err := a.To(d)
				if err != nil {
					t.Fatal(err)
				}
				gb := b
				if b != nil {
					if gb, err = b.To(d); err != nil {
						t.Fatal(err)
					}
				}
				var got []uint16
				if err := tensor.Catch(func() { got = halfBits(op.fn(ga, gb)) }); err != nil {
					t.Errorf("%v %s %v on %s: %v", dt, op.name, shape, d.Name(), err)
					continue
				}
				for j, g := range got {
					ok, one := halfClose(g, want[j], op.exact, 1)
					if !ok && op.roundsWeights {
						ok, one = halfWeightsClose(dt, g, want[j], halfBits(a)), true
					}
					if !ok {
						t.Errorf("%v %s %v on %s, element %d: %#04x, the CPU's %#04x", dt, op.name, shape, d.Name(), j, g, want[j])
						break
					}
					if one {
						off++
					}
				}
				cases++
			}
		}
	}
	t.Logf("%d cases on %s; %d results one unit in the last place off the CPU's", cases, d.Name(), off)
}
