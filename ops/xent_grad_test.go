package ops_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// The cross-entropy's gradient op equals (softmax - onehot)·dy spelled
// out, and differentiates again to what the spelled-out form gives.
func TestSparseXentGradOp(t *testing.T) {
	op := eager.Lookup("SparseSoftmaxCrossEntropyGrad")
	labels := tensor.FromSlice([]int32{2, 0, 4, 4})
	for _, dt := range []tensor.DType{tensor.Float64, tensor.Float32} {
		logits := ops.Cast(tensor.RandNormal(tensor.NewRNG(3), tensor.Float64, 4, 5), dt)
		dy := ops.Cast(tensor.RandNormal(tensor.NewRNG(4), tensor.Float64, 4), dt)
		w := ops.Cast(tensor.RandNormal(tensor.NewRNG(5), tensor.Float64, 4, 5), dt)
		spelled := func(l, d *tensor.Tensor) *tensor.Tensor {
			return ops.Mul(ops.Sub(ops.Softmax(l, -1), ops.OneHot(labels, 5, dt)), ops.ExpandDims(d, 1))
		}
		var vals [2]*tensor.Tensor
		var grads [2][]*tensor.Tensor
		for i, f := range []func(l, d *tensor.Tensor) *tensor.Tensor{spelled, func(l, d *tensor.Tensor) *tensor.Tensor { return eager.Run1(op, nil, l, labels, d) }} {
			tp := tape.New()
			tp.Watch(logits, dy)
			vals[i] = f(logits, dy)
			grads[i] = tp.Gradient(ops.Sum(ops.Mul(vals[i], w)), logits, dy)
		}
		tol := map[tensor.DType]float64{tensor.Float64: 1e-13, tensor.Float32: 1e-6}[dt]
		diff(t, fmt.Sprint(dt, " value"), vals[1], vals[0], tol)
		diff(t, fmt.Sprint(dt, " gradient for the logits"), grads[1][0], grads[0][0], tol)
		diff(t, fmt.Sprint(dt, " gradient for dy"), grads[1][1], grads[0][1], tol)
	}
	err := tensor.Catch(func() {
		eager.Run1(op, nil, tensor.Zeros(tensor.Float32, 2, 3), tensor.FromSlice([]int32{0, 3}), tensor.Zeros(tensor.Float32, 2))
	})
	if !errors.Is(err, tensor.ErrIndex) {
		t.Errorf("a label out of range: %v", err)
	}
}
