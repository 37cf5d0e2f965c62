package nn

import (
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Losses return a scalar: the mean over the batch.

// MeanSquaredError is mean((pred - target)²); same shapes.
func MeanSquaredError(pred, target *tensor.Tensor) *tensor.Tensor {
	return ops.Mean(ops.Square(ops.Sub(pred, target)))
}

// SoftmaxCrossEntropy is the mean cross-entropy of logits [..., C] against
// label distributions of the same shape.
func SoftmaxCrossEntropy(logits, labels *tensor.Tensor) *tensor.Tensor {
	return ops.Mean(ops.SoftmaxCrossEntropy(logits, labels))
}

// SparseSoftmaxCrossEntropy is the mean cross-entropy of logits [N, C]
// against integer class labels [N].
func SparseSoftmaxCrossEntropy(logits, labels *tensor.Tensor) *tensor.Tensor {
	return ops.Mean(ops.SparseSoftmaxCrossEntropy(logits, labels))
}

// BinaryCrossEntropyWithLogits is the mean of -z log σ(x) - (1-z) log(1-σ(x))
// for logits x and labels z in [0, 1] of the same shape, computed stably as
// max(x, 0) - x z + log(1 + e^-|x|).
func BinaryCrossEntropyWithLogits(logits, labels *tensor.Tensor) *tensor.Tensor {
	x := logits
	return ops.Mean(ops.Add(ops.Sub(ops.Relu(x), ops.Mul(x, labels)), ops.Log1p(ops.Exp(ops.Neg(ops.Abs(x))))))
}

// Accuracy is the fraction of rows of logits [N, C] whose largest entry is
// at the label [N] (Int32 or Int64).
func Accuracy(logits, labels *tensor.Tensor) float64 {
	pred := ops.ArgMax(logits, -1)
	if labels.DType() != tensor.Int64 {
		labels = ops.Cast(labels, tensor.Int64)
	}
	hits := ops.Sum(ops.Cast(ops.Eq(pred, labels), tensor.Float64))
	return hits.Float() / float64(max(labels.NumElements(), 1))
}

// Mean is a running mean of scalars (a metric accumulated over an epoch).
type Mean struct {
	sum   float64
	count float64
}

// Add records a value with a weight (the batch size, say).
func (m *Mean) Add(v, weight float64) {
	m.sum += v * weight
	m.count += weight
}

// Value returns the mean so far (0 before any value).
func (m *Mean) Value() float64 {
	if m.count == 0 {
		return 0
	}
	return m.sum / m.count
}

// Reset forgets every value.
func (m *Mean) Reset() { *m = Mean{} }
