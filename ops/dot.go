package ops

import (
	"slices"

	"github.com/eagerflow/eagerflow/tensor"
)

// Dot is XLA's Dot: vector·vector -> scalar, matrix·vector -> vector,
// matrix·matrix -> matrix, contracting the last dimension of lhs with the
// first of rhs. Panics with a *tensor.Error for other ranks or sizes.
func Dot(lhs, rhs *tensor.Tensor) *tensor.Tensor {
	needInputs("Dot", lhs, rhs)
	defer asOp("Dot")
	in := []*tensor.Tensor{lhs, rhs}
	if lhs.Rank() < 1 || lhs.Rank() > 2 || rhs.Rank() < 1 || rhs.Rank() > 2 {
		fail("Dot", tensor.ErrRank, in, "operands must be vectors or matrices")
	}
	if lhs.Dim(-1) != rhs.Dim(0) {
		fail("Dot", tensor.ErrShape, in, "contracting dimensions differ: %d and %d", lhs.Dim(-1), rhs.Dim(0))
	}
	a, b := lhs, rhs
	if a.Rank() == 1 {
		a = Reshape(a, 1, a.Dim(0))
	}
	if b.Rank() == 1 {
		b = Reshape(b, b.Dim(0), 1)
	}
	out := MatMul(a, b)
	switch {
	case lhs.Rank() == 1 && rhs.Rank() == 1:
		return Reshape(out)
	case lhs.Rank() == 1:
		return Reshape(out, rhs.Dim(1))
	case rhs.Rank() == 1:
		return Reshape(out, lhs.Dim(0))
	}
	return out
}

// DotDims are XLA's DotDimensionNumbers.
type DotDims struct {
	LhsBatch, RhsBatch       []int
	LhsContract, RhsContract []int
}

// DotGeneral is XLA's DotGeneral: batch dimensions pair up, contracting
// dimensions are summed over, and the result is [batch..., lhs free...,
// rhs free...]. Panics with a *tensor.Error if paired sizes differ or a
// dimension is repeated or out of range.
func DotGeneral(lhs, rhs *tensor.Tensor, d DotDims) *tensor.Tensor {
	needInputs("DotGeneral", lhs, rhs)
	defer asOp("DotGeneral")
	in := []*tensor.Tensor{lhs, rhs}
	if len(d.LhsBatch) != len(d.RhsBatch) || len(d.LhsContract) != len(d.RhsContract) {
		fail("DotGeneral", tensor.ErrAttr, in, "batch and contracting dimensions must pair up: %+v", d)
	}
	lFree := freeDims(lhs, "lhs", d.LhsBatch, d.LhsContract)
	rFree := freeDims(rhs, "rhs", d.RhsBatch, d.RhsContract)
	size := func(x *tensor.Tensor, dims []int) int {
		n := 1
		for _, k := range dims {
			n *= x.Dim(k)
		}
		return n
	}
	for i := range d.LhsBatch {
		if lhs.Dim(d.LhsBatch[i]) != rhs.Dim(d.RhsBatch[i]) {
			fail("DotGeneral", tensor.ErrShape, in, "batch dimensions %d and %d differ", d.LhsBatch[i], d.RhsBatch[i])
		}
	}
	for i := range d.LhsContract {
		if lhs.Dim(d.LhsContract[i]) != rhs.Dim(d.RhsContract[i]) {
			fail("DotGeneral", tensor.ErrShape, in, "contracting dimensions %d and %d differ", d.LhsContract[i], d.RhsContract[i])
		}
	}
	b, m, k, n := size(lhs, d.LhsBatch), size(lhs, lFree), size(lhs, d.LhsContract), size(rhs, rFree)
	// Each side as a batch of matrices, [b m k] and [b k n], or transposed,
	// [b k m] and [b n k], where that order is the side's own (no copy to
	// gather it: attention's scores contract both sides' last dims).
	ta := !slices.IsSorted(concatInts(d.LhsBatch, lFree, d.LhsContract)) && slices.IsSorted(concatInts(d.LhsBatch, d.LhsContract, lFree))
	tb := !slices.IsSorted(concatInts(d.RhsBatch, d.RhsContract, rFree)) && slices.IsSorted(concatInts(d.RhsBatch, rFree, d.RhsContract))
	var a, c *tensor.Tensor
	if ta {
		a = Reshape(lhs, b, k, m)
	} else {
		a = Reshape(Transpose(lhs, concatInts(d.LhsBatch, lFree, d.LhsContract)...), b, m, k)
	}
	if tb {
		c = Reshape(rhs, b, n, k)
	} else {
		c = Reshape(Transpose(rhs, concatInts(d.RhsBatch, d.RhsContract, rFree)...), b, k, n)
	}
	var shape []int
	for _, x := range d.LhsBatch {
		shape = append(shape, lhs.Dim(x))
	}
	for _, x := range lFree {
		shape = append(shape, lhs.Dim(x))
	}
	for _, x := range rFree {
		shape = append(shape, rhs.Dim(x))
	}
	return Reshape(MatMulT(a, c, ta, tb), shape...)
}

func concatInts(parts ...[]int) []int {
	var out []int
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// freeDims returns the dimensions of x in neither list, failing on repeats.
func freeDims(x *tensor.Tensor, name string, batch, contract []int) []int {
	used := make([]bool, x.Rank())
	for _, d := range concatInts(batch, contract) {
		if d < 0 || d >= x.Rank() || used[d] {
			fail("DotGeneral", tensor.ErrAxis, []*tensor.Tensor{x}, "%s dimension %d is out of range or repeated", name, d)
		}
		used[d] = true
	}
	var free []int
	for i, u := range used {
		if !u {
			free = append(free, i)
		}
	}
	return slices.Clip(free)
}
