package cuda

import (
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// nn's cross-entropies on the GPU give the CPU's loss and logits'
// gradient (float32, to its rounding): token logits [N, T, C], with
// ignored labels (a pad class and -100) and label smoothing, and the
// dense loss smoothed.
func TestCrossEntropiesOnGPU(t *testing.T) {
	d := testGPU(t)
	r := tensor.NewRNG(31)
	logits := ops.Mul(tensor.RandNormal(r, tensor.Float32, 3, 5, 7), tensor.Scalar[float32](3))
	labels := tensor.FromSlice([]int32{3, -100, 0, 4, 1, 0, 2, -100, 6, 4, 0, 1, 3, 2, 5}, 3, 5)
	padded := ops.Maximum(labels, ops.ZerosLike(labels))
	probs := ops.Softmax(tensor.RandNormal(r, tensor.Float32, 3, 5, 7), -1)
	for _, c := range []struct {
		name   string
		loss   nn.Loss
		labels *tensor.Tensor
	}{
		{"sparse, tokens", nn.SparseSoftmaxCrossEntropy, padded},
		{"sparse, -100 ignored", nn.SparseSoftmaxCrossEntropyWith(nn.CrossEntropyOpts{Ignore: []int{-100}}), labels},
		{"sparse, pads ignored, smoothed", nn.SparseSoftmaxCrossEntropyWith(nn.CrossEntropyOpts{Ignore: []int{0}, LabelSmoothing: 0.1}), padded},
		{"dense, smoothed", nn.SoftmaxCrossEntropyWith(nn.CrossEntropyOpts{LabelSmoothing: 0.2}), probs},
	} {
		var loss [2]float64
		var grad [2][]float32
		for k, on := range []func(*tensor.Tensor) *tensor.Tensor{func(x *tensor.Tensor) *tensor.Tensor { return x }, func(x *tensor.Tensor) *tensor.Tensor { return onGPU(t, d, x) }} {
			x := on(logits)
			tp := tape.New()
			tp.Watch(x)
			l := c.loss(x, on(c.labels))
			g := tp.Gradient(l, x)[0]
			tp.Stop()
			loss[k], grad[k] = l.Float(), tensor.ToSlice[float32](onHost(t, g))
		}
		if math.Abs(loss[0]-loss[1]) > 1e-6*math.Abs(loss[0]) {
			t.Errorf("%s: loss %v on the GPU, %v on the CPU", c.name, loss[1], loss[0])
		}
		for i := range grad[0] {
			if math.Abs(float64(grad[0][i]-grad[1][i])) > 1e-6 {
				t.Fatalf("%s: gradient %d is %v on the GPU, %v on the CPU", c.name, i, grad[1][i], grad[0][i])
			}
		}
	}
}
