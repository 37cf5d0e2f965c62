package ops

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

var logSoftmaxOp *eager.Op

// inferRows is the shape rule of the ops over rows of the last dimension
// (LogSoftmax, Softmax): x's dtype and shape, rank 1 or more.
func inferRows(c *eager.Call) []eager.Out {
	x := c.Inputs[0]
	if x.Rank() == 0 {
		c.Fail(tensor.ErrRank, "needs rank 1 or more")
	}
	return c.Out1(x.DType(), x.Shape())
}

func init() {
	logSoftmaxOp = eager.Register(&eager.Op{
		Name: "LogSoftmax", Inputs: 1, DTypes: floatTypes,
		Infer: inferRows,
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			return []*tensor.Tensor{eager.Run1(logSoftmaxGradOp, nil, g.Outputs[0], g.OutGrads[0])}
		},
	})
}

// rowSum is x's sum along the last dimension, kept.
func rowSum(x *tensor.Tensor) *tensor.Tensor {
	return Reduce(x, Reduction{Kind: ReduceSum, Dims: []int{-1}, KeepDims: true})
}

// inferRowsGrad is the shape rule of the softmaxes' gradient ops (y, dy):
// y's dtype and shape, which dy shares, rank 1 or more.
func inferRowsGrad(c *eager.Call) []eager.Out {
	if !c.Inputs[0].Shape().Equal(c.Inputs[1].Shape()) {
		c.Fail(tensor.ErrShape, "y %v and dy %v differ", c.Inputs[0].Shape(), c.Inputs[1].Shape())
	}
	return inferRows(c)
}

// The softmaxes' gradients, one op and one pass over a row each (the
// compositions below took four ops and as many passes); their own
// gradients (second order) are those compositions' derivatives, in ops.
var (
	// LogSoftmaxGrad (y, dy): dy − e^y·Σdy along the last dimension.
	logSoftmaxGradOp = eager.Register(&eager.Op{
		Name: "LogSoftmaxGrad", Inputs: 2, DTypes: floatTypes, SameDTypes: true, Infer: inferRowsGrad,
		GradReads: eager.ReadsInputs,
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			// d(dy) = ddx − Σ(ddx·p); d(y) = −ddx·p·Σdy, p = e^y.
			y, dy, ddx := g.Inputs[0], g.Inputs[1], g.OutGrads[0]
			t := temps{}
			defer t.release()
			dp := t.keep(Mul(ddx, t.keep(Exp(y))))
			return []*tensor.Tensor{
				when(g.Needs[0], func() *tensor.Tensor { return Mul(dp, t.keep(Neg(t.keep(rowSum(dy))))) }),
				when(g.Needs[1], func() *tensor.Tensor { return Sub(ddx, t.keep(rowSum(dp))) }),
			}
		},
	})
	// SoftmaxGrad (y, dy): y·(dy − Σdy·y) along the last dimension.
	softmaxGradOp = eager.Register(&eager.Op{
		Name: "SoftmaxGrad", Inputs: 2, DTypes: floatTypes, SameDTypes: true, Infer: inferRowsGrad,
		GradReads: eager.ReadsInputs,
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			// d(dy) = y·(ddx − Σddx·y); d(y) = ddx·(dy − Σdy·y) − dy·Σddx·y.
			y, dy, ddx := g.Inputs[0], g.Inputs[1], g.OutGrads[0]
			t := temps{}
			defer t.release()
			r := t.keep(rowSum(t.keep(Mul(ddx, y))))
			return []*tensor.Tensor{
				when(g.Needs[0], func() *tensor.Tensor {
					s := t.keep(rowSum(t.keep(Mul(dy, y))))
					return Sub(t.keep(Mul(ddx, t.keep(Sub(dy, s)))), t.keep(Mul(dy, r)))
				}),
				when(g.Needs[1], func() *tensor.Tensor { return Mul(y, t.keep(Sub(ddx, r))) }),
			}
		},
	})
)

// LogSoftmax returns log(softmax(x)) along axis (negative counts from the
// end), computed stably. x: Float32 or Float64, rank >= 1.
func LogSoftmax(x *tensor.Tensor, axis int) *tensor.Tensor {
	needInputs("LogSoftmax", x)
	defer asOp("LogSoftmax")
	return alongLast("LogSoftmax", logSoftmaxOp, x, axis)
}

// Softmax returns exp(x - logsumexp(x)) along axis, one op and one pass
// per row (float32 rows through the vector exp). x: Float32 or Float64,
// rank >= 1.
func Softmax(x *tensor.Tensor, axis int) *tensor.Tensor {
	needInputs("Softmax", x)
	defer asOp("Softmax")
	return alongLast("Softmax", softmaxOp, x, axis)
}

// alongLast runs a row op of the last dimension along axis, transposing
// axis to the end and back when it is another.
func alongLast(name string, op *eager.Op, x *tensor.Tensor, axis int) *tensor.Tensor {
	r := x.Rank()
	if axis < 0 {
		axis += r
	}
	if r == 0 || axis == r-1 {
		return eager.Run1(op, nil, x)
	}
	if axis < 0 || axis >= r {
		panic(tensor.NewError("ops", name, tensor.ErrAxis, []*tensor.Tensor{x}, "", "axis %d is out of range for rank %d", axis, r))
	}
	perm := make([]int, r)
	for i := range perm {
		perm[i] = i
	}
	perm[axis], perm[r-1] = r-1, axis
	return Transpose(eager.Run1(op, nil, Transpose(x, perm...)), perm...)
}

var softmaxOp = eager.Register(&eager.Op{
	Name: "Softmax", Inputs: 1, DTypes: floatTypes, Infer: inferRows,
	Grad: func(g *eager.Grad) []*tensor.Tensor {
		return []*tensor.Tensor{eager.Run1(softmaxGradOp, nil, g.Outputs[0], g.OutGrads[0])}
	},
})

// SoftmaxCrossEntropy returns -sum(labels * log softmax(logits)) over the
// last dimension: logits, labels: [..., classes] of one float dtype ->
// [...]. labels are probabilities (each row summing to 1). A class whose
// label is exactly 0 adds nothing, even where its logit is -Inf (a
// masked class: 0·log 0 is 0 in an entropy), as SparseSoftmaxCrossEntropy
// and the gradient have it; PyTorch's and TensorFlow's losses are NaN
// there.
func SoftmaxCrossEntropy(logits, labels *tensor.Tensor) *tensor.Tensor {
	needInputs("SoftmaxCrossEntropy", logits, labels)
	defer asOp("SoftmaxCrossEntropy")
	in := []*tensor.Tensor{logits, labels}
	if !logits.Shape().Equal(labels.Shape()) {
		fail("SoftmaxCrossEntropy", tensor.ErrShape, in, "logits %v and labels %v must have the same shape", logits.Shape(), labels.Shape())
	}
	if !logits.DType().IsFloat() || labels.DType() != logits.DType() {
		fail("SoftmaxCrossEntropy", tensor.ErrDType, in, "logits and labels must share a float dtype, got %v and %v", logits.DType(), labels.DType())
	}
	if logits.Rank() == 0 {
		fail("SoftmaxCrossEntropy", tensor.ErrRank, in, "needs rank 1 or more")
	}
	zero := scratch(ScalarLike(labels, 0))
	terms := Where(Eq(labels, zero), zero, Mul(labels, LogSoftmax(logits, -1)))
	return Neg(Sum(terms, -1))
}

// SparseSoftmaxCrossEntropy is SoftmaxCrossEntropy with integer class
// labels: logits: [batch, classes] float; labels: [batch] Int32 or Int64 with
// values in [0, classes) -> [batch]. One op, one pass per row (max, the
// log-sum-exp, minus the label's logit), as TensorFlow's
// SparseSoftmaxCrossEntropyWithLogits; its gradient, (softmax(logits) -
// onehot(labels))·dy per row, is one op more where the device has its
// kernel (SparseSoftmaxCrossEntropyGrad), made of ops elsewhere; either
// differentiates again.
// Gradients flow to logits only. Panics with a *tensor.Error if a label is
// out of range (naming the first one).
func SparseSoftmaxCrossEntropy(logits, labels *tensor.Tensor) *tensor.Tensor {
	return eager.Run1(sparseXentOp, nil, logits, labels)
}

var sparseXentOp, sparseXentGradOp *eager.Op

func init() {
	sparseXentOp = eager.Register(&eager.Op{
		Name: "SparseSoftmaxCrossEntropy", Inputs: 2, DTypes: floatTypes, KeyInput: 0,
		Infer: func(c *eager.Call) []eager.Out {
			logits, labels := c.Inputs[0], c.Inputs[1]
			if logits.Rank() != 2 || labels.Rank() != 1 || labels.Dim(0) != logits.Dim(0) {
				c.Fail(tensor.ErrShape, "need logits [batch classes] and labels [batch]")
			}
			if logits.Dim(1) == 0 && logits.Dim(0) > 0 {
				c.Fail(tensor.ErrShape, "logits %v have no classes", logits.Shape())
			}
			if labels.DType() != tensor.Int32 && labels.DType() != tensor.Int64 {
				c.Fail(tensor.ErrDType, "labels must be int32 or int64, got %v", labels.DType())
			}
			return c.Out1(logits.DType(), tensor.Shape{logits.Dim(0)})
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			logits, labels, dy := g.Inputs[0], g.Inputs[1], g.OutGrads[0]
			if fusedOn(sparseXentGradOp, logits) {
				return []*tensor.Tensor{eager.Run1(sparseXentGradOp, nil, logits, labels, dy), nil}
			}
			p := Sub(Softmax(logits, -1), OneHot(labels, logits.Dim(1), logits.DType()))
			return []*tensor.Tensor{Mul(p, ExpandDims(dy, 1)), nil}
		},
	})
	// SparseSoftmaxCrossEntropyGrad(logits, labels, dy) = (softmax(logits)
	// - onehot(labels))·dy per row, in one pass. Its own gradient, for an
	// outer gradient G: for the logits dy·(p⊙G - p·Σ(p⊙G)), p the softmax;
	// for dy Σ (p - onehot)⊙G; as ops.
	sparseXentGradOp = eager.Register(&eager.Op{
		Name: "SparseSoftmaxCrossEntropyGrad", Inputs: 3, DTypes: floatTypes, KeyInput: 0,
		Infer: func(c *eager.Call) []eager.Out {
			logits, labels, dy := c.Inputs[0], c.Inputs[1], c.Inputs[2]
			if logits.Rank() != 2 || labels.Rank() != 1 || labels.Dim(0) != logits.Dim(0) || !dy.Shape().Equal(labels.Shape()) {
				c.Fail(tensor.ErrShape, "need logits [batch classes], labels [batch] and their gradient [batch]")
			}
			if logits.Dim(1) == 0 && logits.Dim(0) > 0 {
				c.Fail(tensor.ErrShape, "logits %v have no classes", logits.Shape())
			}
			if labels.DType() != tensor.Int32 && labels.DType() != tensor.Int64 {
				c.Fail(tensor.ErrDType, "labels must be int32 or int64, got %v", labels.DType())
			}
			if dy.DType() != logits.DType() {
				c.Fail(tensor.ErrDType, "the gradient must be %v as the logits are, got %v", logits.DType(), dy.DType())
			}
			return c.Out1(logits.DType(), logits.Shape())
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			logits, labels, dy, outer := g.Inputs[0], g.Inputs[1], g.Inputs[2], g.OutGrads[0]
			p := Softmax(logits, -1)
			pg := Mul(p, outer)
			rows := Reduction{Kind: ReduceSum, Dims: []int{-1}, KeepDims: true}
			dLogits := Mul(ExpandDims(dy, 1), Sub(pg, Mul(p, Reduce(pg, rows))))
			dDy := Sum(Mul(Sub(p, OneHot(labels, logits.Dim(1), logits.DType())), outer), -1)
			return []*tensor.Tensor{dLogits, nil, dDy}
		},
	})
}

// OneHot returns [..., depth] of dtype dt with 1 where the last index equals
// the label and 0 elsewhere. indices: Int32 or Int64 of shape [...].
// Out-of-range indices give an all-zero row.
func OneHot(indices *tensor.Tensor, depth int, dt tensor.DType) *tensor.Tensor {
	needInputs("OneHot", indices)
	defer asOp("OneHot")
	in := []*tensor.Tensor{indices}
	if depth < 0 {
		fail("OneHot", tensor.ErrValue, in, "negative depth %d", depth)
	}
	if indices.DType() != tensor.Int32 && indices.DType() != tensor.Int64 {
		fail("OneHot", tensor.ErrDType, in, "indices must be int32 or int64, got %v", indices.DType())
	}
	if !dt.Valid() {
		fail("OneHot", tensor.ErrDType, in, "invalid output dtype %v", dt)
	}
	if _, ok := tensor.ByteSize(dt, append(indices.Shape().Clone(), depth)); !ok {
		fail("OneHot", tensor.ErrShape, in, "depth %d gives more elements than an int can count", depth)
	}
	classes := on(tensor.Arange[int64](0, int64(depth), 1), indices.Device())
	if indices.DType() != tensor.Int64 {
		classes = Cast(classes, indices.DType())
	}
	col := Reshape(indices, append(indices.Shape().Clone(), 1)...)
	return Cast(Eq(col, classes), dt)
}
