package ops_test

import (
	"fmt"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// lstmLoop is LSTMSequence as a loop of LSTMCell steps and their
// products: the reference (ys [n t h], hT, cT).
func lstmLoop(xz, u, h, c *tensor.Tensor) (ys, hT, cT *tensor.Tensor) {
	n, t, w := xz.Dim(0), xz.Dim(1), u.Dim(0)
	steps := make([]*tensor.Tensor, t)
	for s := range t {
		x := ops.Reshape(ops.Slice(xz, []int{0, s, 0}, []int{n, s + 1, 4 * w}, nil), n, 4*w)
		h, c = ops.LSTMCell(x, ops.MatMul(h, u), c)
		steps[s] = h
	}
	if t == 0 {
		return tensor.Zeros(xz.DType(), n, 0, w), h, c
	}
	return ops.Stack(1, steps...), h, c
}

// LSTMSequence's outputs, first and second derivatives are a loop of
// LSTMCell steps', in float64 and float32 (to their rounding: the loop
// rounds each product, the op each step's sum) and the half types
// (through float32); a sequence of no steps hands its state on; its
// gradients pass finite differences to the second order, the final
// state's and the outputs' alike; bad shapes are refused.
func TestLSTMSequence(t *testing.T) {
	r := tensor.NewRNG(8)
	const n, steps, w = 3, 5, 4
	for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32, tensor.BFloat16, tensor.Float16} {
		xz := ops.Cast(tensor.RandUniform(r, tensor.Float64, -2, 2, n, steps, 4*w), dt)
		u := ops.Cast(tensor.RandUniform(r, tensor.Float64, -0.8, 0.8, w, 4*w), dt)
		h0 := ops.Cast(tensor.RandUniform(r, tensor.Float64, -1, 1, n, w), dt)
		c0 := ops.Cast(tensor.RandUniform(r, tensor.Float64, -1, 1, n, w), dt)
		tol := map[tensor.DType]float64{tensor.Float64: 1e-13, tensor.Float32: 1e-5, tensor.BFloat16: 4e-2, tensor.Float16: 4e-3}[dt]
		ys, hT, cT := ops.LSTMSequence(xz, u, h0, c0)
		wys, whT, wcT := lstmLoop(xz, u, h0, c0)
		near(t, fmt.Sprintf("%v ys", dt), ys, wys, tol)
		near(t, fmt.Sprintf("%v hT", dt), hT, whT, tol)
		near(t, fmt.Sprintf("%v cT", dt), cT, wcT, tol)
		if ys.DType() != dt || cT.DType() != dt {
			t.Fatalf("%v: results in %v and %v", dt, ys.DType(), cT.DType())
		}
		grads := func(seq func(xz, u, h, c *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor, *tensor.Tensor)) []*tensor.Tensor {
			return firstAndSecond([]*tensor.Tensor{xz, u, h0, c0}, func(in []*tensor.Tensor) *tensor.Tensor {
				ys, hT, cT := seq(in[0], in[1], in[2], in[3])
				return ops.Add(ops.Sum(ops.Mul(ys, ys)), ops.Sum(ops.Mul(hT, ops.Sin(cT))))
			}, func(g []*tensor.Tensor) *tensor.Tensor {
				return ops.Add(ops.Add(ops.Sum(ops.Square(g[0])), ops.Sum(ops.Square(g[1]))), ops.Add(ops.Sum(g[2]), ops.Sum(ops.Square(g[3]))))
			})
		}
		got, want := grads(ops.LSTMSequence), grads(lstmLoop)
		for k, name := range []string{"dxz", "du", "dh0", "dc0", "second dxz", "second du", "second dh0", "second dc0"} {
			near(t, fmt.Sprintf("%v %s", dt, name), got[k], want[k], 10*tol)
		}
	}
	// No steps: the state handed on, its gradient too.
	xz0, u := tensor.Zeros(tensor.Float64, 2, 0, 8), tensor.RandUniform(r, tensor.Float64, -1, 1, 2, 8)
	h0, c0 := tensor.RandUniform(r, tensor.Float64, -1, 1, 2, 2), tensor.RandUniform(r, tensor.Float64, -1, 1, 2, 2)
	ys, hT, cT := ops.LSTMSequence(xz0, u, h0, c0)
	if !ys.Shape().Equal(tensor.Shape{2, 0, 2}) {
		t.Errorf("no steps: ys %v, want [2 0 2]", ys.Shape())
	}
	near(t, "no steps: hT", hT, h0, 0)
	near(t, "no steps: cT", cT, c0, 0)
	xz := tensor.RandUniform(r, tensor.Float64, -2, 2, 2, 3, 8)
	runGradients(t, []gradCase{
		{"outputs", func(x []T) T { ys, _, _ := ops.LSTMSequence(x[0], x[1], x[2], x[3]); return ops.Sum(ops.Square(ys)) }, []T{xz, u, h0, c0}},
		{"final state", func(x []T) T {
			_, h, c := ops.LSTMSequence(x[0], x[1], x[2], x[3])
			return ops.Sum(ops.Mul(h, ops.Sin(c)))
		}, []T{xz, u, h0, c0}},
		{"no steps", func(x []T) T { _, h, c := ops.LSTMSequence(x[0], x[1], x[2], x[3]); return ops.Sum(ops.Mul(h, c)) }, []T{xz0, u, h0, c0}},
		{"second order", func(x []T) T {
			tp := tape.New()
			tp.Watch(x...)
			ys, h, _ := ops.LSTMSequence(x[0], x[1], x[2], x[3])
			g := tp.Gradient(ops.Add(ops.Sum(ops.Sin(ys)), ops.Sum(h)), x...)
			return ops.Add(ops.Add(ops.Sum(ops.Square(g[0])), ops.Sum(ops.Mul(g[1], x[1]))), ops.Add(ops.Sum(ops.Square(g[2])), ops.Sum(g[3])))
		}, []T{xz, u, h0, c0}},
	}, nil, nil)
	f := func(s ...int) *tensor.Tensor { return tensor.Zeros(tensor.Float32, s...) }
	runBadInput(t, []badInput{
		{"u not four gates", func() { ops.LSTMSequence(f(2, 3, 8), f(2, 7), f(2, 2), f(2, 2)) }, tensor.ErrShape, "u must be [h 4h]"},
		{"xz not u's gates", func() { ops.LSTMSequence(f(2, 3, 12), f(2, 8), f(2, 2), f(2, 2)) }, tensor.ErrShape, "must be [n t 8]"},
		{"state's rows", func() { ops.LSTMSequence(f(2, 3, 8), f(2, 8), f(3, 2), f(2, 2)) }, tensor.ErrShape, "initial state 0 must be [2 2]"},
		{"cell's width", func() { ops.LSTMSequence(f(2, 3, 8), f(2, 8), f(2, 2), f(2, 3)) }, tensor.ErrShape, "initial state 1 must be [2 2]"},
		{"xz a matrix", func() { ops.LSTMSequence(f(2, 8), f(2, 8), f(2, 2), f(2, 2)) }, tensor.ErrRank, "xz must be [n t 4h]"},
		{"dtypes differ", func() { ops.LSTMSequence(f(2, 3, 8), tensor.Zeros(tensor.Float64, 2, 8), f(2, 2), f(2, 2)) }, tensor.ErrDType, ""},
		{"integers", func() {
			i := func(s ...int) *tensor.Tensor { return tensor.Zeros(tensor.Int32, s...) }
			ops.LSTMSequence(i(2, 3, 8), i(2, 8), i(2, 2), i(2, 2))
		}, tensor.ErrDType, ""},
	})
	if ops.LSTMSequenceFused(xz, u) {
		t.Error("LSTMSequenceFused on the CPU: true, want false (a loop of steps is faster there)")
	}
}

// gruLoop is GRUSequence as a loop of GRUCell steps and their products:
// the reference (ys [n t h], hT).
func gruLoop(xp, u, b, h *tensor.Tensor) (ys, hT *tensor.Tensor) {
	n, t, w := xp.Dim(0), xp.Dim(1), u.Dim(0)
	steps := make([]*tensor.Tensor, t)
	for s := range t {
		x := ops.Reshape(ops.Slice(xp, []int{0, s, 0}, []int{n, s + 1, 3 * w}, nil), n, 3*w)
		h = ops.GRUCell(x, ops.Add(ops.MatMul(h, u), b), h)
		steps[s] = h
	}
	if t == 0 {
		return tensor.Zeros(xp.DType(), n, 0, w), h
	}
	return ops.Stack(1, steps...), h
}

// GRUSequence's outputs, first and second derivatives are a loop of
// GRUCell steps', every float dtype (to its rounding); no steps hands the
// state on; its gradients pass finite differences to the second order;
// bad shapes are refused.
func TestGRUSequence(t *testing.T) {
	r := tensor.NewRNG(9)
	const n, steps, w = 3, 5, 4
	for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32, tensor.BFloat16, tensor.Float16} {
		in := []*tensor.Tensor{
			ops.Cast(tensor.RandUniform(r, tensor.Float64, -2, 2, n, steps, 3*w), dt),
			ops.Cast(tensor.RandUniform(r, tensor.Float64, -0.8, 0.8, w, 3*w), dt),
			ops.Cast(tensor.RandUniform(r, tensor.Float64, -0.5, 0.5, 3*w), dt),
			ops.Cast(tensor.RandUniform(r, tensor.Float64, -1, 1, n, w), dt),
		}
		tol := map[tensor.DType]float64{tensor.Float64: 1e-13, tensor.Float32: 1e-5, tensor.BFloat16: 4e-2, tensor.Float16: 4e-3}[dt]
		ys, hT := ops.GRUSequence(in[0], in[1], in[2], in[3])
		wys, whT := gruLoop(in[0], in[1], in[2], in[3])
		near(t, fmt.Sprintf("%v ys", dt), ys, wys, tol)
		near(t, fmt.Sprintf("%v hT", dt), hT, whT, tol)
		if ys.DType() != dt || hT.DType() != dt {
			t.Fatalf("%v: results in %v and %v", dt, ys.DType(), hT.DType())
		}
		grads := func(seq func(xp, u, b, h *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor)) []*tensor.Tensor {
			return firstAndSecond(in, func(in []*tensor.Tensor) *tensor.Tensor {
				ys, hT := seq(in[0], in[1], in[2], in[3])
				return ops.Add(ops.Sum(ops.Mul(ys, ys)), ops.Sum(ops.Sin(hT)))
			}, func(g []*tensor.Tensor) *tensor.Tensor {
				return ops.Add(ops.Add(ops.Sum(ops.Square(g[0])), ops.Sum(ops.Square(g[1]))), ops.Add(ops.Sum(ops.Square(g[2])), ops.Sum(g[3])))
			})
		}
		got, want := grads(ops.GRUSequence), grads(gruLoop)
		for k, name := range []string{"dxp", "du", "db", "dh0", "second dxp", "second du", "second db", "second dh0"} {
			near(t, fmt.Sprintf("%v %s", dt, name), got[k], want[k], 10*tol)
		}
	}
	xp0, u := tensor.Zeros(tensor.Float64, 2, 0, 6), tensor.RandUniform(r, tensor.Float64, -1, 1, 2, 6)
	b, h0 := tensor.RandUniform(r, tensor.Float64, -1, 1, 6), tensor.RandUniform(r, tensor.Float64, -1, 1, 2, 2)
	ys, hT := ops.GRUSequence(xp0, u, b, h0)
	if !ys.Shape().Equal(tensor.Shape{2, 0, 2}) {
		t.Errorf("no steps: ys %v, want [2 0 2]", ys.Shape())
	}
	near(t, "no steps: hT", hT, h0, 0)
	xp := tensor.RandUniform(r, tensor.Float64, -2, 2, 2, 3, 6)
	runGradients(t, []gradCase{
		{"outputs", func(x []T) T { ys, _ := ops.GRUSequence(x[0], x[1], x[2], x[3]); return ops.Sum(ops.Square(ys)) }, []T{xp, u, b, h0}},
		{"final state", func(x []T) T { _, h := ops.GRUSequence(x[0], x[1], x[2], x[3]); return ops.Sum(ops.Sin(h)) }, []T{xp, u, b, h0}},
		{"no steps", func(x []T) T { _, h := ops.GRUSequence(x[0], x[1], x[2], x[3]); return ops.Sum(ops.Square(h)) }, []T{xp0, u, b, h0}},
		{"second order", func(x []T) T {
			tp := tape.New()
			tp.Watch(x...)
			ys, h := ops.GRUSequence(x[0], x[1], x[2], x[3])
			g := tp.Gradient(ops.Add(ops.Sum(ops.Sin(ys)), ops.Sum(h)), x...)
			return ops.Add(ops.Add(ops.Sum(ops.Square(g[0])), ops.Sum(ops.Mul(g[1], x[1]))), ops.Add(ops.Sum(ops.Square(g[2])), ops.Sum(g[3])))
		}, []T{xp, u, b, h0}},
	}, nil, nil)
	f := func(s ...int) *tensor.Tensor { return tensor.Zeros(tensor.Float32, s...) }
	runBadInput(t, []badInput{
		{"u not three gates", func() { ops.GRUSequence(f(2, 3, 6), f(2, 7), f(6), f(2, 2)) }, tensor.ErrShape, "u must be [h 3h]"},
		{"xp not u's gates", func() { ops.GRUSequence(f(2, 3, 8), f(2, 6), f(6), f(2, 2)) }, tensor.ErrShape, "must be [n t 6]"},
		{"bias not u's gates", func() { ops.GRUSequence(f(2, 3, 6), f(2, 6), f(5), f(2, 2)) }, tensor.ErrShape, "bias b [6]"},
		{"state's rows", func() { ops.GRUSequence(f(2, 3, 6), f(2, 6), f(6), f(3, 2)) }, tensor.ErrShape, "initial state must be [2 2]"},
		{"bias a matrix", func() { ops.GRUSequence(f(2, 3, 6), f(2, 6), f(1, 6), f(2, 2)) }, tensor.ErrRank, "b [3h]"},
		{"dtypes differ", func() { ops.GRUSequence(f(2, 3, 6), tensor.Zeros(tensor.Float64, 2, 6), f(6), f(2, 2)) }, tensor.ErrDType, ""},
		{"integers", func() {
			i := func(s ...int) *tensor.Tensor { return tensor.Zeros(tensor.Int32, s...) }
			ops.GRUSequence(i(2, 3, 6), i(2, 6), i(6), i(2, 2))
		}, tensor.ErrDType, ""},
	})
	if ops.GRUSequenceFused(xp, u) {
		t.Error("GRUSequenceFused on the CPU: true, want false (a loop of steps is faster there)")
	}
}
