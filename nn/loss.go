package nn

import (
	"slices"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Losses return a scalar: the mean over the batch. They compute in
// float32 or float64: half predictions and labels are widened to float32
// first (mixed precision's rule: policy.go).

// widened returns x cast to Float32 where it is of a half type.
func widened(x *tensor.Tensor) *tensor.Tensor {
	if x != nil && x.DType().IsHalf() {
		return ops.Cast(x, tensor.Float32)
	}
	return x
}

// sameShapes panics with a *tensor.Error unless a and b have one shape
// and one float dtype: a loss that broadcast a [N 1] prediction against a
// [N] target would average N² differences without a word.
func sameShapes(loss string, a, b *tensor.Tensor) {
	in := []*tensor.Tensor{a, b}
	if a == nil || b == nil {
		panic(tensor.NewError("nn", loss, tensor.ErrArity, nil, "", "an input is nil"))
	}
	if !a.Shape().Equal(b.Shape()) {
		panic(tensor.NewError("nn", loss, tensor.ErrShape, in, "", "shapes %v and %v differ; the loss needs the same shapes (reshape one: it does not broadcast)", a.Shape(), b.Shape()))
	}
	if !a.DType().IsFloat() || a.DType() != b.DType() {
		panic(tensor.NewError("nn", loss, tensor.ErrDType, in, "", "needs one float dtype, got %v and %v", a.DType(), b.DType()))
	}
}

// MeanSquaredError is mean((pred - target)²) over every element. pred and
// target must have the same shape and float dtype (a *tensor.Error
// otherwise).
func MeanSquaredError(pred, target *tensor.Tensor) *tensor.Tensor {
	pred, target = widened(pred), widened(target)
	sameShapes("MeanSquaredError", pred, target)
	return ops.Mean(ops.Square(ops.Sub(pred, target)))
}

// SoftmaxCrossEntropy is the mean cross-entropy of logits [..., C] against
// label distributions of the same shape and float dtype.
func SoftmaxCrossEntropy(logits, labels *tensor.Tensor) *tensor.Tensor {
	logits, labels = widened(logits), widened(labels)
	if logits != nil && labels != nil && logits.Rank() > 0 && !labels.DType().IsFloat() && labels.Shape().Equal(logits.Shape()[:logits.Rank()-1]) {
		panic(tensor.NewError("nn", "SoftmaxCrossEntropy", tensor.ErrDType, []*tensor.Tensor{logits, labels}, "",
			"labels %v of %v are class indices: SparseSoftmaxCrossEntropy takes those; SoftmaxCrossEntropy takes distributions of the logits' shape", labels.Shape(), labels.DType()))
	}
	sameShapes("SoftmaxCrossEntropy", logits, labels)
	return ops.Mean(ops.SoftmaxCrossEntropy(logits, labels))
}

// SparseSoftmaxCrossEntropy is the mean cross-entropy of logits [..., C]
// against integer class labels [...] (a token model's [N, T, C] against
// [N, T], say; [..., 1] is taken as [...], as Keras's sparse loss does).
// Float labels of the logits' shape (one-hot rows) panic naming
// SoftmaxCrossEntropy, which takes those.
func SparseSoftmaxCrossEntropy(logits, labels *tensor.Tensor) *tensor.Tensor {
	logits, labels = sparseRows("SparseSoftmaxCrossEntropy", logits, labels)
	return ops.Mean(ops.SparseSoftmaxCrossEntropy(logits, labels))
}

// sparseRows is logits [..., C] (widened from a half type) as rows [N, C]
// and labels [...] (or [..., 1]) as [N], for the sparse losses (op names
// the caller in errors); other shapes are left for the op to refuse.
func sparseRows(op string, logits, labels *tensor.Tensor) (*tensor.Tensor, *tensor.Tensor) {
	logits = widened(logits)
	if logits == nil || labels == nil || logits.Rank() == 0 {
		return logits, labels
	}
	lead := logits.Shape()[:logits.Rank()-1]
	switch {
	case labels.DType().IsFloat() && labels.Shape().Equal(logits.Shape()):
		panic(tensor.NewError("nn", op, tensor.ErrDType, []*tensor.Tensor{logits, labels}, "",
			"labels %v of %v look like one-hot rows: SoftmaxCrossEntropy takes those; %s takes class indices %v", labels.Shape(), labels.DType(), op, lead))
	case labels.Rank() == logits.Rank() && labels.Dim(-1) == 1 && labels.Shape()[:labels.Rank()-1].Equal(lead):
		labels = ops.Reshape(labels, lead...)
	}
	if logits.Rank() > 2 && labels.Shape().Equal(lead) {
		logits, labels = ops.Reshape(logits, -1, logits.Dim(-1)), ops.Reshape(labels, -1)
	}
	return logits, labels
}

// CrossEntropyOpts are the options of the cross-entropies a Loss is made
// of (SparseSoftmaxCrossEntropyWith, SoftmaxCrossEntropyWith), as PyTorch's
// cross_entropy and Keras's losses take them.
type CrossEntropyOpts struct {
	// LabelSmoothing ε in [0, 1): each row's target is the label's
	// distribution times 1-ε plus ε spread evenly over the C classes,
	// the label's class included (PyTorch's label_smoothing, Keras's).
	LabelSmoothing float64
	// Ignore lists class labels whose rows count for nothing, neither in
	// the sum nor in the mean's count (PyTorch's ignore_index, Keras's
	// ignore_class: a padding token, or -100); a label outside [0, C)
	// listed here is no error. Sparse labels only. A batch whose every row
	// is ignored has a loss of 0 (PyTorch's mean is NaN there).
	Ignore []int
}

// check panics with a *tensor.Error naming op for a smoothing outside
// [0, 1), or for Ignore where there are no class labels (sparse false).
func (o CrossEntropyOpts) check(op string, sparse bool) {
	if !(o.LabelSmoothing >= 0 && o.LabelSmoothing < 1) {
		panic(tensor.NewError("nn", op, tensor.ErrAttr, nil, "", "label smoothing %v is outside [0, 1)", o.LabelSmoothing))
	}
	if !sparse && len(o.Ignore) > 0 {
		panic(tensor.NewError("nn", op, tensor.ErrAttr, nil, "", "Ignore %v names class labels, which only the sparse loss takes (SparseSoftmaxCrossEntropyWith)", o.Ignore))
	}
}

// SparseSoftmaxCrossEntropyWith is SparseSoftmaxCrossEntropy with o's
// label smoothing and ignored labels: the mean over the rows not ignored
// of (1-ε)·(LSE(z) - z_label) + ε·(LSE(z) - mean(z)) for each row's logits
// z. It panics with a *tensor.Error for a smoothing outside [0, 1); the
// Loss panics as SparseSoftmaxCrossEntropy does, and names the first label
// out of range that Ignore does not list.
func SparseSoftmaxCrossEntropyWith(o CrossEntropyOpts) Loss {
	const op = "SparseSoftmaxCrossEntropyWith"
	o.check(op, true)
	o.Ignore = slices.Clone(o.Ignore)
	return func(logits, labels *tensor.Tensor) *tensor.Tensor {
		logits, labels = sparseRows(op, logits, labels)
		mustArgs(op, arg{"logits", logits}, arg{"labels", labels})
		var keep *tensor.Tensor // bool [N]: the rows that count
		for _, ig := range o.Ignore {
			kept := ops.Ne(labels, ops.ScalarLike(labels, float64(ig)))
			if keep == nil {
				keep = kept
			} else {
				keep = ops.LogicalAnd(keep, kept)
			}
		}
		if keep != nil { // ignored rows read class 0, then count for nothing
			labels = ops.Where(keep, labels, ops.ZerosLike(labels))
		}
		rows := ops.SparseSoftmaxCrossEntropy(logits, labels)
		if e := o.LabelSmoothing; e > 0 && logits.Rank() == 2 {
			uniform := ops.Sub(ops.LogSumExp(logits, 1), ops.Mean(logits, 1))
			rows = ops.Add(ops.Mul(rows, ops.ScalarLike(rows, 1-e)), ops.Mul(uniform, ops.ScalarLike(rows, e)))
		}
		if keep == nil {
			return ops.Mean(rows)
		}
		w := ops.Cast(keep, rows.DType())
		count := ops.Maximum(ops.Sum(w), ops.ScalarLike(rows, 1))
		return ops.Div(ops.Sum(ops.Mul(rows, w)), count)
	}
}

// SoftmaxCrossEntropyWith is SoftmaxCrossEntropy with o's label
// smoothing: the labels' rows times 1-ε plus ε/C. It panics with a
// *tensor.Error for a smoothing outside [0, 1) or an Ignore list (there
// are no class labels to ignore); the Loss panics as SoftmaxCrossEntropy
// does.
func SoftmaxCrossEntropyWith(o CrossEntropyOpts) Loss {
	const op = "SoftmaxCrossEntropyWith"
	o.check(op, false)
	return func(logits, labels *tensor.Tensor) *tensor.Tensor {
		if e := o.LabelSmoothing; e > 0 && labels != nil && labels.Rank() > 0 && labels.DType().IsFloat() {
			labels = widened(labels)
			c := float64(labels.Dim(-1))
			labels = ops.Add(ops.Mul(labels, ops.ScalarLike(labels, 1-e)), ops.ScalarLike(labels, e/c))
		}
		return SoftmaxCrossEntropy(logits, labels)
	}
}

// BinaryCrossEntropyWithLogits is the mean of -z log σ(x) - (1-z) log(1-σ(x))
// for logits x and labels z in [0, 1] of the same shape and float dtype,
// computed stably as softplus(x) - x z (gradient σ(x) - z everywhere).
func BinaryCrossEntropyWithLogits(logits, labels *tensor.Tensor) *tensor.Tensor {
	logits, labels = widened(logits), widened(labels)
	sameShapes("BinaryCrossEntropyWithLogits", logits, labels)
	return ops.Mean(ops.Sub(ops.Softplus(logits), ops.Mul(logits, labels)))
}

// Accuracy is the fraction of rows of logits [..., C] whose largest entry
// is at the row's label: labels holds class indices [...] (any integer
// dtype, or floats holding integers; [..., 1] is taken as [...], as
// Keras' sparse accuracy does), or one-hot or probability rows of the
// logits' shape, whose largest entry is the class (Keras' categorical
// accuracy). Other shapes panic with a *tensor.Error naming both (they
// broadcast in the comparison, once, and gave a meaningless fraction).
func Accuracy(logits, labels *tensor.Tensor) float64 {
	mustArgs("Accuracy", arg{"logits", logits}, arg{"labels", labels})
	if logits.Rank() == 0 {
		panic(tensor.NewError("nn", "Accuracy", tensor.ErrRank, []*tensor.Tensor{logits, labels}, "", "needs logits [..., classes], got a scalar"))
	}
	rows := logits.Shape()[:logits.Rank()-1]
	switch ls := labels.Shape(); {
	case ls.Equal(logits.Shape()) && labels.DType().IsFloat():
		labels = ops.ArgMax(labels, -1)
	case ls.Equal(append(rows.Clone(), 1)):
		labels = ops.Reshape(labels, rows...)
	case !ls.Equal(rows):
		panic(tensor.NewError("nn", "Accuracy", tensor.ErrShape, []*tensor.Tensor{logits, labels}, "",
			"labels %v fit neither logits %v as class indices %v nor as one-hot rows", ls, logits.Shape(), rows))
	}
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
