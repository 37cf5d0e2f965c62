package ops

import (
	"slices"

	"github.com/eagerflow/eagerflow/tensor"
)

// ReduceWith is XLA's Reduce with a user computation: it folds the
// elements of x over dims (all when none are given) with f, starting from
// init (a scalar of x's dtype), and drops those dimensions. f must be
// associative and commutative, as XLA requires (the order of evaluation is
// unspecified), and elementwise over its two arguments; it is applied to
// whole halves at once, log2(n) times, so it runs vectorised and
// differentiates like any composition of ops. Built-in reductions (Sum,
// Amax, ...) are faster.
func ReduceWith(x, init *tensor.Tensor, f func(a, b *tensor.Tensor) *tensor.Tensor, dims ...int) *tensor.Tensor {
	needInputs("ReduceWith", x, init)
	needFunc("ReduceWith", "f", f == nil)
	in := []*tensor.Tensor{x, init}
	if init.Rank() != 0 || init.DType() != x.DType() {
		fail("Reduce", tensor.ErrShape, in, "init must be a scalar of the operand's dtype")
	}
	if len(dims) == 0 {
		for d := range x.Rank() {
			dims = append(dims, d)
		}
	}
	seen := make([]bool, x.Rank())
	for _, d := range dims {
		if d < 0 || d >= x.Rank() || seen[d] {
			fail("Reduce", tensor.ErrAxis, in, "dimension %d is out of range or repeated", d)
		}
		seen[d] = true
	}
	var kept, keptShape []int
	for d := range x.Rank() {
		if !seen[d] {
			kept = append(kept, d)
			keptShape = append(keptShape, x.Dim(d))
		}
	}
	k := tensor.Shape(keptShape).NumElements()
	r := x.NumElements() / max(k, 1)
	if k == 0 {
		r = 0
		for _, d := range dims {
			r = max(r, 1) * x.Dim(d)
		}
	}
	rows := Reshape(Transpose(x, append(slices.Clone(kept), dims...)...), k, r)
	acc := BroadcastTo(init, k, 1)
	for rows.Dim(1) > 1 {
		n := rows.Dim(1)
		if n%2 == 1 {
			rows = Concatenate(1, rows, BroadcastTo(init, k, 1))
			n++
		}
		half := n / 2
		rows = f(Slice(rows, []int{0, 0}, []int{k, half}, nil), Slice(rows, []int{0, half}, []int{k, n}, nil))
	}
	if rows.Dim(1) == 1 {
		acc = f(acc, rows)
	}
	return Reshape(acc, keptShape...)
}
