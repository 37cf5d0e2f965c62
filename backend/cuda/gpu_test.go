package cuda

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/approx"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
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
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Uint8} {
		for _, shapes := range [][2][]int{{{5, 3}, {3, 4}}, {{2, 5, 3}, {2, 3, 4}}, {{2, 5, 3}, {3, 4}}, {{5, 3}, {2, 3, 4}}, {{1, 7}, {7, 1}}} {
			for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
				sa, sb := append([]int(nil), shapes[0]...), append([]int(nil), shapes[1]...)
				if tr[0] {
					sa[len(sa)-1], sa[len(sa)-2] = sa[len(sa)-2], sa[len(sa)-1]
				}
				if tr[1] {
					sb[len(sb)-1], sb[len(sb)-2] = sb[len(sb)-2], sb[len(sb)-1]
				}
				a := ops.Cast(tensor.RandUniform(r, tensor.Float64, -5, 5, sa...), dt)
				b := ops.Cast(tensor.RandUniform(r, tensor.Float64, -5, 5, sb...), dt)
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
	agreeWithin(t, what, got, want, approx.Tolerance(want.DType()))
}

// agreeWithin is agree within tol.
func agreeWithin(t testing.TB, what string, got, want *tensor.Tensor, tol float64) {
	t.Helper()
	if got.Device().Kind() == want.Device().Kind() {
		t.Fatalf("%s: the result is on %s", what, got.Device().Name())
	}
	if !got.Shape().Equal(want.Shape()) || got.DType() != want.DType() {
		t.Fatalf("%s: got %s, want %s", what, tensor.Describe(got), tensor.Describe(want))
	}
	g := tensor.ToSlice[float64](ops.Cast(onHost(t, got), tensor.Float64))
	w := tensor.ToSlice[float64](ops.Cast(want, tensor.Float64))
	if d := approx.Diff(g, w, tol); d != "" {
		t.Fatalf("%s: %s", what, d)
	}
}

// Reduce on the GPU agrees with the CPU for every kind and dtype, on rows
// longer than a block and more rows than the grid, on columns, and on
// reduced dimensions that are not one block; NaN propagates through max
// and min.
func TestReduceOnGPU(t *testing.T) {
	d := testGPU(t)
	r := tensor.NewRNG(11)
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Uint8, tensor.BFloat16, tensor.Float16} {
		for _, c := range []struct {
			shape []int
			dims  []int
		}{{[]int{3, 1000}, []int{1}}, {[]int{300, 5}, []int{1}}, {[]int{7, 9, 4}, []int{1}}, {[]int{4, 5, 6}, []int{0, 2}},
			{[]int{2, 3}, nil}, {[]int{0, 4}, []int{1}}, {[]int{4, 0}, []int{1}}, {[]int{}, nil}} {
			x := ops.Cast(tensor.RandUniform(r, tensor.Float64, -3, 3, c.shape...), dt)
			switch {
			case dt == tensor.Uint8:
				x = ops.Cast(tensor.RandUniform(r, tensor.Float64, 0, 4, c.shape...), dt)
			case dt.IsHalf(): // products that underflow in any order, where [-3, 3]'s overflow float32 in some orders only
				x = ops.Cast(tensor.RandUniform(r, tensor.Float64, -1.5, 1.5, c.shape...), dt)
			}
			for kind := ops.ReduceSum; kind <= ops.ReduceProd; kind++ {
				if kind == ops.ReduceMean && !dt.IsFloat() {
					continue
				}
				red := ops.Reduction{Kind: kind, Dims: c.dims}
				what := fmt.Sprintf("%v %v over %v kind %d", dt, c.shape, c.dims, kind)
				want := ops.Reduce(x, red)
				agree(t, what, ops.Reduce(onGPU(t, d, x), red), want)
			}
		}
	}
	// Folds long enough to go in passes (kernels.ReduceParts): rows of
	// several parts, a whole-tensor fold, columns of three passes;
	// columns folded by blocks (reduce_colsb: groups of 32 columns, the
	// last one part empty, several outer indices, after passes of the
	// thread kernel); dimensions at both ends folded in two stages; a NaN
	// in a later part or warp still wins.
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Uint8, tensor.BFloat16} { // bfloat16: partials in float32
		for _, c := range []struct {
			shape []int
			dims  []int
		}{{[]int{2, 9000}, []int{1}}, {[]int{100, 130}, nil}, {[]int{300, 3}, []int{0}}, {[]int{2, 700, 3}, []int{1}},
			{[]int{100, 40}, []int{0}}, {[]int{3, 50, 33}, []int{1}}, {[]int{5000, 3}, []int{0}}, {[]int{2, 300, 70}, []int{1}},
			{[]int{8, 3, 20, 20}, []int{0, 2, 3}}} { // NCHW's bias gradient: rows, then columns
			lo, hi := -3.0, 3.0
			if dt == tensor.Uint8 {
				lo = 0
			}
			x := ops.Cast(tensor.RandUniform(r, tensor.Float64, lo, hi, c.shape...), dt)
			near1 := ops.Cast(tensor.RandUniform(r, tensor.Float64, 0.99, 1.01, c.shape...), dt) // products that stay finite in any order
			for kind := ops.ReduceSum; kind <= ops.ReduceProd; kind++ {
				if kind == ops.ReduceMean && !dt.IsFloat() {
					continue
				}
				in := x
				if kind == ops.ReduceProd && dt.IsFloat() {
					in = near1
				}
				red := ops.Reduction{Kind: kind, Dims: c.dims}
				// Sums of terms up to 3 in either order differ by up to
				// the folds' rounding: n·eps·3 for n terms.
				tol := approx.Tolerance(dt)
				if (kind == ops.ReduceSum || kind == ops.ReduceMean) && dt == tensor.Float32 {
					tol = max(tol, float64(in.NumElements()/ops.Reduce(in, red).NumElements())*0x1p-24*3)
				}
				what := fmt.Sprintf("%v %v over %v kind %d, in passes", dt, c.shape, c.dims, kind)
				agreeWithin(t, what, ops.Reduce(onGPU(t, d, in), red), ops.Reduce(in, red), tol)
			}
		}
	}
	long := make([]float32, 9000)
	long[8000] = float32(math.NaN())
	for _, kind := range []ops.ReduceKind{ops.ReduceMax, ops.ReduceMin, ops.ReduceSum} {
		red := ops.Reduction{Kind: kind}
		xl := tensor.FromSlice(long, 9000)
		agree(t, fmt.Sprintf("NaN in a later part, kind %d", kind), ops.Reduce(onGPU(t, d, xl), red), ops.Reduce(xl, red))
	}
	cols := make([]float32, 200)
	cols[2*77+1] = float32(math.NaN()) // row 77: the block's sixth warp
	for _, kind := range []ops.ReduceKind{ops.ReduceMax, ops.ReduceMin, ops.ReduceSum} {
		red := ops.Reduction{Kind: kind, Dims: []int{0}}
		xc := tensor.FromSlice(cols, 100, 2)
		agree(t, fmt.Sprintf("NaN in a later warp's rows, kind %d", kind), ops.Reduce(onGPU(t, d, xc), red), ops.Reduce(xc, red))
	}
	x := tensor.FromSlice([]float32{1, float32(math.NaN()), 3, -1}, 2, 2)
	for _, kind := range []ops.ReduceKind{ops.ReduceMax, ops.ReduceMin} {
		for _, dims := range [][]int{{0}, {1}} {
			red := ops.Reduction{Kind: kind, Dims: dims}
			agree(t, fmt.Sprintf("NaN kind %d dims %v", kind, dims), ops.Reduce(onGPU(t, d, x), red), ops.Reduce(x, red))
		}
	}
}

// The softmax family on rows longer than a block and more rows than the
// grid, with infinities and NaN; a label out of range fails the call
// naming it, as on the CPU.
func TestSoftmaxOnGPU(t *testing.T) {
	d := testGPU(t)
	r := tensor.NewRNG(13)
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for _, shape := range [][]int{{3, 700}, {300, 4}, {5}} {
			x := tensor.RandNormal(r, dt, shape...)
			gx := onGPU(t, d, x)
			agree(t, fmt.Sprintf("Softmax %v%v", dt, shape), ops.Softmax(gx, -1), ops.Softmax(x, -1))
			agree(t, fmt.Sprintf("LogSoftmax %v%v", dt, shape), ops.LogSoftmax(gx, -1), ops.LogSoftmax(x, -1))
		}
		special := ops.Cast(tensor.FromSlice([]float64{1, math.Inf(-1), 2, math.NaN(), 0, 1, math.Inf(1), 0}, 4, 2), dt)
		agree(t, "Softmax of specials", ops.Softmax(onGPU(t, d, special), -1), ops.Softmax(special, -1))
		// A largest logit far above the others: its log-probability near 0
		// (-1.88e-12) keeps its relative precision, as on the CPU.
		far := ops.Cast(tensor.FromSlice([]float64{0, -27, -30, 5, 5, -22}, 2, 3), dt)
		near := tensor.ToSlice[float64](ops.Cast(onHost(t, ops.LogSoftmax(onGPU(t, d, far), -1)), tensor.Float64))
		want := -math.Log1p(math.Exp(-27) + math.Exp(-30))
		if tol := map[tensor.DType]float64{tensor.Float32: 1e-6, tensor.Float64: 1e-14}[dt]; math.Abs(near[0]-want) > tol*-want {
			t.Errorf("%v: the log-probability near 0 is %.17g, want %.17g", dt, near[0], want)
		}
		logits := tensor.RandNormal(r, dt, 300, 10)
		for _, ldt := range []tensor.DType{tensor.Int32, tensor.Int64} {
			labels := ops.Cast(tensor.RandUniform(r, tensor.Float64, 0, 10, 300), ldt)
			agree(t, fmt.Sprintf("SparseSoftmaxCrossEntropy %v %v", dt, ldt),
				ops.SparseSoftmaxCrossEntropy(onGPU(t, d, logits), onGPU(t, d, labels)), ops.SparseSoftmaxCrossEntropy(logits, labels))
		}
	}
	// A label out of range is found by the kernel (its row's loss is NaN)
	// and reported at the next synchronisation, here the read of the loss.
	bad := onGPU(t, d, tensor.FromSlice([]int32{1, 7}, 2))
	var loss *tensor.Tensor
	if err := tensor.Catch(func() { loss = ops.SparseSoftmaxCrossEntropy(onGPU(t, d, tensor.Zeros(tensor.Float32, 2, 3)), bad) }); err != nil {
		t.Fatalf("the op failed before the device ran it: %v", err)
	}
	err := tensor.Catch(func() { tensor.ToSlice[float32](loss) })
	if !errors.Is(err, tensor.ErrIndex) || !strings.Contains(err.Error(), "label 7 at row 1") || !strings.Contains(err.Error(), "SparseSoftmaxCrossEntropy") {
		t.Fatalf("a label out of range, at the read of the loss: %v", err)
	}
	if got := tensor.ToSlice[float32](loss); !math.IsNaN(float64(got[1])) || math.IsNaN(float64(got[0])) {
		t.Errorf("losses %v: the bad row's is NaN, the other's not", got)
	}
}

// Gather, its gradient, Scatter and ScatterAdd on the GPU, along each axis, with
// repeated indices of both index dtypes, agree with the CPU; an index out
// of range is an error at the next synchronisation naming it.
func TestGatherScatterOnGPU(t *testing.T) {
	d := testGPU(t)
	r := tensor.NewRNG(17)
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Bool} {
		base := ops.Cast(tensor.RandUniform(r, tensor.Float64, 0, 5, 3, 4, 5), dt)
		for axis := range 3 {
			for _, idt := range []tensor.DType{tensor.Int32, tensor.Int64} {
				idx := ops.Cast(tensor.FromSlice([]float64{2, 0, 2, 1, 2}, 5), idt)
				what := fmt.Sprintf("%v axis %d %v indices", dt, axis, idt)
				agree(t, "Gather "+what, ops.Gather(onGPU(t, d, base), onGPU(t, d, idx), axis), ops.Gather(base, idx, axis))
				shape := base.Shape().Clone()
				shape[axis] = 5
				upd := ops.Cast(tensor.RandUniform(r, tensor.Float64, 0, 5, shape...), dt)
				agree(t, "Scatter "+what, ops.Scatter(onGPU(t, d, base), onGPU(t, d, idx), onGPU(t, d, upd), axis), ops.Scatter(base, idx, upd, axis))
				if dt != tensor.Bool {
					agree(t, "ScatterAdd "+what, ops.ScatterAdd(onGPU(t, d, base), onGPU(t, d, idx), onGPU(t, d, upd), axis), ops.ScatterAdd(base, idx, upd, axis))
				}
				if dt.IsFloat() { // Gather's gradient: ScatterAddZeros
					grad := func(base, idx, upd *tensor.Tensor) *tensor.Tensor {
						tp := tape.New()
						tp.Watch(base)
						return tp.GradientSeeded(ops.Gather(base, idx, axis), upd, base)[0]
					}
					agree(t, "Gather's gradient "+what, grad(onGPU(t, d, base), onGPU(t, d, idx), onGPU(t, d, upd)), grad(base, idx, upd))
				}
			}
		}
	}
	// Indices out of range are found by the kernels and reported at the
	// next synchronisation, the first of them in queue order; a bad index
	// gathers zero and updates nothing.
	g := ops.Gather(onGPU(t, d, tensor.Ones(tensor.Float32, 3, 2)), onGPU(t, d, tensor.FromSlice([]int64{0, 3, -1}, 3)), 0)
	sc := ops.ScatterAdd(onGPU(t, d, tensor.Ones(tensor.Float32, 3)), onGPU(t, d, tensor.FromSlice([]int32{2, 9}, 2)),
		onGPU(t, d, tensor.FromSlice([]float32{5, 6}, 2)), 0)
	err := d.Synchronize()
	if !errors.Is(err, tensor.ErrIndex) || !strings.Contains(err.Error(), "Gather: index 3 at position 1") {
		t.Fatalf("an index out of range, at the synchronisation: %v", err)
	}
	if err := d.Synchronize(); err != nil {
		t.Errorf("a second synchronisation reports again: %v", err)
	}
	if got := tensor.ToSlice[float32](g); !slices.Equal(got, []float32{1, 1, 0, 0, 0, 0}) {
		t.Errorf("Gather with bad indices gave %v", got)
	}
	if got := tensor.ToSlice[float32](sc); !slices.Equal(got, []float32{1, 1, 6}) {
		t.Errorf("ScatterAdd with a bad index gave %v", got)
	}
}

// TakeAlongAxis, its adjoint, ArgMax/ArgMin, ArgSort, TopK, Cumsum and Cumprod
// along each axis agree with the CPU, ties taking the first and NaN counting as
// the extreme (integer products wrap as the CPU's do).
func TestAlongAxisOnGPU(t *testing.T) {
	d := testGPU(t)
	r := tensor.NewRNG(19)
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Uint8} {
		x := ops.Cast(tensor.RandUniform(r, tensor.Float64, 0, 4, 3, 4, 5), dt) // ties
		for axis := range 3 {
			shape := x.Shape().Clone()
			shape[axis] = 6
			idx := ops.Cast(tensor.RandUniform(r, tensor.Float64, 0, float64(x.Dim(axis)), shape...), tensor.Int64)
			upd := ops.Cast(tensor.RandUniform(r, tensor.Float64, 0, 4, shape...), dt)
			what := fmt.Sprintf("%v axis %d", dt, axis)
			agree(t, "TakeAlongAxis "+what, ops.TakeAlongAxis(onGPU(t, d, x), onGPU(t, d, idx), axis), ops.TakeAlongAxis(x, idx, axis))
			agree(t, "ArgMax "+what, ops.ArgMax(onGPU(t, d, x), axis), ops.ArgMax(x, axis))
			agree(t, "ArgMin "+what, ops.ArgMin(onGPU(t, d, x), axis), ops.ArgMin(x, axis))
			for _, desc := range []bool{false, true} {
				agree(t, fmt.Sprintf("ArgSort %s descending %v", what, desc), ops.ArgSort(onGPU(t, d, x), axis, desc), ops.ArgSort(x, axis, desc))
			}
			for _, flags := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
				agree(t, fmt.Sprintf("Cumsum %s exclusive, reverse %v", what, flags),
					ops.Cumsum(onGPU(t, d, x), axis, flags[0], flags[1]), ops.Cumsum(x, axis, flags[0], flags[1]))
				agree(t, fmt.Sprintf("Cumprod %s exclusive, reverse %v", what, flags),
					ops.Cumprod(onGPU(t, d, x), axis, flags[0], flags[1]), ops.Cumprod(x, axis, flags[0], flags[1]))
			}
			// The adjoint, through TakeAlongAxis's gradient.
			grad := func(x, idx, upd *tensor.Tensor) *tensor.Tensor {
				tp := tape.New()
				tp.Watch(x)
				return tp.GradientSeeded(ops.TakeAlongAxis(x, idx, axis), upd, x)[0]
			}
			if dt.IsFloat() {
				agree(t, "PutAlongAxisAddZeros "+what, grad(onGPU(t, d, x), onGPU(t, d, idx), onGPU(t, d, upd)), grad(x, idx, upd))
			}
		}
	}
	nan := tensor.FromSlice([]float32{1, float32(math.NaN()), 3, float32(math.NaN())}, 4)
	agree(t, "ArgMax with NaN", ops.ArgMax(onGPU(t, d, nan), 0), ops.ArgMax(nan, 0))
	agree(t, "ArgMin with NaN", ops.ArgMin(onGPU(t, d, nan), 0), ops.ArgMin(nan, 0))
	long := tensor.RandNormal(r, tensor.Float64, 2, 37)
	long = ops.Where(ops.Gt(long, ops.ScalarLike(long, 1)), ops.FullLike(long, math.NaN()), long)
	for _, desc := range []bool{false, true} {
		agree(t, "ArgSort with NaN", ops.ArgSort(onGPU(t, d, long), 1, desc), ops.ArgSort(long, 1, desc))
	}
	// TopK's places: the sort's first k (some, none, all), rank 1 and 3.
	for _, x := range []*tensor.Tensor{long, ops.Cast(tensor.RandUniform(r, tensor.Float64, 0, 4, 2, 3, 40), tensor.Int32), tensor.RandNormal(r, tensor.Float32, 50)} {
		for _, k := range []int{0, 1, 3, x.Dim(-1)} {
			gv, gi := ops.TopK(onGPU(t, d, x), k)
			cv, ci := ops.TopK(x, k)
			what := fmt.Sprintf("TopK %v%v k %d", x.DType(), x.Shape(), k)
			agree(t, what+" indices", gi, ci)
			agree(t, what+" values", gv, cv)
		}
	}
}

// A bfloat16 fold runs as bfloat16 (its own kernels, partials in float32),
// not through casts to float32: one launch a pass.
func TestHalfReduceLaunches(t *testing.T) {
	d := testGPU(t)
	ctx, ok := d.ctx.(*emu.Context)
	if !ok {
		t.Skip("counts the emulator's launches")
	}
	x := onGPU(t, d, ops.Cast(tensor.RandUniform(tensor.NewRNG(2), tensor.Float64, -1, 1, 4, 300), tensor.BFloat16))
	if err := d.Synchronize(); err != nil {
		t.Fatal(err)
	}
	before := ctx.Launches
	y := ops.Sum(x, 1)
	if err := d.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if n := ctx.Launches - before; n != 1 || y.DType() != tensor.BFloat16 {
		t.Errorf("a bfloat16 row sum launched %d kernels (want 1) into %v", n, y.DType())
	}
}

// A bias gradient's fold over the batch (and positions) takes few
// launches: one where a block folds it (128 rows), three over 128 images
// of 28x28 (a first pass for the GPU's threads, a second, the block).
func TestColumnFoldLaunches(t *testing.T) {
	d := testGPU(t)
	ctx, ok := d.ctx.(*emu.Context)
	if !ok {
		t.Skip("counts the emulator's launches")
	}
	for _, c := range []struct {
		shape  []int
		dims   []int
		launch int
	}{{[]int{128, 128}, []int{0}, 1}, {[]int{128, 28, 28, 32}, []int{0, 1, 2}, 3}} {
		x := onGPU(t, d, tensor.RandUniform(tensor.NewRNG(3), tensor.Float32, -1, 1, c.shape...))
		if err := d.Synchronize(); err != nil {
			t.Fatal(err)
		}
		before := ctx.Launches
		ops.Sum(x, c.dims...)
		if err := d.Synchronize(); err != nil {
			t.Fatal(err)
		}
		if n := ctx.Launches - before; n != c.launch {
			t.Errorf("a sum of %v over %v launched %d kernels, want %d", c.shape, c.dims, n, c.launch)
		}
	}
}
