package difftest

import (
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

var (
	flagSizeCases = flag.Int("difftest.sizecases", 60, "float32 programs at size per seed (at_size_test.go)")
	flagSizeSeeds = flag.String("difftest.sizeseeds", "1", "comma-separated seeds of the float32 programs at size")
)

// sizeLimit bounds the tensors of a program at size: past the host's
// sharding grain (a kernel's work split over the workers) and the vector
// kernels' blocks, their tails included.
const sizeLimit = 1 << 15

// f32Tol is how far a float32 result may lie from the float64 one, as a
// fraction of the largest magnitude in its tensor (or of 1 below it): a
// few hundred float32 roundings along a program, where a kernel that
// mishandles a tail, a shard or a block is off by the size of its values.
const f32Tol = 2e-4

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

// within32 compares got, a float32 result, with want, PyTorch's float64
// one, to f32Tol of the largest magnitude in want.
func within32(got T, want *Array) string {
	var w []float64
	if want != nil {
		var err error
		if w, err = want.decode(); err != nil {
			return err.Error()
		}
		if got != nil && !got.Shape().Equal(want.Shape) {
			return fmt.Sprintf("shape %v, want %v", got.Shape(), want.Shape)
		}
	}
	var g []float64
	if got != nil {
		g = values(got)
	}
	scale := 1.0
	for _, v := range w {
		scale = math.Max(scale, math.Abs(v))
	}
	for i := range max(len(g), len(w)) {
		a, b := 0.0, 0.0
		if g != nil {
			a = g[i]
		}
		if w != nil {
			b = w[i]
		}
		if !(math.Abs(a-b) <= f32Tol*scale) {
			return fmt.Sprintf("element %d of %d is %.9g, want %.9g (%.2g of the tensor's largest magnitude, %.3g)",
				i, max(len(g), len(w)), a, b, math.Abs(a-b)/scale, scale)
		}
	}
	return ""
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
			vals, grads, traced := map[int][]T{}, map[int][]T{}, map[int][]T{}
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
				var v, g, tr []T
				err := tensor.Catch(func() {
					v, g = p.eagerly(in)
					if _, err := f.Call(in...); err != nil { // traces
						panic(err)
					}
					var err error
					if tr, err = f.Call(in...); err != nil { // runs the graph
						panic(err)
					}
				})
				if err != nil {
					t.Fatalf("program %d: %v\n%s", id, err, describe(p))
				}
				progs, vals[id], grads[id], traced[id] = append(progs, p), v, g, tr
			}
			res := runTorch(t, progs)
			steps := 0
			for _, p := range progs {
				r := res[p.ID]
				if r == nil || r.Error != "" {
					t.Errorf("program %d: PyTorch failed: %v\n%s", p.ID, r, describe(p))
					continue
				}
				steps += len(p.Steps)
				want := append(append([]*Array{}, r.Values...), r.Grads...)
				for i, got := range append(append([]T{}, vals[p.ID]...), grads[p.ID]...) {
					what := fmt.Sprintf("step %d (%s)", i, p.Steps[min(i, len(p.Steps)-1)].Op)
					if i >= len(p.Steps) {
						what = fmt.Sprintf("gradient of input %d", i-len(p.Steps))
					}
					if d := within32(got, want[i]); d != "" {
						t.Errorf("program %d, float32 %s: %s\n%s", p.ID, what, d, describe(p))
					}
					if d := within32(traced[p.ID][i], want[i]); d != "" {
						t.Errorf("program %d, traced float32 %s: %s\n%s", p.ID, what, d, describe(p))
					}
				}
			}
			t.Logf("seed %d: %d float32 programs, %d steps, inputs up to %d elements: values and gradients, eager and traced, within %g of PyTorch's float64",
				seed, len(progs), steps, elems, f32Tol)
		})
	}
}
