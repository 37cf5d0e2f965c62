package ops

import (
	"github.com/eagerflow/eagerflow/tensor"
)

// Tril keeps the elements of x on and below the k-th diagonal of its last
// two dims and zeroes the others, as torch.tril and np.tril: element
// [..., i, j] stays where j − i ≤ k (k = 0 the main diagonal, k > 0 one
// above it, k < 0 one below). x of any dtype and rank at least 2 (a
// matrix, or a batch of them); the result has its dtype and shape, and
// its gradient is dy masked alike. Panics with a *tensor.Error for a
// lower rank.
func Tril(x *tensor.Tensor, k int) *tensor.Tensor { return triangle("Tril", x, k, true) }

// Triu keeps the elements of x on and above the k-th diagonal of its last
// two dims and zeroes the others, as torch.triu and np.triu: element
// [..., i, j] stays where j − i ≥ k. Otherwise as Tril.
func Triu(x *tensor.Tensor, k int) *tensor.Tensor { return triangle("Triu", x, k, false) }

// triangle is Tril (lower) or Triu: a bool mask of the last two dims,
// made on the host and copied to x's device, selects x or zero.
func triangle(op string, x *tensor.Tensor, k int, lower bool) *tensor.Tensor {
	needInputs(op, x)
	defer asOp(op)
	if x.Rank() < 2 {
		fail(op, tensor.ErrRank, []*tensor.Tensor{x}, "needs a matrix or a batch of them (rank 2 or more), got rank %d", x.Rank())
	}
	m, n := x.Dim(-2), x.Dim(-1)
	keep := make([]bool, m*n)
	for i := range m {
		for j := range n {
			keep[i*n+j] = lower && j-i <= k || !lower && j-i >= k
		}
	}
	return Where(tensor.FromSliceOn(x.Device(), keep, m, n), x, ScalarLike(x, 0))
}
