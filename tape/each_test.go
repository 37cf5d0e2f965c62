package tape_test

import (
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// eachNet runs a three-layer network whose first weight is used again at
// the end (shared weights), and an unused variable, on tp.
func eachNet(tp *tape.Tape, w []*tape.Variable) *tensor.Tensor {
	x := tensor.FromSlice([]float64{0.5, -1, 2, 0.25}, 2, 2)
	h := ops.Tanh(ops.MatMul(x, w[0].Value()))
	h = ops.Tanh(ops.MatMul(h, w[1].Value()))
	h = ops.MatMul(h, w[2].Value())
	return ops.Sum(ops.Mul(ops.MatMul(h, w[0].Value()), h))
}

func eachVars() []*tape.Variable {
	rng := tensor.NewRNG(3)
	w := make([]*tape.Variable, 4)
	for i := range w {
		w[i] = tape.NewVariable("w", tensor.RandNormal(rng, tensor.Float64, 2, 2))
	}
	return w
}

// GradientEach hands each gradient over once final, during the pass: the
// values are Gradient's, the order is the order the pass finishes them.
func TestGradientEach(t *testing.T) {
	w := eachVars()
	tp := tape.New()
	want := tp.Gradient(eachNet(tp, w), w[0].Value(), w[1].Value(), w[2].Value(), w[3].Value())

	var order []int
	var seen []*tensor.Tensor
	tp = tape.New()
	sources := []*tensor.Tensor{w[0].Value(), w[1].Value(), w[2].Value(), w[3].Value(), w[2].Value()}
	got := tp.GradientEach(eachNet(tp, w), nil, sources, func(i int, g *tensor.Tensor) {
		order = append(order, i)
		seen = append(seen, g)
	})
	// w2 (twice: its index order) is final first, then w1; w0, also read
	// at the end, is final only after the first layer; w3, unread, last.
	if !slices.Equal(order, []int{2, 4, 1, 0, 3}) {
		t.Errorf("ready order %v, want [2 4 1 0 3]", order)
	}
	for k, i := range order {
		if got[i] != seen[k] {
			t.Errorf("source %d: ready got another tensor than the result", i)
		}
	}
	for i, wi := range []int{0, 1, 2, 3, 2} {
		if want[wi] == nil {
			if got[i] != nil {
				t.Errorf("source %d: %v, want nil (unconnected)", i, got[i])
			}
			continue
		}
		if !slices.Equal(vals(got[i]), vals(want[wi])) {
			t.Errorf("source %d: %v, want %v", i, vals(got[i]), vals(want[wi]))
		}
	}
	if want[3] != nil {
		t.Error("the unused variable has a gradient")
	}
	// UnconnectedZeros: the unused variable gets zeros, handed over too.
	tp = tape.New(tape.Options{UnconnectedZeros: true})
	var last *tensor.Tensor
	tp.GradientEach(eachNet(tp, w), nil, []*tensor.Tensor{w[3].Value()}, func(i int, g *tensor.Tensor) { last = g })
	if last == nil || !slices.Equal(vals(last), []float64{0, 0, 0, 0}) {
		t.Errorf("unconnected with zeros: %v", last)
	}
}
