package cpu

import (
	"github.com/eagerflow/eagerflow/tensor"
)

// The ops that move elements (ops/shape.go, slice.go, structure.go,
// dynamic.go) run package move's portable kernels (linked here by the
// import of move); permuted serves the reduce kernel.

// permuted returns x (row-major) with its dimensions in the order perm, as
// a new row-major tensor: dimension i of the result is dimension perm[i]
// of x.
func permuted(x *tensor.Tensor, perm []int) *tensor.Tensor {
	r := len(perm)
	shape, inv := make(tensor.Shape, r), make([]int, r)
	for i, p := range perm {
		shape[i], inv[p] = x.Dim(p), i
	}
	// x's dimensions, minor to major, named by their place in the result.
	layout := make(tensor.Layout, r)
	for i := range layout {
		layout[i] = inv[r-1-i]
	}
	v := x.View(shape, layout)
	out := v.Contiguous()
	if out != v {
		v.Release() // the view's reference to x's buffer, which x still holds
	}
	return out
}
