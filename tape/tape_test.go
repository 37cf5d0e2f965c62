package tape_test

import (
	"errors"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eagerflow/eagerflow/internal/approx"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

func vals(x *tensor.Tensor) []float64 { return tensor.ToSlice[float64](x) }

func TestGradientBasics(t *testing.T) {
	x := tensor.FromSlice([]float64{1, 2, 3})
	tp := tape.New()
	tp.Watch(x)
	y := ops.Sum(ops.Mul(x, x)) // dy/dx = 2x
	tp.Stop()
	if d := approx.Diff(vals(tp.Gradient(y, x)[0]), []float64{2, 4, 6}, 0); d != "" {
		t.Error(d)
	}
	err := tensor.Catch(func() { tp.Gradient(y, x) })
	if !errors.Is(err, tensor.ErrValue) {
		t.Errorf("second Gradient on a one-shot tape: %v", err)
	}
}

func TestOpsAfterStopAreNotRecorded(t *testing.T) {
	x := tensor.FromSlice([]float64{3})
	tp := tape.New(tape.Options{Persistent: true})
	tp.Watch(x)
	y := ops.Mul(x, x)
	tp.Stop()
	z := ops.Mul(y, x) // after Stop
	if g := tp.Gradient(z, x)[0]; g != nil {
		t.Errorf("gradient through unrecorded op: %v", g)
	}
	if g := tp.Gradient(y, x)[0]; g.Float() != 6 {
		t.Errorf("dy/dx = %v, want 6", g)
	}
}

func TestUnconnectedSources(t *testing.T) {
	x, u := tensor.FromSlice([]float64{1, 2}), tensor.FromSlice([]float64{5})
	for _, zeros := range []bool{false, true} {
		tp := tape.New(tape.Options{UnconnectedZeros: zeros})
		tp.Watch(x, u)
		g := tp.Gradient(ops.Sum(ops.Exp(x)), x, u)
		if zeros {
			if g[1] == nil || vals(g[1])[0] != 0 {
				t.Errorf("UnconnectedZeros: got %v", g[1])
			}
		} else if g[1] != nil {
			t.Errorf("unconnected source: got %v, want nil", g[1])
		}
	}
	// A tensor the tape never watched gets no gradient either.
	y := tensor.FromSlice([]float64{1})
	tp := tape.New()
	if g := tp.Gradient(ops.Mul(y, y), y)[0]; g != nil {
		t.Errorf("unwatched source: %v", g)
	}
}

func TestVariablesAreWatchedAndAssigned(t *testing.T) {
	w := tape.NewVariable("w", tensor.FromSlice([]float64{1, 2, 3, 4}, 2, 2))
	x := tensor.FromSlice([]float64{1, 1}, 1, 2)
	tp := tape.New()
	loss := ops.Sum(ops.MatMul(x, w.Value()))
	g := tp.Gradient(loss, w.Value())[0]
	if d := approx.Diff(vals(g), []float64{1, 1, 1, 1}, 0); d != "" {
		t.Error(d)
	}
	snapshot := ops.Reshape(w.Value(), 4)
	w.AssignScaled(-0.5, g)
	if d := approx.Diff(vals(w.Value()), []float64{0.5, 1.5, 2.5, 3.5}, 0); d != "" {
		t.Error(d)
	}
	if d := approx.Diff(vals(snapshot), []float64{1, 2, 3, 4}, 0); d != "" {
		t.Errorf("a reshape of a variable changed with it: %s", d)
	}
	w.AssignAdd(tensor.FromSlice([]float64{1, 1, 1, 1}, 2, 2))
	w.AssignSub(tensor.FromSlice([]float64{0.5, 0.5, 0.5, 0.5}, 2, 2))
	if d := approx.Diff(vals(w.Value()), []float64{1, 2, 3, 4}, 0); d != "" {
		t.Error(d)
	}
	// A bad value fails the method called, by its name.
	for name, assign := range map[string]func(*tensor.Tensor){
		"Assign": w.Assign, "AssignAdd": w.AssignAdd, "AssignSub": w.AssignSub,
		"AssignScaled": func(x *tensor.Tensor) { w.AssignScaled(2, x) },
	} {
		err := tensor.Catch(func() { assign(tensor.Zeros(tensor.Float64, 3)) })
		if !errors.Is(err, tensor.ErrShape) || !strings.HasPrefix(err.Error(), "tape: "+name+": ") {
			t.Errorf("bad %s: %v", name, err)
		}
	}
	if d := approx.Diff(vals(w.Value()), []float64{1, 2, 3, 4}, 0); d != "" {
		t.Errorf("failed assign changed the variable: %s", d)
	}
}

// TestTargetAfterStopIsAnError: a target computed after the tape's Stop
// (recorded by an outer tape, so it has a node) has no op on this tape; a
// clear error names it instead of every gradient coming back nil.
func TestTargetAfterStopIsAnError(t *testing.T) {
	x := tensor.FromSlice([]float64{0.5, -1.5})
	outer := tape.New()
	outer.Watch(x)
	inner := tape.New()
	inner.Watch(x)
	y := ops.Mul(x, x)
	inner.Stop()
	late := ops.Sum(y)
	err := tensor.Catch(func() { inner.Gradient(late, x) })
	if !errors.Is(err, tensor.ErrValue) || !strings.Contains(err.Error(), "after this tape's Stop") || !strings.Contains(err.Error(), "by Reduce") {
		t.Errorf("target after Stop: %v", err)
	}
	outer.Stop()
	// The target itself as a source is its own gradient, wherever it was made.
	g := outer.Gradient(late, late, x)
	if d := approx.Diff(vals(g[0]), []float64{1}, 0); d != "" {
		t.Error("target as source:", d)
	}
	if d := approx.Diff(vals(g[1]), []float64{1, -3}, 1e-12); d != "" {
		t.Error("outer gradient:", d)
	}
}

func TestSecondOrderWithNestedTapes(t *testing.T) {
	x := tensor.FromSlice([]float64{0.5, -1.5})
	outer := tape.New()
	outer.Watch(x)
	inner := tape.New()
	inner.Watch(x)
	y := ops.Sum(ops.Mul(ops.Mul(x, x), x)) // y = sum x^3
	inner.Stop()
	dy := inner.Gradient(y, x)[0] // 3x^2
	d2 := outer.Gradient(ops.Sum(dy), x)[0]
	if d := approx.Diff(vals(dy), []float64{0.75, 6.75}, 1e-12); d != "" {
		t.Error("first order:", d)
	}
	if d := approx.Diff(vals(d2), []float64{3, -9}, 1e-12); d != "" {
		t.Error("second order:", d)
	}
	// Second order of tanh: d2/dx2 tanh = -2 tanh (1 - tanh^2).
	z := tensor.FromSlice([]float64{0.3})
	o, i := tape.New(), tape.New()
	o.Watch(z)
	i.Watch(z)
	g := i.Gradient(ops.Tanh(z), z)[0]
	h := o.Gradient(g, z)[0]
	th := math.Tanh(0.3)
	if !approx.Close(h.Float(), -2*th*(1-th*th), 1e-12) {
		t.Errorf("tanh'' = %v, want %v", h.Float(), -2*th*(1-th*th))
	}
}

func TestJacobian(t *testing.T) {
	x := tensor.FromSlice([]float64{1, 2})
	w := tensor.FromSlice([]float64{1, 2, 3, 4, 5, 6}, 3, 2)
	tp := tape.New(tape.Options{Persistent: true})
	tp.Watch(x)
	y := ops.Reshape(ops.MatMul(w, ops.Reshape(x, 2, 1)), 3)
	j := tp.Jacobian(y, x)
	if !j.Shape().Equal(tensor.Shape{3, 2}) {
		t.Fatalf("jacobian shape %v", j.Shape())
	}
	if d := approx.Diff(vals(j), vals(w), 0); d != "" {
		t.Error(d)
	}
}

func TestCustomGradient(t *testing.T) {
	// Clip the gradient of an identity-like function to [-1, 1].
	clipped := tape.CustomGradient(
		func(xs []*tensor.Tensor) []*tensor.Tensor {
			return []*tensor.Tensor{ops.Mul(xs[0], ops.ScalarLike(xs[0], 3))}
		},
		func(xs, ys, dys []*tensor.Tensor) []*tensor.Tensor {
			one := ops.ScalarLike(dys[0], 1)
			return []*tensor.Tensor{ops.Minimum(ops.Maximum(dys[0], ops.Neg(one)), one)}
		})
	x := tensor.FromSlice([]float64{1, 2})
	tp := tape.New()
	tp.Watch(x)
	y := clipped(x)[0]
	if d := approx.Diff(vals(y), []float64{3, 6}, 0); d != "" {
		t.Error(d)
	}
	g := tp.Gradient(ops.Sum(ops.Mul(y, tensor.FromSlice([]float64{5, 0.5}))), x)[0]
	if d := approx.Diff(vals(g), []float64{1, 0.5}, 0); d != "" {
		t.Error(d)
	}
}

// Two goroutines, each with its own tape and variables, get exactly their
// own gradients; run with -race.
func TestConcurrentTapes(t *testing.T) {
	var wg sync.WaitGroup
	for k := 1; k <= 4; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			scale := float64(k)
			w := tape.NewVariable("w", tensor.FromSlice([]float64{scale, scale}))
			for range 50 {
				tp := tape.New()
				y := ops.Sum(ops.Mul(ops.Mul(w.Value(), w.Value()), ops.ScalarLike(w.Value(), scale)))
				g := tp.Gradient(y, w.Value())[0] // 2 k w
				if d := approx.Diff(vals(g), []float64{2 * scale * scale, 2 * scale * scale}, 0); d != "" {
					t.Errorf("goroutine %d: %s", k, d)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestShared(t *testing.T) {
	// A tensor shared by two tapes in two goroutines, watched by both; one
	// Watches while the other differentiates (which once dropped the other
	// tape from the watch set, or moved the key its gradient was held
	// under).
	for range 300 {
		x := tensor.FromSlice([]float64{2})
		var wg sync.WaitGroup
		for k := 1; k <= 2; k++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				tp := tape.New()
				tp.Watch(x)
				y := ops.Pow(x, tensor.FromSlice([]float64{float64(k + 1)}))
				g := tp.Gradient(y, x)[0]
				if want := float64(k+1) * math.Pow(2, float64(k)); g == nil || g.Float() != want { // (k+1) x^k
					t.Errorf("goroutine %d: %v, want %v", k, g, want)
				}
			}()
		}
		wg.Wait()
		if t.Failed() {
			return
		}
	}
}

func TestCheckGradientCatchesAWrongRule(t *testing.T) {
	wrong := tape.CustomGradient(
		func(xs []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{ops.Square(xs[0])} },
		func(xs, ys, dys []*tensor.Tensor) []*tensor.Tensor { return []*tensor.Tensor{dys[0]} }) // should be 2x dy
	r := tape.CheckGradient(func(x []*tensor.Tensor) *tensor.Tensor { return wrong(x...)[0] },
		[]*tensor.Tensor{tensor.FromSlice([]float64{3})}, 0)
	if r.MaxError < 0.5 {
		t.Errorf("checker missed a wrong gradient: %s", r)
	}
}

// Regression: a view op (Reshape) of a non-row-major input (a transposed
// view) once recorded its row-major copy instead of the input, cutting the
// gradient off.
func TestGradientThroughReshapeOfTranspose(t *testing.T) {
	x := tensor.FromSlice([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	tp := tape.New()
	tp.Watch(x)
	y := ops.Reshape(ops.Transpose(x), 6)
	g := tp.Gradient(ops.Sum(ops.Mul(y, tensor.FromSlice([]float64{1, 2, 3, 4, 5, 6}))), x)[0]
	// y = [1 4 2 5 3 6]: x[0,0] has weight 1, x[1,0] weight 2, x[0,1] weight 3...
	if d := approx.Diff(vals(g), []float64{1, 3, 5, 2, 4, 6}, 0); d != "" {
		t.Error(d)
	}
}

// Regression: tensors once shared one allocation with their storage, so a
// view (StopGradient) of a recorded tensor kept that tensor, and with it
// the whole record behind it, alive.
func TestViewDoesNotPinItsSource(t *testing.T) {
	x := tensor.FromSlice([]float64{1, 2})
	tp := tape.New()
	defer tp.Stop()
	tp.Watch(x)
	y := ops.Exp(x)
	collected := make(chan struct{})
	runtime.AddCleanup(y, func(struct{}) { close(collected) }, struct{}{})
	z := ops.StopGradient(y)
	y = nil
	for range 3 {
		runtime.GC()
	}
	select {
	case <-collected:
	case <-time.After(2 * time.Second):
		t.Error("a StopGradient view kept its recorded source alive")
	}
	if got := vals(z); got[0] != math.Exp(1) {
		t.Errorf("view value %v", got)
	}
}

// A tape made with ReleaseIntermediates gives the same gradients, returns
// its intermediates' buffers to the device when Gradient returns (so a
// step repeated allocates none), keeps the target and sources readable,
// and a released intermediate read afterwards panics with ErrReleased.
func TestReleaseIntermediates(t *testing.T) {
	w := tape.NewVariable("w", tensor.RandNormal(tensor.NewRNG(2), tensor.Float32, 64, 64))
	x := tensor.RandNormal(tensor.NewRNG(3), tensor.Float32, 32, 64)
	step := func(opts tape.Options) (loss, h, g *tensor.Tensor) {
		tp := tape.New(opts)
		h = ops.Tanh(ops.MatMul(x, w.Value()))
		loss = ops.Mean(ops.Square(h))
		return loss, h, tp.Gradient(loss, w.Value())[0]
	}
	wantLoss, _, wantG := step(tape.Options{})
	loss, h, g := step(tape.Options{ReleaseIntermediates: true})
	if loss.Float() != wantLoss.Float() || !slices.Equal(tensor.ToSlice[float32](g), tensor.ToSlice[float32](wantG)) {
		t.Fatal("gradients differ with ReleaseIntermediates")
	}
	if err := tensor.Catch(func() { ops.Neg(h) }); !errors.Is(err, tensor.ErrReleased) || !strings.Contains(err.Error(), "released") {
		t.Errorf("reading a released intermediate: %v", err)
	}
	ops.Add(x, x).Release() // the input stays
	perStep := func(opts tape.Options) int64 {
		const steps = 50
		for range 3 { // the device's cache fills
			_, _, g := step(opts)
			g.Release()
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range steps {
			_, _, g := step(opts)
			g.Release()
		}
		runtime.ReadMemStats(&after)
		return int64(after.TotalAlloc-before.TotalAlloc) / steps
	}
	// The forward's three 8 KiB intermediates (MatMul, Tanh, Square) come
	// from the device's cache instead of fresh memory.
	kept, released := perStep(tape.Options{}), perStep(tape.Options{ReleaseIntermediates: true})
	if kept-released < 3*(8<<10) && !raceEnabled {
		t.Errorf("a repeated step allocates %d bytes with ReleaseIntermediates, %d without", released, kept)
	}
	t.Logf("bytes per step: %d without ReleaseIntermediates, %d with", kept, released)
	if err := tensor.Catch(func() { tape.New(tape.Options{Persistent: true, ReleaseIntermediates: true}) }); err == nil {
		t.Error("a persistent tape took ReleaseIntermediates")
	}
}

// AdamUpdate refuses slots or a gradient of another shape with a typed
// error and changes nothing.
func TestAdamUpdateChecks(t *testing.T) {
	w := tape.NewVariable("w", tensor.FromSlice([]float32{1, 2}))
	m, v := tape.NewVariable("m", tensor.Zeros(tensor.Float32, 2)), tape.NewVariable("v", tensor.Zeros(tensor.Float32, 3))
	p := ops.AdamParams{LR: 0.1, Beta1: 0.9, Beta2: 0.999, C1: 0.1, C2: 0.001, Eps: 1e-7}
	if err := tensor.Catch(func() { w.AdamUpdate(m, v, tensor.FromSlice([]float32{1, 1}), p) }); !errors.Is(err, tensor.ErrShape) {
		t.Errorf("a slot of another shape: %v", err)
	}
	if err := tensor.Catch(func() { w.AdamUpdate(m, m, tensor.FromSlice([]float32{1, 1, 1}), p) }); !errors.Is(err, tensor.ErrShape) {
		t.Errorf("a gradient of another shape: %v", err)
	}
	if got := tensor.ToSlice[float32](w.Value()); got[0] != 1 || got[1] != 2 {
		t.Errorf("the variable changed: %v", got)
	}
	if !w.AdamUpdate(m, tape.NewVariable("v2", tensor.Zeros(tensor.Float32, 2)), tensor.FromSlice([]float32{1, -1}), p) {
		t.Fatal("the fused update did not apply on the CPU")
	}
	if got := tensor.ToSlice[float32](w.Value()); !(got[0] < 1 && got[1] > 2) {
		t.Errorf("the step went the wrong way: %v", got)
	}
}

// Every update's GradScale multiplies the gradient first, rounded to the
// variable's dtype, and its GradFactor (a scalar tensor, cast to the
// variable's dtype) next, rounded again: the step equals the same step
// from the gradient scaled by ops (Mul), bit for bit, for every rule and
// both float dtypes, over sizes the host's vector kernels and their
// tails take, from half gradients of float32 variables too; 0 and 1
// leave the gradient as it is. A factor that is not a float scalar is
// refused before anything changes.
func TestUpdatesScaleTheirGradients(t *testing.T) {
	r := tensor.NewRNG(9)
	type update func(w, a, b *tape.Variable, g *tensor.Tensor, gs float64, f *tensor.Tensor)
	for name, step := range map[string]update{
		"Adam": func(w, a, b *tape.Variable, g *tensor.Tensor, gs float64, f *tensor.Tensor) {
			tape.AdamUpdateAll([]*tape.Variable{w}, []*tape.Variable{a}, []*tape.Variable{b}, []*tensor.Tensor{g},
				ops.AdamParams{LR: 0.01, Beta1: 0.9, Beta2: 0.999, C1: 0.1, C2: 0.001, Eps: 1e-7, GradScale: gs, GradFactor: f})
		},
		"Nesterov": func(w, a, _ *tape.Variable, g *tensor.Tensor, gs float64, f *tensor.Tensor) {
			tape.MomentumUpdateAll([]*tape.Variable{w}, []*tape.Variable{a}, []*tensor.Tensor{g},
				ops.MomentumParams{LR: 0.01, Momentum: 0.9, Nesterov: true, GradScale: gs, GradFactor: f})
		},
		"RMSProp with momentum": func(w, a, b *tape.Variable, g *tensor.Tensor, gs float64, f *tensor.Tensor) {
			tape.RMSPropUpdateAll([]*tape.Variable{w}, []*tape.Variable{a}, []*tape.Variable{b}, []*tensor.Tensor{g},
				ops.RMSPropParams{LR: 0.01, Rho: 0.9, Eps: 1e-7, Momentum: 0.5, GradScale: gs, GradFactor: f})
		},
	} {
		for _, c := range []struct {
			w, g tensor.DType
			gs   float64
			f    float32 // 0: no factor
		}{
			{tensor.Float32, tensor.Float32, 0.37, 0}, {tensor.Float64, tensor.Float64, 0.37, 0},
			{tensor.Float32, tensor.Float16, 0x1p-15, 0}, {tensor.Float32, tensor.Float32, 0, 0}, {tensor.Float32, tensor.Float32, 1, 0},
			{tensor.Float32, tensor.Float32, 0.37, 0.731}, {tensor.Float64, tensor.Float64, 1, 0.731},
			{tensor.Float32, tensor.BFloat16, 0x1p-15, 0.731}, {tensor.Float32, tensor.Float32, 1, 1},
		} {
			x := tensor.RandNormal(r, c.w, 37)
			g := ops.Cast(tensor.RandNormal(r, tensor.Float32, 37), c.g)
			want := ops.Cast(g, c.w)
			if c.gs != 0 {
				want = ops.Mul(want, ops.ScalarLike(want, c.gs))
			}
			var f *tensor.Tensor
			if c.f != 0 {
				f = tensor.Scalar(c.f)
				want = ops.Mul(want, ops.Cast(f, c.w))
			}
			var got [2][]byte
			for k, args := range []struct {
				g  *tensor.Tensor
				gs float64
				f  *tensor.Tensor
			}{{g, c.gs, f}, {want, 1, nil}} {
				w := tape.NewVariable("w", x)
				a, b := tape.NewVariable("a", ops.Abs(x)), tape.NewVariable("b", ops.Abs(x))
				for range 2 {
					step(w, a, b, args.g, args.gs, args.f)
				}
				got[k] = slices.Concat(w.Value().HostBytes(), a.Value().HostBytes(), b.Value().HostBytes())
			}
			if !slices.Equal(got[0], got[1]) {
				t.Errorf("%s, %v variable, %v gradient times %g and %v: the step differs from the step of the gradient scaled by Mul", name, c.w, c.g, c.gs, c.f)
			}
		}
		w := tape.NewVariable("w", tensor.FromSlice([]float32{1, 2}))
		a, b := tape.NewVariable("a", tensor.Zeros(tensor.Float32, 2)), tape.NewVariable("b", tensor.Zeros(tensor.Float32, 2))
		for what, f := range map[string]*tensor.Tensor{"a vector": tensor.FromSlice([]float32{1, 1}), "an integer": tensor.Scalar(int32(1))} {
			err := tensor.Catch(func() { step(w, a, b, tensor.FromSlice([]float32{1, -1}), 1, f) })
			if !errors.Is(err, tensor.ErrDType) || !strings.Contains(err.Error(), "gradient factor") {
				t.Errorf("%s, a factor of %s: %v", name, what, err)
			}
		}
		if got := tensor.ToSlice[float32](w.Value()); got[0] != 1 || got[1] != 2 {
			t.Errorf("%s: a refused factor changed the variable: %v", name, got)
		}
	}
}
