package ops_test

import (
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Contiguous on a tensor a tape follows is a taped copy: the gradient
// flows through it (it used to stop there, silently nil).
func TestContiguousKeepsTheTape(t *testing.T) {
	x := tensor.FromSlice([]float64{1, 2, 3, 4, 5, 6}, 2, 3)
	tp := tape.New()
	tp.Watch(x)
	y := ops.Transpose(x, 1, 0).Contiguous()
	if !y.IsRowMajor() {
		t.Fatalf("Contiguous of a taped transpose is not row-major")
	}
	g := tp.Gradient(ops.Sum(ops.Mul(y, ops.Transpose(x, 1, 0))), x)[0]
	if g == nil {
		t.Fatal("no gradient through Contiguous")
	}
	diff(t, "gradient", g, ops.Mul(x, tensor.Scalar(2.0)), 0)
}
