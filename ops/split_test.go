package ops_test

import (
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Split is one op whose gradient concatenates its pieces' (zeros for a
// piece unused); Unstack, which reshapes each piece of a Split, must not
// change what the tape recorded of it (it once replaced the op's outputs
// in the slice the tape kept, and every gradient through Unstack was nil).
func TestSplitAndUnstackGradients(t *testing.T) {
	x := tensor.FromSlice([]float64{1, 2, 3, 4, 5, 6}, 3, 2)
	for _, c := range []struct {
		name string
		f    func() *tensor.Tensor
		want []float64
	}{
		{"unstack", func() *tensor.Tensor { p := ops.Unstack(x, 0); return ops.Mul(p[0], p[2]) }, []float64{5, 6, 0, 0, 1, 2}},
		{"split, a piece unused", func() *tensor.Tensor {
			p := ops.Split(x, 1, []int{1, 1})
			return ops.Mul(p[1], p[1])
		}, []float64{0, 4, 0, 8, 0, 12}},
		{"split, an empty piece", func() *tensor.Tensor {
			p := ops.Split(x, 0, []int{2, 0, 1})
			return ops.Add(ops.Sum(p[0]), ops.Mul(ops.Sum(p[2]), tensor.Scalar(3.0)))
		}, []float64{1, 1, 1, 1, 3, 3}},
	} {
		tp := tape.New()
		tp.Watch(x)
		g := tp.Gradient(ops.Sum(c.f()), x)[0]
		if g == nil {
			t.Errorf("%s: no gradient", c.name)
			continue
		}
		diff(t, c.name, g, tensor.FromSlice(c.want, 3, 2), 0)
	}
	// One piece: the op's output slice holds one tensor, which Unstack
	// replaces by its reshape all the same.
	one := tensor.FromSlice([]float64{1, 2}, 1, 2)
	tp := tape.New()
	tp.Watch(one)
	g := tp.Gradient(ops.Sum(ops.Square(ops.Unstack(one, 0)[0])), one)[0]
	if g == nil {
		t.Fatal("unstack of one: no gradient")
	}
	diff(t, "unstack of one", g, tensor.FromSlice([]float64{2, 4}, 1, 2), 0)
}

// Concatenate's gradient cuts dy by one Split where most inputs want a
// gradient (a dy transposed, as a sequence's stacked outputs' is, laid
// out once), by slices where few do; an input not watched gets none.
func TestConcatenateGradientCuts(t *testing.T) {
	a := tensor.FromSlice([]float64{1, 2, 3, 4}, 2, 2)
	b := tensor.FromSlice([]float64{5, 6}, 1, 2)
	c := tensor.FromSlice([]float64{7, 8, 9, 10, 11, 12}, 3, 2)
	w := tensor.FromSlice([]float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, 2, 6)
	for _, watched := range [][]*tensor.Tensor{{a, b, c}, {a, c}, {b}} {
		tp := tape.New()
		tp.Watch(watched...)
		y := ops.Transpose(ops.Concatenate(0, a, b, c), 1, 0) // [2 6]: dy laid out transposed
		g := tp.Gradient(ops.Sum(ops.Mul(y, w)), watched...)
		for i, x := range watched {
			// d/dx of Σ yᵀ⊙w is w's columns for x's rows, transposed.
			at := map[*tensor.Tensor]int{a: 0, b: 2, c: 3}[x]
			want := ops.Transpose(ops.Slice(w, []int{0, at}, []int{2, at + x.Dim(0)}, nil), 1, 0)
			diff(t, "concatenate's gradient", g[i], want, 0)
		}
	}
}
