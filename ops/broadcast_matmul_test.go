package ops_test

import (
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Shapes as NumPy's matmul and take_along_axis give them (values and
// gradients are compared with PyTorch by internal/difftest).
func TestMatMulAndTakeAlongAxisBroadcast(t *testing.T) {
	z := func(s ...int) *tensor.Tensor { return tensor.Zeros(tensor.Float32, s...) }
	i := func(s ...int) *tensor.Tensor { return tensor.Zeros(tensor.Int64, s...) }
	for _, c := range []struct {
		name string
		got  *tensor.Tensor
		want tensor.Shape
	}{
		{"[2 1 3 4]·[5 4 6]", ops.MatMul(z(2, 1, 3, 4), z(5, 4, 6)), tensor.Shape{2, 5, 3, 6}},
		{"[1 3 4]·[5 4 6]", ops.MatMul(z(1, 3, 4), z(5, 4, 6)), tensor.Shape{5, 3, 6}},
		{"[1 3 4]·[1 4 6]", ops.MatMul(z(1, 3, 4), z(1, 1, 4, 6)), tensor.Shape{1, 1, 3, 6}},
		{"[3 4]·[2 4 6]", ops.MatMul(z(3, 4), z(2, 4, 6)), tensor.Shape{2, 3, 6}},
		{"[4]·[2 4 6]", ops.MatMul(z(4), z(2, 4, 6)), tensor.Shape{2, 6}},
		{"[2 3 4]·[4]", ops.MatMul(z(2, 3, 4), z(4)), tensor.Shape{2, 3}},
		{"[4]·[4]", ops.MatMul(z(4), z(4)), tensor.Shape{}},
		{"take [3 1]/[3 5]", ops.TakeAlongAxis(z(3, 4), i(1, 5), 1), tensor.Shape{3, 5}},
		{"take [1 4]/[3 2]", ops.TakeAlongAxis(z(1, 4), i(3, 2), -1), tensor.Shape{3, 2}},
	} {
		if !c.got.Shape().Equal(c.want) {
			t.Errorf("%s: %v, want %v", c.name, c.got.Shape(), c.want)
		}
	}
	_, err := catch(func() *tensor.Tensor { return ops.TakeAlongAxis(z(3, 4), i(2, 5), 1) })
	wantErr(t, "TakeAlongAxis", err, tensor.ErrShape, "indices [2 5] and operand [3 4] do not broadcast outside axis 1")
}
