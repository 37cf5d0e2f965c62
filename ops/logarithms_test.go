package ops_test

import (
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Xlogy and Xlog1py: 0·log 0 = 0 (and 0 beside ∞), NaN beside NaN, the
// products elsewhere; broadcasting, a weak scalar, float32; gradients 0
// where x is 0, log y and x/y elsewhere.
func TestXlogyAndXlog1py(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	x := tensor.FromSlice([]float64{0, 0, 0, 2, -1, 0.5, 0})
	y := tensor.FromSlice([]float64{0, inf, nan, 3, 0, -1, -1})
	want := []float64{0, 0, nan, 2 * math.Log(3), inf, nan, 0}
	same := func(got, want float64) bool { return got == want || math.IsNaN(got) && math.IsNaN(want) }
	for i, v := range tensor.ToSlice[float64](ops.Xlogy(x, y)) {
		if !same(v, want[i]) {
			t.Errorf("Xlogy(%v, %v) = %v, want %v", tensor.ToSlice[float64](x)[i], tensor.ToSlice[float64](y)[i], v, want[i])
		}
	}
	want1 := []float64{0, 0, nan, 2 * math.Log(4), -0.0, math.Inf(-1), 0}
	for i, v := range tensor.ToSlice[float64](ops.Xlog1py(x, y)) {
		if !same(v, want1[i]) {
			t.Errorf("Xlog1py(%v, %v) = %v, want %v", tensor.ToSlice[float64](x)[i], tensor.ToSlice[float64](y)[i], v, want1[i])
		}
	}
	if got := tensor.ToSlice[float64](ops.Xlog1py(tensor.FromSlice([]float64{1}), tensor.FromSlice([]float64{1e-20})))[0]; got != 1e-20 {
		t.Errorf("Xlog1py(1, 1e-20) = %v, want 1e-20", got)
	}
	p := tensor.FromSlice([]float32{0, 0.25, 0.5, 1}, 2, 2)
	if got := tensor.ToSlice[float32](ops.Xlogy(p, tensor.Scalar(2.0))); got[0] != 0 || got[3] != float32(math.Ln2) {
		t.Errorf("float32 Xlogy(p, 2) = %v", got)
	}
	if got := ops.Xlogy(tensor.FromSlice([]float64{0, 1}, 2, 1), tensor.FromSlice([]float64{0, math.E, 1})); !got.Shape().Equal(tensor.Shape{2, 3}) || tensor.ToSlice[float64](got)[4] != 1 {
		t.Errorf("Xlogy broadcast: %v", got)
	}
	a, b := tensor.FromSlice([]float64{0, 2, 0, 0}), tensor.FromSlice([]float64{0, 3, 5, -1})
	tp := tape.New()
	tp.Watch(a, b)
	g := tp.Gradient(ops.Sum(ops.Xlogy(a, b)), a, b)
	if ga, gb := tensor.ToSlice[float64](g[0]), tensor.ToSlice[float64](g[1]); ga[0] != 0 || ga[1] != math.Log(3) || ga[2] != math.Log(5) || ga[3] != 0 ||
		gb[0] != 0 || gb[1] != 2.0/3 || gb[2] != 0 || gb[3] != 0 {
		t.Errorf("Xlogy's gradients %v, %v; want [0 ln 3 ln 5 0], [0 2/3 0 0]", ga, gb)
	}
	if v := tensor.ToSlice[float64](ops.Xlogy(tensor.FromSlice([]float64{0}), tensor.FromSlice([]float64{0.5})))[0]; v != 0 || math.Signbit(v) {
		t.Errorf("Xlogy(0, 0.5) = %v, want +0", v)
	}
	runBadInput(t, []badInput{
		{"int", func() { ops.Xlogy(tensor.Zeros(tensor.Int32, 2), tensor.Zeros(tensor.Int32, 2)) }, tensor.ErrDType, "Xlogy"},
		{"shapes", func() { ops.Xlog1py(tensor.Zeros(tensor.Float32, 2), tensor.Zeros(tensor.Float32, 3)) }, tensor.ErrShape, "Xlog1py"},
	})
}

// Logit: its exact values (0 at ½, ±ln 3 at ¼ and ¾), the lower tail's
// digits, ½ + 2⁻³⁰ where log(x/(1-x)) would cancel, the ends and outside;
// Sigmoid's inverse over a sweep; its gradient 1/(x(1-x)); LogitEps.
func TestLogit(t *testing.T) {
	inf, nan := math.Inf(1), math.NaN()
	x := tensor.FromSlice([]float64{0.5, 0.25, 0.75, 1e-300, 0.5 + 0x1p-30, 0, 1, -0.1, 1.1, nan})
	want := []float64{0, -math.Log(3), math.Log(3), -690.7755278982137, 2 * math.Atanh(0x1p-29), -inf, inf, nan, nan, nan}
	for i, v := range tensor.ToSlice[float64](ops.Logit(x)) {
		w := want[i]
		if !(v == w || math.IsNaN(v) && math.IsNaN(w) || math.Abs(v-w) <= 2e-16*math.Abs(w)) {
			t.Errorf("Logit(%v) = %v, want %v", tensor.ToSlice[float64](x)[i], v, w)
		}
	}
	var xs []float64
	for v := -30.0; v <= 30; v += 0.37 {
		xs = append(xs, v)
	}
	back := tensor.ToSlice[float64](ops.Logit(ops.Sigmoid(tensor.FromSlice(xs, len(xs)))))
	for i, v := range xs {
		if math.Abs(back[i]-v) > 1e-15*math.Exp(math.Abs(v))+1e-14 {
			t.Errorf("Logit(Sigmoid(%v)) = %v", v, back[i])
		}
	}
	p := tensor.FromSlice([]float64{0.1, 0.5, 0.9, 0})
	tp := tape.New()
	tp.Watch(p)
	g := tensor.ToSlice[float64](tp.Gradient(ops.Sum(ops.Logit(p)), p)[0])
	for i, v := range []float64{0.1, 0.5, 0.9} {
		if w := 1 / (v * (1 - v)); math.Abs(g[i]-w) > 1e-14*w {
			t.Errorf("Logit'(%v) = %v, want %v", v, g[i], w)
		}
	}
	if !math.IsInf(g[3], 1) {
		t.Errorf("Logit'(0) = %v, want +Inf", g[3])
	}
	q := tensor.FromSlice([]float32{0, 0.5, 1})
	tp = tape.New()
	tp.Watch(q)
	y := ops.LogitEps(q, 1e-6)
	top := float64(float32(1 - 1e-6)) // 1 - eps as float32 holds it
	if v := tensor.ToSlice[float32](y); math.Abs(float64(v[0])+13.81551) > 1e-4 || v[1] != 0 || math.Abs(float64(v[2])-math.Log(top/(1-top))) > 1e-4 {
		t.Errorf("LogitEps([0 0.5 1], 1e-6) = %v, want -13.8155, 0 and %v", v, math.Log(top/(1-top)))
	}
	if gq := tensor.ToSlice[float32](tp.Gradient(ops.Sum(y), q)[0]); gq[0] != 0 || gq[1] != 4 || gq[2] != 0 {
		t.Errorf("LogitEps's gradient %v, want [0 4 0]", gq)
	}
	runBadInput(t, []badInput{
		{"eps", func() { ops.LogitEps(q, 0.7) }, tensor.ErrValue, "eps 0.7"},
		{"int", func() { ops.Logit(tensor.Zeros(tensor.Int64, 2)) }, tensor.ErrDType, "Logit"},
	})
}
