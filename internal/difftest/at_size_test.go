package difftest

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

var (
	flagSizeCases    = flag.Int("difftest.sizecases", 60, "float32 programs at size per seed (at_size_test.go)")
	flagSizeSeeds    = flag.String("difftest.sizeseeds", "1", "comma-separated seeds of the float32 programs at size")
	flagGPUSizeCases = flag.Int("difftest.gpusizecases", 12, "float32 programs at size per seed on the GPU")
)

// sizeLimit bounds the tensors of a program at size: past the host's
// sharding grain (a kernel's work split over the workers) and the vector
// kernels' blocks, their tails included.
const sizeLimit = 1 << 15

// f32Tol is how far a float32 result may lie from the float64 one, as a
// fraction of the largest magnitude in its tensor (or of 1 below it): a
// few hundred float32 roundings along a program, where a kernel that
// mishandles a tail, a shard or a block is off by the size of its values.
// An element that rounding alone moves further (PyTorch's own float32
// run of the program lies further from its float64 one: an
// ill-conditioned result, such as a normalization of two nearly equal
// values, or a sum cancelling terms of 1e10) may lie within
// f32Conditioned times PyTorch's float32 error.
const (
	f32Tol         = 2e-4
	f32Conditioned = 10
)

// generateAtSize makes program id of a seed at size: dimensions up to
// eight times the suite's, tensors up to sizeLimit elements, smooth ops
// only (gen.smooth).
func generateAtSize(seed uint64, id int) *Program {
	return generateWith(&gen{r: rand.New(rand.NewPCG(seed, uint64(id)^0x51e)), p: &Program{ID: id},
		limit: sizeLimit, scale: 8, smooth: true})
}

// rounded32 returns p with its inputs and weights rounded to float32 and
// read back as float64, as PyTorch gets them, and without the
// Hessian-vector product.
func rounded32(p *Program) *Program {
	q := *p
	round := func(xs []T) (out []T, enc []*Array) {
		for _, x := range xs {
			r := ops.Cast(ops.Cast(x, tensor.Float32), tensor.Float64)
			out, enc = append(out, r), append(enc, encode(r))
		}
		return out, enc
	}
	q.in, q.Inputs = round(p.in)
	q.weights, q.Weights = round(p.weights)
	q.second, q.Second = nil, nil
	return &q
}

// result names a program's result i: its steps' values, then the
// gradients of its inputs.
func (p *Program) result(i int) string {
	if i >= len(p.Steps) {
		return fmt.Sprintf("gradient of input %d", i-len(p.Steps))
	}
	return fmt.Sprintf("step %d (%s)", i, p.Steps[i].Op)
}

// results is a reference's values, then its gradients.
func (r *torchResult) results() []*Array { return append(slices.Clone(r.Values), r.Grads...) }

// within32 compares got, a float32 result, with want, PyTorch's float64
// one, to f32Tol of the largest magnitude in want (or of 1 below it), or
// where PyTorch's float32 result (want32, nil for none) lies further from
// want, to f32Conditioned times that distance.
func within32(got T, want, want32 *Array) string { return withinLargest(got, want, want32, f32Tol, 1) }

// withinLargest compares got with want to tol of the largest magnitude in
// want, or of floor where that is smaller, or to f32Conditioned times
// want32's distance from want where that is larger (want32 nil: no such
// allowance); where want32 is not finite and want is (PyTorch's float32
// overflowed), a result that is not finite either passes; where want32
// strays past a tenth of the largest magnitude anywhere (a chaotic
// program), every element is allowed f32Conditioned times its farthest.
func withinLargest(got T, want, want32 *Array, tol, floor float64) string {
	var w, w32 []float64
	if want != nil {
		var err error
		if w, err = want.decode(); err != nil {
			return err.Error()
		}
		if got != nil && !got.Shape().Equal(want.Shape) {
			return fmt.Sprintf("shape %v, want %v", got.Shape(), want.Shape)
		}
	}
	if want32 != nil {
		var err error
		if w32, err = want32.decode(); err != nil {
			return err.Error()
		}
	}
	var g []float64
	if got != nil {
		g = values(got)
	}
	scale := floor
	for _, v := range w {
		scale = math.Max(scale, math.Abs(v))
	}
	// chaos is f32Conditioned times PyTorch's float32 result's largest
	// finite distance from float64 over the tensor where that is past a
	// tenth of its largest magnitude (a recurrence that amplifies
	// rounding: each float32 trajectory lands near float64's at some
	// elements by chance, so an element's own distance says nothing of
	// its conditioning), else 0.
	chaos := 0.0
	if w32 != nil && w != nil {
		far := 0.0
		for i, b := range w {
			if d := math.Abs(w32[i] - b); !nonFinite(d) {
				far = math.Max(far, d)
			}
		}
		if far > 0.1*scale {
			chaos = f32Conditioned * far
		}
	}
	for i := range max(len(g), len(w)) {
		a, b := 0.0, 0.0
		if g != nil {
			a = g[i]
		}
		if w != nil {
			b = w[i]
		}
		allowed := math.Max(tol*scale, chaos)
		if w32 != nil && w != nil {
			switch d := math.Abs(w32[i] - b); {
			case !math.IsNaN(d) && !math.IsInf(d, 0):
				allowed = math.Max(allowed, f32Conditioned*d)
			case !nonFinite(b) && nonFinite(a):
				// PyTorch's float32 overflows where float64 does not (a
				// float32 program's values past float32's range): ours
				// may too, to NaN or either infinity as its order goes.
				continue
			}
		}
		if !(math.Abs(a-b) <= allowed) {
			return fmt.Sprintf("element %d of %d is %.9g, want %.9g (%.2g of the tensor's largest magnitude, %.3g)",
				i, max(len(g), len(w)), a, b, math.Abs(a-b)/scale, scale)
		}
	}
	return ""
}

// nonFinite reports whether v is NaN or infinite.
func nonFinite(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }

// throughTracedLoss returns the gradients of p's loss in its inputs in,
// differentiated by a tape around a call of the loss traced (the second:
// the first traces), so that the graph's fused chains run their ops one
// by one for the tape to see. It panics on a failed call.
func (p *Program) throughTracedLoss(in []T) []T {
	lossOf := trace.NewFunction(func(in []T) []T { _, loss := p.run(in); return []T{loss} })
	if _, err := lossOf.Call(in...); err != nil {
		panic(err)
	}
	tp := tape.New()
	tp.Watch(in...)
	loss, err := lossOf.Call(in...)
	if err != nil {
		panic(err)
	}
	return tp.Gradient(loss[0], in...)
}

// Seeded random programs at size, in float32, agree with PyTorch's
// float64 evaluation of the same (rounded) inputs: every step's value and
// every input's gradient, eagerly and traced (the graph's fused
// elementwise kernels). The small float64 programs of TestOpsMatchPyTorch
// reach the kernels' scalar and float64 paths; these reach the float32
// vector kernels (AVX-512 or AVX2 where the CPU has them), the blocked
// GEMM and convolutions, the sharded loops and their tails. Only ops
// without jumps are drawn, so that float32 rounding cannot move a kink or
// a tie. -difftest.sizeseeds and -difftest.sizecases run more.
func TestOpsFloat32AtSize(t *testing.T) {
	needTorch(t)
	for _, seed := range parseSeeds(t, *flagSizeSeeds) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			var progs []*Program
			vals, grads, traced, around := map[int][]T{}, map[int][]T{}, map[int][]T{}, map[int][]T{}
			elems := 0
			for id := range *flagSizeCases {
				p := rounded32(generateAtSize(seed, id))
				in := make([]T, len(p.in))
				for i, x := range p.in {
					in[i] = ops.Cast(x, tensor.Float32)
					elems = max(elems, x.Shape().NumElements())
				}
				f := trace.NewFunction(func(in []T) []T {
					v, g := p.eagerly(in)
					return append(v, g...)
				})
				var v, g, tr, ar []T
				err := tensor.Catch(func() {
					v, g = p.eagerly(in)
					if _, err := f.Call(in...); err != nil { // traces
						panic(err)
					}
					var err error
					if tr, err = f.Call(in...); err != nil { // runs the graph
						panic(err)
					}
					ar = p.throughTracedLoss(in)
				})
				if err != nil {
					t.Fatalf("program %d: %v\n%s", id, err, describe(p))
				}
				progs, vals[id], grads[id], traced[id], around[id] = append(progs, p), v, g, tr, ar
			}
			twins := make([]*Program, len(progs))
			for i, p := range progs {
				q := *p
				q.ID, q.Float32 = p.ID+len(progs), true
				twins[i] = &q
			}
			res := runTorch(t, append(slices.Clone(progs), twins...))
			steps := 0
			for _, p := range progs {
				r := resultOf(t, res, p.ID, p)
				if r == nil {
					continue
				}
				steps += len(p.Steps)
				want := r.results()
				r32 := resultOf(t, res, p.ID+len(progs), p)
				if r32 == nil {
					continue
				}
				want32 := r32.results()
				for i, got := range append(append([]T{}, vals[p.ID]...), grads[p.ID]...) {
					what := p.result(i)
					if d := within32(got, want[i], want32[i]); d != "" {
						t.Errorf("program %d, float32 %s: %s\n%s", p.ID, what, d, describe(p))
					}
					if d := within32(traced[p.ID][i], want[i], want32[i]); d != "" {
						t.Errorf("program %d, traced float32 %s: %s\n%s", p.ID, what, d, describe(p))
					}
					if k := i - len(vals[p.ID]); k >= 0 && around[p.ID][k] != nil {
						if d := within32(around[p.ID][k], want[i], want32[i]); d != "" {
							t.Errorf("program %d, float32 %s through the traced loss under a tape: %s\n%s", p.ID, what, d, describe(p))
						}
					}
				}
			}
			t.Logf("seed %d: %d float32 programs, %d steps, inputs up to %d elements: values and gradients, eager, traced and through a traced loss under a tape, within %g of PyTorch's float64",
				seed, len(progs), steps, elems, f32Tol)
		})
	}
}

// The float32 programs at size run on the GPU (the emulator's, or a
// GPU's in the GPU machine's script) within f32Tol of the CPU's float64
// run of the same rounded inputs, or within f32Conditioned times the
// CPU's float32 error where that is larger: values and gradients,
// eagerly. The
// small programs of TestOpsAgreeOnGPU reach one block of each kernel;
// these reach the tiled paths (bands of rows, planes read by parts, the
// reductions' parts folded, grids of many blocks) and their edges.
// -difftest.gpusizecases runs more per seed of -difftest.sizeseeds.
func TestOpsFloat32AtSizeOnGPU(t *testing.T) {
	d := testGPU(t)
	for _, seed := range parseSeeds(t, *flagSizeSeeds) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			steps := 0
			for id := range *flagGPUSizeCases {
				p := rounded32(generateAtSize(seed, id))
				var want, wantGrads []T
				if err := tensor.Catch(func() { want, wantGrads = p.eagerly(p.in) }); err != nil {
					t.Fatalf("program %d in float64 on the CPU: %v\n%s", id, err, describe(p))
				}
				in := make([]T, len(p.in))
				for i, x := range p.in {
					var err error
					if in[i], err = ops.Cast(x, tensor.Float32).To(d); err != nil {
						t.Fatal(err)
					}
				}
				var got, grads, around []T
				if err := tensor.Catch(func() { got, grads = p.eagerly(in) }); err != nil {
					t.Errorf("program %d in float32 on %s: %v\n%s", id, d.Name(), err, describe(p))
					continue
				}
				if err := tensor.Catch(func() { around = p.throughTracedLoss(in) }); err != nil {
					t.Errorf("program %d in float32 on %s, through its traced loss under a tape: %v\n%s", id, d.Name(), err, describe(p))
					continue
				}
				in32 := make([]T, len(p.in))
				for i, x := range p.in {
					in32[i] = ops.Cast(x, tensor.Float32)
				}
				cpu32, cpu32Grads := p.eagerly(in32) // rounding's own error: the conditioning
				own := append(cpu32, cpu32Grads...)
				for i, w := range append(want, wantGrads...) {
					what := p.result(i)
					if diff := within32(append(got, grads...)[i], encode(w), encode(own[i])); diff != "" {
						t.Errorf("program %d, float32 %s on %s: %s\n%s", id, what, d.Name(), diff, describe(p))
					}
					if k := i - len(want); k >= 0 && around[k] != nil {
						if diff := within32(around[k], encode(w), encode(own[i])); diff != "" {
							t.Errorf("program %d, float32 %s on %s through the traced loss under a tape: %s\n%s", id, what, d.Name(), diff, describe(p))
						}
					}
				}
				steps += len(p.Steps)
			}
			t.Logf("seed %d: %d float32 programs at size, %d steps on %s: values and gradients (also through the traced loss under a tape) within %g of the CPU's float64 (or of its float32 error)",
				seed, *flagGPUSizeCases, steps, d.Name(), f32Tol)
		})
	}
}
