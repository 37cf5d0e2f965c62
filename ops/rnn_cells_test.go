package ops_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/internal/approx"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// lstmWritten is LSTMCell written in ops: the reference (the gate terms
// added in float32 for the half types, as the op adds them).
func lstmWritten(xz, hz, c *tensor.Tensor) (h, next *tensor.Tensor) {
	w, dt := c.Dim(1), c.DType()
	z := ops.Add(xz, hz)
	if dt.IsHalf() {
		z, c = ops.Add(ops.Cast(xz, tensor.Float32), ops.Cast(hz, tensor.Float32)), ops.Cast(c, tensor.Float32)
	}
	g := ops.Split(z, 1, []int{w, w, w, w})
	next = ops.Add(ops.Mul(ops.Sigmoid(g[1]), c), ops.Mul(ops.Sigmoid(g[0]), ops.Tanh(g[2])))
	h = ops.Mul(ops.Sigmoid(g[3]), ops.Tanh(next))
	if dt.IsHalf() {
		return ops.Cast(h, dt), ops.Cast(next, dt)
	}
	return h, next
}

// LSTMCell's values, first and second derivatives are those of the cell
// written in ops, in float64 and float32 and through float32 for the half
// types; its gradients pass finite differences to the second order, each
// gate term's gradient the pre-activations'.
func TestLSTMCell(t *testing.T) {
	r := tensor.NewRNG(5)
	// A hand value: c = 2, one row; z = xz + hz = [0, ln 3, 0, 0]: i = o =
	// 1/2, f = 3/4, g = 0.
	xz1, hz1 := tensor.FromSlice([]float64{1, math.Log(3) - 2, -0.5, 3}, 1, 4), tensor.FromSlice([]float64{-1, 2, 0.5, -3}, 1, 4)
	h1, c1 := ops.LSTMCell(xz1, hz1, tensor.FromSlice([]float64{2}, 1, 1))
	check(t, "by hand: next", c1, tensor.Shape{1, 1}, []float64{1.5})
	check(t, "by hand: h", h1, tensor.Shape{1, 1}, []float64{0.5 * math.Tanh(1.5)})
	for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32, tensor.BFloat16, tensor.Float16} {
		xz := ops.Cast(tensor.RandUniform(r, tensor.Float64, -3, 3, 5, 12), dt)
		hz := ops.Cast(tensor.RandUniform(r, tensor.Float64, -1, 1, 5, 12), dt)
		c := ops.Cast(tensor.RandUniform(r, tensor.Float64, -2, 2, 5, 3), dt)
		tol := map[tensor.DType]float64{tensor.Float64: 1e-14, tensor.Float32: 1e-6, tensor.BFloat16: 1e-2, tensor.Float16: 2e-3}[dt]
		h, next := ops.LSTMCell(xz, hz, c)
		wh, wnext := lstmWritten(xz, hz, c)
		near(t, fmt.Sprintf("%v h", dt), h, wh, tol)
		near(t, fmt.Sprintf("%v next", dt), next, wnext, tol)
		if h.DType() != dt || next.DType() != dt {
			t.Fatalf("%v: results in %v and %v", dt, h.DType(), next.DType())
		}
		// First and second derivatives, through a loss that uses both
		// outputs nonlinearly.
		grads := func(cell func(xz, hz, c *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor)) []*tensor.Tensor {
			return firstAndSecond([]*tensor.Tensor{xz, hz, c}, func(in []*tensor.Tensor) *tensor.Tensor {
				h, next := cell(in[0], in[1], in[2])
				return ops.Sum(ops.Add(ops.Mul(h, h), ops.Sin(next)))
			}, func(g []*tensor.Tensor) *tensor.Tensor {
				return ops.Add(ops.Sum(ops.Square(g[0])), ops.Sum(g[2]))
			})
		}
		got, want := grads(ops.LSTMCell), grads(lstmWritten)
		for k, name := range []string{"dxz", "dhz", "dc", "second dxz", "second dhz", "second dc"} {
			near(t, fmt.Sprintf("%v %s", dt, name), got[k], want[k], 10*tol)
		}
	}
	xz := tensor.RandUniform(r, tensor.Float64, -2, 2, 3, 8)
	hz := tensor.RandUniform(r, tensor.Float64, -1, 1, 3, 8)
	c := tensor.RandUniform(r, tensor.Float64, -2, 2, 3, 2)
	runGradients(t, []gradCase{
		{"h", func(x []T) T { h, _ := ops.LSTMCell(x[0], x[1], x[2]); return ops.Sum(ops.Square(h)) }, []T{xz, hz, c}},
		{"next", func(x []T) T { _, n := ops.LSTMCell(x[0], x[1], x[2]); return ops.Sum(ops.Sin(n)) }, []T{xz, hz, c}},
		{"both, second order", func(x []T) T {
			tp := tape.New()
			tp.Watch(x[0], x[1], x[2])
			h, n := ops.LSTMCell(x[0], x[1], x[2])
			g := tp.Gradient(ops.Sum(ops.Mul(h, n)), x[0], x[1], x[2])
			return ops.Add(ops.Add(ops.Sum(ops.Square(g[0])), ops.Sum(ops.Mul(g[1], x[1]))), ops.Sum(ops.Mul(g[2], x[2])))
		}, []T{xz, hz, c}},
		{"one tensor as both terms", func(x []T) T { h, n := ops.LSTMCell(x[0], x[0], x[1]); return ops.Sum(ops.Mul(h, n)) }, []T{xz, c}},
	}, nil, nil)
	z32 := func(cols int) *tensor.Tensor { return tensor.Zeros(tensor.Float32, 2, cols) }
	runBadInput(t, []badInput{
		{"xz not four gates", func() { ops.LSTMCell(z32(7), z32(8), z32(2)) }, tensor.ErrShape, "gate terms 0 must be [2 8]"},
		{"hz not four gates", func() { ops.LSTMCell(z32(8), z32(9), z32(2)) }, tensor.ErrShape, "gate terms 1 must be [2 8]"},
		{"rows differ", func() { ops.LSTMCell(tensor.Zeros(tensor.Float32, 3, 8), tensor.Zeros(tensor.Float32, 3, 8), z32(2)) }, tensor.ErrShape, "must be [2 8]"},
		{"not matrices", func() {
			ops.LSTMCell(tensor.Zeros(tensor.Float32, 8), tensor.Zeros(tensor.Float32, 8), tensor.Zeros(tensor.Float32, 2))
		}, tensor.ErrRank, "matrices"},
		{"dtypes differ", func() { ops.LSTMCell(z32(8), tensor.Zeros(tensor.Float64, 2, 8), z32(2)) }, tensor.ErrDType, ""},
		{"integers", func() {
			ops.LSTMCell(tensor.Zeros(tensor.Int32, 2, 8), tensor.Zeros(tensor.Int32, 2, 8), tensor.Zeros(tensor.Int32, 2, 2))
		}, tensor.ErrDType, ""},
	})
}

// firstAndSecond returns loss's gradients in ins, then the gradients in
// ins of second (a scalar of those gradients, each widened to float64),
// through a tape recording the first pass.
func firstAndSecond(ins []*tensor.Tensor, loss func(in []*tensor.Tensor) *tensor.Tensor, second func(g []*tensor.Tensor) *tensor.Tensor) []*tensor.Tensor {
	outer := tape.New()
	outer.Watch(ins...)
	inner := tape.New()
	inner.Watch(ins...)
	g := inner.Gradient(loss(ins), ins...)
	wide := make([]*tensor.Tensor, len(g))
	for i, x := range g {
		wide[i] = ops.Cast(x, tensor.Float64)
	}
	return append(g, outer.Gradient(second(wide), ins...)...)
}

// near fails unless got and want agree elementwise within tol relatively
// (approx.Close), compared in float64.
func near(t *testing.T, what string, got, want *tensor.Tensor, tol float64) {
	t.Helper()
	if !got.Shape().Equal(want.Shape()) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape(), want.Shape())
	}
	g, w := tensor.ToSlice[float64](ops.Cast(got, tensor.Float64)), tensor.ToSlice[float64](ops.Cast(want, tensor.Float64))
	if d := approx.Diff(g, w, tol); d != "" {
		t.Errorf("%s: %s", what, d)
	}
}

// gruWritten is GRUCell written in ops: the reference.
func gruWritten(xp, hp, h *tensor.Tensor) *tensor.Tensor {
	w := h.Dim(1)
	xs, hs := ops.Split(xp, 1, []int{w, w, w}), ops.Split(hp, 1, []int{w, w, w})
	z, r := ops.Sigmoid(ops.Add(xs[0], hs[0])), ops.Sigmoid(ops.Add(xs[1], hs[1]))
	n := ops.Tanh(ops.Add(xs[2], ops.Mul(r, hs[2])))
	return ops.Add(n, ops.Mul(z, ops.Sub(h, n)))
}

// GRUCell's values, first and second derivatives are those of the cell
// written in ops, every float dtype; its gradients pass finite
// differences to the second order.
func TestGRUCell(t *testing.T) {
	r := tensor.NewRNG(6)
	// By hand: every gate term 0: z = r = 1/2, n = 0, h' = h/2.
	zero := tensor.Zeros(tensor.Float64, 1, 3)
	check(t, "by hand", ops.GRUCell(zero, zero, tensor.FromSlice([]float64{3}, 1, 1)), tensor.Shape{1, 1}, []float64{1.5})
	for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32, tensor.BFloat16, tensor.Float16} {
		xp := ops.Cast(tensor.RandUniform(r, tensor.Float64, -3, 3, 5, 9), dt)
		hp := ops.Cast(tensor.RandUniform(r, tensor.Float64, -3, 3, 5, 9), dt)
		h := ops.Cast(tensor.RandUniform(r, tensor.Float64, -2, 2, 5, 3), dt)
		tol := map[tensor.DType]float64{tensor.Float64: 1e-14, tensor.Float32: 1e-6, tensor.BFloat16: 1e-2, tensor.Float16: 2e-3}[dt]
		got := ops.GRUCell(xp, hp, h)
		near(t, fmt.Sprintf("%v h'", dt), got, gruWritten(xp, hp, h), tol)
		if got.DType() != dt {
			t.Fatalf("%v: result in %v", dt, got.DType())
		}
		grads := func(cell func(xp, hp, h *tensor.Tensor) *tensor.Tensor) []*tensor.Tensor {
			return firstAndSecond([]*tensor.Tensor{xp, hp, h}, func(in []*tensor.Tensor) *tensor.Tensor {
				out := cell(in[0], in[1], in[2])
				return ops.Sum(ops.Add(ops.Mul(out, out), ops.Sin(out)))
			}, func(g []*tensor.Tensor) *tensor.Tensor {
				return ops.Add(ops.Add(ops.Sum(ops.Square(g[0])), ops.Sum(g[1])), ops.Sum(ops.Square(g[2])))
			})
		}
		gotG, wantG := grads(ops.GRUCell), grads(gruWritten)
		for k, name := range []string{"dxp", "dhp", "dh", "second dxp", "second dhp", "second dh"} {
			near(t, fmt.Sprintf("%v %s", dt, name), gotG[k], wantG[k], 10*tol)
		}
	}
	xp := tensor.RandUniform(r, tensor.Float64, -2, 2, 3, 6)
	hp := tensor.RandUniform(r, tensor.Float64, -2, 2, 3, 6)
	h := tensor.RandUniform(r, tensor.Float64, -2, 2, 3, 2)
	runGradients(t, []gradCase{
		{"h'", func(x []T) T { return ops.Sum(ops.Square(ops.GRUCell(x[0], x[1], x[2]))) }, []T{xp, hp, h}},
		{"second order", func(x []T) T {
			tp := tape.New()
			tp.Watch(x[0], x[1], x[2])
			g := tp.Gradient(ops.Sum(ops.Sin(ops.GRUCell(x[0], x[1], x[2]))), x[0], x[1], x[2])
			return ops.Add(ops.Add(ops.Sum(ops.Square(g[0])), ops.Sum(ops.Mul(g[1], x[1]))), ops.Sum(ops.Square(g[2])))
		}, []T{xp, hp, h}},
	}, nil, nil)
	f := func(s ...int) *tensor.Tensor { return tensor.Zeros(tensor.Float32, s...) }
	runBadInput(t, []badInput{
		{"not three gates", func() { ops.GRUCell(f(2, 5), f(2, 6), f(2, 2)) }, tensor.ErrShape, "must be [2 6]"},
		{"state's terms", func() { ops.GRUCell(f(2, 6), f(3, 6), f(2, 2)) }, tensor.ErrShape, "gate terms 1 must be [2 6]"},
		{"not matrices", func() { ops.GRUCell(f(6), f(6), f(2)) }, tensor.ErrRank, "matrices"},
		{"dtypes differ", func() { ops.GRUCell(f(2, 6), tensor.Zeros(tensor.Float64, 2, 6), f(2, 2)) }, tensor.ErrDType, ""},
		{"integers", func() {
			i := func() *tensor.Tensor { return tensor.Zeros(tensor.Int32, 2, 6) }
			ops.GRUCell(i(), i(), tensor.Zeros(tensor.Int32, 2, 2))
		}, tensor.ErrDType, ""},
	})
}
