package tape_test

import (
	"fmt"
	"testing"

	"github.com/eagerflow/eagerflow/internal/approx"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// An Add passes its output's gradient on to both operands. Where the first
// operand's gradient already was that same tensor (x in (x + s) + x: the
// outer Add gave it to x and to x + s) and the second operand broadcasts
// (s), summing the first replaced x's gradient and let the old one go,
// still the second's to reduce: "SumTo: ... buffer was released", on the
// plainest first derivative. Found by the differential suite (seed 151,
// a layer norm of such a sum differentiated twice).
func TestGradientPassedOnToAnOperandThatHasIt(t *testing.T) {
	r := tensor.NewRNG(9)
	x := tensor.RandUniform(r, tensor.Float64, -1, 1, 4, 3)
	s := tensor.Scalar(0.5)
	xs, sv := tensor.ToSlice[float64](x), s.Float()
	for _, c := range []struct {
		name string
		u    func() *tensor.Tensor // 2x + s
	}{
		{"(x+s)+x", func() *tensor.Tensor { return ops.Add(ops.Add(x, s), x) }},
		{"x+(x+s)", func() *tensor.Tensor { return ops.Add(x, ops.Add(x, s)) }},
		{"(s+x)+x", func() *tensor.Tensor { return ops.Add(ops.Add(s, x), x) }},
	} {
		tp := tape.New()
		tp.Watch(x, s)
		y := ops.Sum(ops.Square(c.u())) // d/dx = 4(2x + s), d/ds = Σ 2(2x + s)
		var g []*tensor.Tensor
		if err := tensor.Catch(func() { g = tp.Gradient(y, x, s) }); err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		wantS := 0.0
		for i, v := range tensor.ToSlice[float64](g[0]) {
			if want := 4 * (2*xs[i] + sv); !approx.Close(v, want, 1e-12) {
				t.Errorf("%s: d/dx[%d] = %v, want %v", c.name, i, v, want)
			}
			wantS += 2 * (2*xs[i] + sv)
		}
		if !approx.Close(g[1].Float(), wantS, 1e-12) {
			t.Errorf("%s: d/ds = %v, want %v", c.name, g[1].Float(), wantS)
		}
	}

	// The same through the gradient's own gradient (a Hessian-vector
	// product of a layer norm over one feature, the suite's program).
	x1 := tensor.RandUniform(r, tensor.Float64, -1, 1, 4, 1)
	gamma, beta := tensor.FromSlice([]float64{0.7}), tensor.FromSlice([]float64{-0.2})
	outer := tape.New()
	outer.Watch(x1, s, gamma, beta)
	inner := tape.New()
	inner.Watch(x1, s, gamma, beta)
	loss := ops.Sum(ops.Mul(ops.LayerNorm(ops.Add(ops.Add(x1, s), x1), gamma, beta, 0.001), x1))
	sum := tensor.Scalar(0.0)
	for _, g := range inner.Gradient(loss, x1, s, gamma, beta) {
		sum = ops.Add(sum, ops.Sum(g))
	}
	if err := tensor.Catch(func() { outer.Gradient(sum, x1, s, gamma, beta) }); err != nil {
		t.Error(fmt.Sprint("Hessian-vector product: ", err))
	}
}
