package control_test

import (
	"errors"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/approx"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

type T = *tensor.Tensor

func vals(x T) []float64 { return tensor.ToSlice[float64](x) }

// power computes x^n by repeated multiplication; n is a tensor, so the trip
// count depends on data.
func power(x, n T, opts ...control.WhileOptions) T {
	out := control.While(
		func(v []T) T { return ops.Lt(v[0], n) },
		func(v []T) []T { return []T{ops.Add(v[0], tensor.Scalar(int64(1))), ops.Mul(v[1], x)} },
		[]T{tensor.Scalar(int64(0)), ops.OnesLike(x)}, opts...)
	return out[1]
}

func TestWhilePowerGradient(t *testing.T) {
	for _, ck := range []bool{false, true} {
		for _, n := range []int64{0, 1, 3, 7} {
			x := tensor.FromSlice([]float64{0.5, -1.2, 2})
			tp := tape.New()
			tp.Watch(x)
			y := power(x, tensor.Scalar(n), control.WhileOptions{Checkpoint: ck})
			g := tp.Gradient(y, x)[0]
			want := make([]float64, 3)
			wantY := make([]float64, 3)
			for i, v := range vals(x) {
				wantY[i] = math.Pow(v, float64(n))
				if n > 0 {
					want[i] = float64(n) * math.Pow(v, float64(n-1))
				}
			}
			if d := approx.Diff(vals(y), wantY, 1e-12); d != "" {
				t.Errorf("n=%d checkpoint=%v: value %s", n, ck, d)
			}
			if n == 0 {
				if g != nil {
					t.Errorf("n=0: gradient %v, want nil (x unused)", g)
				}
				continue
			}
			if d := approx.Diff(vals(g), want, 1e-12); d != "" {
				t.Errorf("n=%d checkpoint=%v: gradient %s", n, ck, d)
			}
		}
	}
	r := tape.CheckGradient(func(in []T) T { return power(in[0], tensor.Scalar(int64(4))) },
		[]T{tensor.FromSlice([]float64{0.7, -1.1})}, 0)
	if r.MaxError > 1e-6 {
		t.Error(r)
	}
}

func TestSecondOrderThroughLoop(t *testing.T) {
	x := tensor.FromSlice([]float64{1.5})
	outer := tape.New()
	outer.Watch(x)
	inner := tape.New()
	inner.Watch(x)
	y := power(x, tensor.Scalar(int64(4)))
	inner.Stop()
	dy := inner.Gradient(y, x)[0]  // 4x^3
	d2 := outer.Gradient(dy, x)[0] // 12x^2
	if !approx.Close(dy.Float(), 4*math.Pow(1.5, 3), 1e-12) || !approx.Close(d2.Float(), 12*1.5*1.5, 1e-12) {
		t.Errorf("dy = %v, d2y = %v", dy.Float(), d2.Float())
	}
}

// rnn runs h = tanh(h W + x_t U) with Scan, or unrolled by hand.
func rnn(h0, w, u, xs T, unrolled bool) (T, T) {
	cell := func(h, x T) T { return ops.Tanh(ops.Add(ops.MatMul(h, w), ops.MatMul(x, u))) }
	if unrolled {
		h := h0
		var hs []T
		for _, x := range ops.Unstack(xs, 0) {
			h = cell(h, x)
			hs = append(hs, h)
		}
		return h, ops.Stack(0, hs...)
	}
	carry, ys := control.Scan(func(c, x []T) ([]T, []T) {
		h := cell(c[0], x[0])
		return []T{h}, []T{h}
	}, []T{h0}, []T{xs})
	return carry[0], ys[0]
}

func TestRNNScanMatchesUnrolled(t *testing.T) {
	rng := tensor.NewRNG(9)
	h0 := tensor.RandNormal(rng, tensor.Float64, 1, 6)
	w := ops.Mul(tensor.RandNormal(rng, tensor.Float64, 6, 6), tensor.Scalar(0.3))
	u := ops.Mul(tensor.RandNormal(rng, tensor.Float64, 3, 6), tensor.Scalar(0.5))
	xs := tensor.RandNormal(rng, tensor.Float64, 50, 1, 3)
	grads := func(unrolled bool) []T {
		tp := tape.New()
		tp.Watch(h0, w, u, xs)
		h, hs := rnn(h0, w, u, xs, unrolled)
		loss := ops.Add(ops.Sum(ops.Square(h)), ops.Mean(hs))
		return append([]T{h, hs}, tp.Gradient(loss, h0, w, u, xs)...)
	}
	a, b := grads(false), grads(true)
	for i, name := range []string{"h", "hs", "dh0", "dW", "dU", "dxs"} {
		if !a[i].Shape().Equal(b[i].Shape()) {
			t.Fatalf("%s: shape %v, unrolled %v", name, a[i].Shape(), b[i].Shape())
		}
		if d := approx.Diff(vals(a[i]), vals(b[i]), 1e-12); d != "" {
			t.Errorf("%s: %s", name, d)
		}
	}
	r := tape.CheckGradient(func(in []T) T {
		h, _ := rnn(in[0], in[1], u, ops.Slice(xs, []int{0, 0, 0}, []int{5, 1, 3}, nil), false)
		return h
	}, []T{h0, w}, 0)
	if r.MaxError > 1e-6 {
		t.Error(r)
	}
}

func TestForiCheckpointMatchesStored(t *testing.T) {
	w := tensor.FromSlice([]float64{0.3, -0.2, 0.5, 0.1}, 2, 2)
	grad := func(ck bool) []float64 {
		tp := tape.New()
		tp.Watch(w)
		out := control.Fori(0, 6, func(i T, v []T) []T { return []T{ops.Tanh(ops.MatMul(v[0], w))} },
			[]T{tensor.FromSlice([]float64{1, -1}, 1, 2)}, control.WhileOptions{Checkpoint: ck})
		return vals(tp.Gradient(ops.Sum(out[0]), w)[0])
	}
	if d := approx.Diff(grad(true), grad(false), 1e-12); d != "" {
		t.Error(d)
	}
}

func TestCondInLoopAndNestedLoops(t *testing.T) {
	// Each iteration either doubles or squares acc, by the parity of i.
	f := func(in []T) T {
		x := in[0]
		out := control.Fori(0, 4, func(i T, v []T) []T {
			even := ops.Eq(ops.Rem(i, tensor.Scalar(int64(2))), tensor.Scalar(int64(0)))
			return control.Cond(even,
				func() []T { return []T{ops.Mul(v[0], ops.ScalarLike(x, 2))} },
				func() []T { return []T{ops.Mul(v[0], x)} })
		}, []T{x})
		return out[0]
	}
	x := tensor.FromSlice([]float64{1.3, -0.7})
	// acc: x -> 2x -> 2x^2 -> 4x^2 -> 4x^3.
	if d := approx.Diff(vals(f([]T{x})), []float64{4 * math.Pow(1.3, 3), 4 * math.Pow(-0.7, 3)}, 1e-12); d != "" {
		t.Error(d)
	}
	if r := tape.CheckGradient(f, []T{x}, 0); r.MaxError > 1e-6 {
		t.Error("cond in loop:", r)
	}
	nested := func(in []T) T {
		x := in[0]
		out := control.Fori(0, 3, func(i T, v []T) []T {
			inner := control.Fori(0, 2, func(j T, w []T) []T { return []T{ops.Sin(ops.Mul(w[0], x))} }, v)
			return []T{ops.Add(inner[0], x)}
		}, []T{x})
		return out[0]
	}
	if r := tape.CheckGradient(nested, []T{tensor.FromSlice([]float64{0.4, 0.9})}, 0); r.MaxError > 1e-6 {
		t.Error("nested loops:", r)
	}
	caseFn := func(in []T) T {
		return control.Case(tensor.Scalar(int32(1)),
			func() []T { return []T{in[0]} },
			func() []T { return []T{ops.Exp(in[0])} })[0]
	}
	if r := tape.CheckGradient(caseFn, []T{tensor.FromSlice([]float64{0.3})}, 0); r.MaxError > 1e-6 {
		t.Error("case:", r)
	}
}

func TestZeroTripsAndScanCumsum(t *testing.T) {
	x := tensor.FromSlice([]float64{1, 2})
	tp := tape.New(tape.Options{UnconnectedZeros: true})
	tp.Watch(x)
	out := control.While(func(v []T) T { return tensor.Scalar(false) }, func(v []T) []T { return v }, []T{x})
	if out[0] != x {
		t.Error("a loop that never runs must return its inputs")
	}
	if g := tp.Gradient(ops.Sum(out[0]), x)[0]; vals(g)[0] != 1 {
		t.Errorf("gradient through an empty loop: %v", g)
	}
	xs := tensor.FromSlice([]float64{1, 2, 3, 4}, 4, 1)
	tp2 := tape.New()
	tp2.Watch(xs)
	total, sums := control.Scan(func(c, x []T) ([]T, []T) {
		s := ops.Add(c[0], x[0])
		return []T{s}, []T{s}
	}, []T{tensor.Zeros(tensor.Float64, 1)}, []T{xs})
	if d := approx.Diff(vals(sums[0]), []float64{1, 3, 6, 10}, 0); d != "" || total[0].Float() != 10 {
		t.Errorf("cumulative sums %v total %v", sums[0], total[0])
	}
	// d(sum of running sums)/dx_t = number of sums that include x_t.
	g := tp2.Gradient(ops.Sum(sums[0]), xs)[0]
	if d := approx.Diff(vals(g), []float64{4, 3, 2, 1}, 0); d != "" {
		t.Error(d)
	}
	c, ys := control.Scan(func(c, x []T) ([]T, []T) { return c, []T{x[0]} }, []T{x}, []T{tensor.Zeros(tensor.Float64, 0, 2)})
	if c[0] != x || ys != nil {
		t.Error("a scan over zero steps returns init and no outputs")
	}
}

func TestLoopVariableThatDoesNotMatter(t *testing.T) {
	x, unused := tensor.FromSlice([]float64{2}), tensor.FromSlice([]float64{5})
	for _, zeros := range []bool{false, true} {
		tp := tape.New(tape.Options{UnconnectedZeros: zeros})
		tp.Watch(x, unused)
		out := control.Fori(0, 3, func(i T, v []T) []T { return []T{ops.Mul(v[0], v[0]), v[1]} }, []T{x, unused})
		g := tp.Gradient(out[0], x, unused)
		if !approx.Close(g[0].Float(), 8*math.Pow(2, 7), 1e-12) {
			t.Errorf("d x^8 = %v", g[0])
		}
		if zeros && (g[1] == nil || g[1].Float() != 0) || !zeros && g[1] != nil {
			t.Errorf("UnconnectedZeros=%v: unused loop value's gradient %v", zeros, g[1])
		}
	}
}

func TestConcurrentLoops(t *testing.T) {
	var wg sync.WaitGroup
	for k := 1; k <= 3; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			x := tensor.FromSlice([]float64{1.1})
			for range 20 {
				tp := tape.New()
				tp.Watch(x)
				y := power(x, tensor.Scalar(int64(k+1)))
				g := tp.Gradient(y, x)[0].Float()
				if want := float64(k+1) * math.Pow(1.1, float64(k)); !approx.Close(g, want, 1e-12) {
					t.Errorf("goroutine %d: %v, want %v", k, g, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestControlBadInput(t *testing.T) {
	x := tensor.Zeros(tensor.Float32, 2, 3)
	cases := []struct {
		name string
		fn   func()
		kind error
		msg  string
	}{
		{"non-bool predicate", func() {
			control.While(func(v []T) T { return tensor.Scalar(float32(1)) }, func(v []T) []T { return v }, []T{x})
		}, tensor.ErrDType, "must be a bool scalar, got float32[]"},
		{"non-scalar predicate", func() {
			control.Cond(tensor.FromSlice([]bool{true, false}), func() []T { return nil }, func() []T { return nil })
		}, tensor.ErrDType, "got bool[2]"},
		{"wrong count", func() {
			control.While(func(v []T) T { return tensor.Scalar(true) }, func(v []T) []T { return nil }, []T{x})
		}, tensor.ErrArity, "returned 0 values for 1 loop values"},
		{"changed shape", func() {
			control.Fori(0, 2, func(i T, v []T) []T { return []T{ops.Reshape(v[0], 3, 2)} }, []T{x})
		}, tensor.ErrShape, "loop value 0 changed from float32[2 3] to float32[3 2]"},
		{"changed dtype", func() {
			control.Fori(0, 2, func(i T, v []T) []T { return []T{ops.Cast(v[0], tensor.Float64)} }, []T{x})
		}, tensor.ErrShape, "changed from float32[2 3] to float64[2 3]"},
		{"case index", func() { control.Case(tensor.Scalar(float32(0)), func() []T { return nil }) }, tensor.ErrDType, "int32 or int64 scalar"},
		{"scan lengths", func() {
			control.Scan(func(c, x []T) ([]T, []T) { return c, nil }, nil, []T{tensor.Zeros(tensor.Float32, 2), tensor.Zeros(tensor.Float32, 3)})
		}, tensor.ErrShape, "sequence 1 has 3 steps"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := tensor.Catch(c.fn)
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.msg) || !strings.HasPrefix(err.Error(), "control: ") {
				t.Errorf("got %q, want kind %v containing %q", err, c.kind, c.msg)
			}
		})
	}
}

// Under a tape that releases its intermediates, a While's record goes back
// to the device's buffer cache: its interior values at the end of each
// iteration (those no gradient rule reads), the rest once the gradient is
// taken; the gradient and the loop's result are as without. A keeping
// tape recording too keeps everything.
func TestWhileReleasesItsRecord(t *testing.T) {
	w := tape.NewVariable("w", ops.Mul(tensor.RandNormal(tensor.NewRNG(5), tensor.Float32, 16, 16), tensor.Scalar(float32(0.2))))
	c := tensor.RandNormal(tensor.NewRNG(6), tensor.Float32, 1, 16)
	run := func(opts tape.Options, also bool) (h []float32, g *tensor.Tensor, freed int64) {
		st := device.Host().Stats()
		f0 := st.Frees.Load()
		var outer *tape.Tape
		if also {
			outer = tape.New() // keeps its intermediates
		}
		tp := tape.New(opts)
		out := control.Fori(0, 20, func(i *tensor.Tensor, v []*tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{ops.Tanh(ops.Add(ops.MatMul(v[0], w.Value()), c))}
		}, []*tensor.Tensor{tensor.Zeros(tensor.Float32, 1, 16)}, control.WhileOptions{})
		h = tensor.ToSlice[float32](out[0]) // an intermediate: released with the others
		g = tp.Gradient(ops.Sum(out[0]), w.Value())[0]
		if outer != nil {
			outer.Stop()
		}
		return h, g, st.Frees.Load() - f0
	}
	h0, g0, keptFreed := run(tape.Options{}, false)
	h1, g1, relFreed := run(tape.Options{ReleaseIntermediates: true}, false)
	if !slices.Equal(tensor.ToSlice[float32](g0), tensor.ToSlice[float32](g1)) || !slices.Equal(h0, h1) {
		t.Fatal("the loop's result or gradient differs when its record is released")
	}
	// 20 iterations' MatMul and Add (at once) and Tanh (once the view the
	// next iteration read is released too).
	if relFreed-keptFreed < 3*20 {
		t.Errorf("released %d buffers with ReleaseIntermediates, %d without", relFreed, keptFreed)
	}
	_, g2, bothFreed := run(tape.Options{ReleaseIntermediates: true}, true)
	if !slices.Equal(tensor.ToSlice[float32](g0), tensor.ToSlice[float32](g2)) || bothFreed > keptFreed+20 {
		t.Errorf("with a keeping tape recording too: %d buffers released (%d alone)", bothFreed, keptFreed)
	}
}
