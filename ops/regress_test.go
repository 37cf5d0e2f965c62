package ops_test

import (
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Wrong answers that independent checks against PyTorch found; each test
// pins the fix.

// Softplus's gradient is sigmoid(x): 1/2 at exactly 0, where the composed
// form (Relu + log1p(e^-|x|)) gave 0 (Relu' and Abs' are 0 there).
func TestSoftplusGradientAtZero(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		x := ops.Cast(tensor.FromSlice([]float64{0, -0.0, 2, -3}), dt)
		tp := tape.New()
		tp.Watch(x)
		g := tensor.ToSlice[float64](ops.Cast(tp.Gradient(ops.Sum(ops.Softplus(x)), x)[0], tensor.Float64))
		want := []float64{0.5, 0.5, 1 / (1 + math.Exp(-2)), 1 / (1 + math.Exp(3))}
		for i := range want {
			if math.Abs(g[i]-want[i]) > 1e-7 {
				t.Errorf("%v: softplus'(%v) = %v, want %v", dt, []float64{0, -0.0, 2, -3}[i], g[i], want[i])
			}
		}
	}
}

// Relu propagates NaN (float32 through the vector kernel and the Go loop,
// float64), as the package documents for every op.
func TestReluPropagatesNaN(t *testing.T) {
	nan := math.NaN()
	in := []float64{nan, -1, 0, 2, nan, -0.0, 3, nan, nan, -2, 1} // past one vector of 8
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		got := tensor.ToSlice[float64](ops.Cast(ops.Relu(ops.Cast(tensor.FromSlice(in), dt)), tensor.Float64))
		for i, v := range in {
			want := math.Max(v, 0)
			if math.IsNaN(v) {
				if !math.IsNaN(got[i]) {
					t.Errorf("%v: Relu(NaN) = %v", dt, got[i])
				}
				continue
			}
			if got[i] != want || math.Signbit(got[i]) {
				t.Errorf("%v: Relu(%v) = %v, want %v", dt, v, got[i], want)
			}
		}
	}
}

// Softmax and LogSoftmax keep full precision at the largest logit: x - max
// is formed first, so equal large logits give exactly 1/n and -log n.
func TestSoftmaxLargeLogitsExact(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		x := ops.Cast(tensor.FromSlice([]float64{1000, 1000, -1e6, -1e6, 1e5, 1e5, 1e5, 1e5}, 2, 4), dt)
		sm := tensor.ToSlice[float64](ops.Cast(ops.Softmax(x, -1), tensor.Float64))
		ls := tensor.ToSlice[float64](ops.Cast(ops.LogSoftmax(x, -1), tensor.Float64))
		wantSm := []float64{0.5, 0.5, 0, 0, 0.25, 0.25, 0.25, 0.25}
		l2, l4 := -math.Ln2, -2*math.Ln2
		wantLs := []float64{l2, l2, -1e6 - 1000 + l2, -1e6 - 1000 + l2, l4, l4, l4, l4}
		tol := map[tensor.DType]float64{tensor.Float32: 6e-8, tensor.Float64: 1e-16}[dt]
		for i := range wantSm {
			if math.Abs(sm[i]-wantSm[i]) > tol {
				t.Errorf("%v softmax[%d] = %.9g, want %.9g", dt, i, sm[i], wantSm[i])
			}
			if math.Abs(ls[i]-wantLs[i]) > tol*math.Max(1, math.Abs(wantLs[i])) {
				t.Errorf("%v log-softmax[%d] = %.9g, want %.9g", dt, i, ls[i], wantLs[i])
			}
		}
		xe := tensor.ToSlice[float64](ops.Cast(ops.SparseSoftmaxCrossEntropy(x, tensor.FromSlice([]int32{0, 3})), tensor.Float64))
		if math.Abs(xe[0]-math.Ln2) > tol || math.Abs(xe[1]-2*math.Ln2) > tol {
			t.Errorf("%v sparse cross-entropy %v, want [ln 2, 2 ln 2]", dt, xe)
		}
	}
}

// A largest logit far above the others has a log-probability near 0 that
// keeps its relative precision: -log1p(Σ e^(x−m)) over the others, where
// log(1 + Σ) lost the sum's digits below 2^-53 (-1.88e-12 came out 1e-4
// off, relatively), in LogSoftmax and in the sparse cross-entropy; ties
// at the maximum count each.
func TestLogSoftmaxNearZeroKeepsItsDigits(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		x := ops.Cast(tensor.FromSlice([]float64{0, -27, -30, 5, 5, -22}, 2, 3), dt)
		ls := tensor.ToSlice[float64](ops.Cast(ops.LogSoftmax(x, -1), tensor.Float64))
		xe := tensor.ToSlice[float64](ops.Cast(ops.SparseSoftmaxCrossEntropy(x, tensor.FromSlice([]int32{0, 1})), tensor.Float64))
		rest := math.Exp(-27) + math.Exp(-30)
		want := []float64{-math.Log1p(rest), -math.Log(2) - math.Log1p(math.Exp(-27)/2)}
		tol := map[tensor.DType]float64{tensor.Float32: 1e-6, tensor.Float64: 1e-14}[dt]
		for i, g := range []float64{ls[0], ls[3], -xe[0], -xe[1]} {
			w := want[i%2]
			if math.Abs(g-w) > tol*math.Abs(w) {
				t.Errorf("%v: %.17g, want %.17g (relative error %.2g)", dt, g, w, math.Abs(g-w)/math.Abs(w))
			}
		}
	}
}

// A masked class (logit -Inf) whose label is 0 adds nothing to
// SoftmaxCrossEntropy: the loss is the sparse one's, not NaN (0·-Inf), and
// the gradient is unchanged; a label above 0 on a masked class is +Inf.
func TestSoftmaxCrossEntropyOfMaskedClasses(t *testing.T) {
	ninf := math.Inf(-1)
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		logits := ops.Cast(tensor.FromSlice([]float64{1, ninf, 2, ninf, 0, 3}, 2, 3), dt)
		onehot := ops.Cast(tensor.FromSlice([]float64{1, 0, 0, 0, 0, 1}, 2, 3), dt)
		tp := tape.New()
		tp.Watch(logits)
		dense := ops.SoftmaxCrossEntropy(logits, onehot)
		g := tensor.ToSlice[float64](ops.Cast(tp.Gradient(ops.Sum(dense), logits)[0], tensor.Float64))
		sparse := tensor.ToSlice[float64](ops.Cast(ops.SparseSoftmaxCrossEntropy(logits, tensor.FromSlice([]int32{0, 2})), tensor.Float64))
		got := tensor.ToSlice[float64](ops.Cast(dense, tensor.Float64))
		for i := range got {
			if math.IsNaN(got[i]) || math.Abs(got[i]-sparse[i]) > 1e-6 {
				t.Errorf("%v row %d: %v, want the sparse loss %v", dt, i, got[i], sparse[i])
			}
		}
		for i, v := range g {
			if math.IsNaN(v) || (i == 1 || i == 3) && v != 0 {
				t.Errorf("%v gradient %v: element %d is %v", dt, g, i, v)
			}
		}
		on := ops.Cast(tensor.FromSlice([]float64{0, 1, 0}, 1, 3), dt)
		if v := ops.SoftmaxCrossEntropy(ops.Slice(logits, []int{0, 0}, []int{1, 3}, nil), on).Float(); !math.IsInf(v, 1) {
			t.Errorf("%v a label on a masked class: %v, want +Inf", dt, v)
		}
	}
}
