package ops

import (
	"math"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// logSoftmaxKernel computes (x - max) - log(sum(exp(x - max))) along the
// last dimension, one row at a time: x - max first, exactly for the
// largest logits, so that a row of equal large logits gives exactly -log n
// (x - (max + log s) rounds at the scale of x).
func logSoftmaxKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	x := c.Inputs[0]
	n := x.Dim(-1)
	xv, ov := data[T](x), data[T](outs[0])
	if n == 0 {
		return
	}
	rows := len(xv) / n
	cpu(c).Parallel(rows, expCost32*float64(n), func(lo, hi int) {
		var buf [lseBlock]float32
		for r := lo; r < hi; r++ {
			row, out := xv[r*n:(r+1)*n], ov[r*n:(r+1)*n]
			m, s := maxAndSumExp(row, &buf)
			ls := T(math.Log(s))
			for i, v := range row {
				out[i] = (v - m) - ls
			}
		}
	})
}

// lseBlock is how many float32 exponentials maxAndSumExp computes at once.
const lseBlock = 256

// maxAndSumExp returns row's maximum m and Σ e^(v - m) over row, the sum
// in float64 (so the row's log-sum-exp is m + log s). float32 rows take
// their exponentials a block at a time from the vector exp32Loop (within 2
// ulp each); float64 rows from math.Exp. A row holding NaN gives NaN; one
// whose maximum is +Inf gives s NaN.
func maxAndSumExp[T tensor.Float](row []T, buf *[lseBlock]float32) (T, float64) {
	m := row[0]
	for _, v := range row {
		m = max(m, v)
	}
	s := 0.0
	if r32, ok := any(row).([]float32); ok {
		m32 := float32(m)
		for lo := 0; lo < len(r32); lo += lseBlock {
			blk := r32[lo:min(lo+lseBlock, len(r32))]
			e := buf[:len(blk)]
			for i, v := range blk {
				e[i] = v - m32
			}
			exp32Loop(e, e)
			for _, v := range e {
				s += float64(v)
			}
		}
	} else {
		for _, v := range row {
			s += math.Exp(float64(v - m))
		}
	}
	return m, s
}

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
	logSoftmaxOp = eager.Register(cpuKernels{f32: logSoftmaxKernel[float32], f64: logSoftmaxKernel[float64]}.register(&eager.Op{
		Name: "LogSoftmax", Inputs: 1, DTypes: floatTypes,
		Infer: inferRows,
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			// d/dx: dy - softmax * sum(dy) along the last dimension.
			y, dy := g.Outputs[0], g.OutGrads[0]
			s := Reduce(dy, Reduction{Kind: ReduceSum, Dims: []int{-1}, KeepDims: true})
			return []*tensor.Tensor{Sub(dy, Mul(Exp(y), s))}
		},
	}))
}

// LogSoftmax returns log(softmax(x)) along axis (negative counts from the
// end), computed stably. x: Float32 or Float64, rank >= 1.
func LogSoftmax(x *tensor.Tensor, axis int) *tensor.Tensor {
	defer asOp("LogSoftmax")
	return alongLast("LogSoftmax", logSoftmaxOp, x, axis)
}

// Softmax returns exp(x - logsumexp(x)) along axis, one op and one pass
// per row (float32 rows through the vector exp). x: Float32 or Float64,
// rank >= 1.
func Softmax(x *tensor.Tensor, axis int) *tensor.Tensor {
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
		tensor.Panicf("ops", name, tensor.ErrAxis, []*tensor.Tensor{x}, "", "axis %d is out of range for rank %d", axis, r)
	}
	perm := make([]int, r)
	for i := range perm {
		perm[i] = i
	}
	perm[axis], perm[r-1] = r-1, axis
	return Transpose(eager.Run1(op, nil, Transpose(x, perm...)), perm...)
}

// softmaxKernel computes e^(x - max) / Σ e^(x - max) along the last
// dimension, one row at a time: the exponentials once, into the output,
// then scaled by the reciprocal of their float64 sum.
func softmaxKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	x := c.Inputs[0]
	n := x.Dim(-1)
	xv, ov := data[T](x), data[T](outs[0])
	if n == 0 {
		return
	}
	cpu(c).Parallel(len(xv)/n, expCost32*float64(n)+float64(n), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row, out := xv[r*n:(r+1)*n], ov[r*n:(r+1)*n]
			m := row[0]
			for _, v := range row {
				m = max(m, v)
			}
			for i, v := range row {
				out[i] = v - m
			}
			s := 0.0
			if o32, ok := any(out).([]float32); ok {
				exp32Loop(o32, o32)
				for _, v := range o32 {
					s += float64(v)
				}
			} else {
				for i, v := range out {
					e := math.Exp(float64(v))
					out[i] = T(e)
					s += e
				}
			}
			inv := 1 / s
			for i, v := range out {
				out[i] = T(float64(v) * inv)
			}
		}
	})
}

var softmaxOp = eager.Register(cpuKernels{f32: softmaxKernel[float32], f64: softmaxKernel[float64]}.register(&eager.Op{
	Name: "Softmax", Inputs: 1, DTypes: floatTypes, Infer: inferRows,
	Grad: func(g *eager.Grad) []*tensor.Tensor {
		// d/dx: y·(dy - Σ dy·y) along the last dimension.
		y, dy := g.Outputs[0], g.OutGrads[0]
		s := Reduce(Mul(dy, y), Reduction{Kind: ReduceSum, Dims: []int{-1}, KeepDims: true})
		return []*tensor.Tensor{Mul(y, Sub(dy, s))}
	},
}))

// SoftmaxCrossEntropy returns -sum(labels * log softmax(logits)) over the
// last dimension: logits, labels: [..., classes] of one float dtype ->
// [...]. labels are probabilities (each row summing to 1).
func SoftmaxCrossEntropy(logits, labels *tensor.Tensor) *tensor.Tensor {
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
	return Neg(Sum(Mul(labels, LogSoftmax(logits, -1)), -1))
}

// SparseSoftmaxCrossEntropy is SoftmaxCrossEntropy with integer class
// labels: logits: [batch, classes] float; labels: [batch] Int32 or Int64 with
// values in [0, classes) -> [batch]. One op, one pass per row (max, the
// log-sum-exp, minus the label's logit), as TensorFlow's
// SparseSoftmaxCrossEntropyWithLogits; its gradient, (softmax(logits) -
// onehot(labels))·dy per row, is made of ops, so it differentiates again.
// Gradients flow to logits only. Panics with a *tensor.Error if a label is
// out of range (naming the first one).
func SparseSoftmaxCrossEntropy(logits, labels *tensor.Tensor) *tensor.Tensor {
	return eager.Run1(sparseXentOp, nil, logits, labels)
}

// labelIDs returns labels' values as int64, checking that they index
// classes classes.
func labelIDs(c *eager.Call, labels *tensor.Tensor, classes int) []int64 {
	var ids []int64
	switch labels.DType() {
	case tensor.Int32:
		for _, v := range tensor.ToSlice[int32](labels) {
			ids = append(ids, int64(v))
		}
	case tensor.Int64:
		ids = tensor.ToSlice[int64](labels)
	default:
		c.Fail(tensor.ErrDType, "labels must be int32 or int64, got %v", labels.DType())
	}
	for i, v := range ids {
		if v < 0 || v >= int64(classes) {
			c.Fail(tensor.ErrIndex, "label %d at row %d is outside [0, %d)", v, i, classes)
		}
	}
	return ids
}

func sparseXentKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	x, classes := c.Inputs[0], c.Inputs[0].Dim(1)
	ids := labelIDs(c, c.Inputs[1], classes)
	xv, ov := data[T](x), data[T](outs[0])
	cpu(c).Parallel(len(ov), expCost32*float64(classes), func(lo, hi int) {
		var buf [lseBlock]float32
		for r := lo; r < hi; r++ {
			row := xv[r*classes : (r+1)*classes]
			m, s := maxAndSumExp(row, &buf)
			ov[r] = T(float64(m) - float64(row[ids[r]]) + math.Log(s))
		}
	})
}

var sparseXentOp *eager.Op

func init() {
	sparseXentOp = eager.Register(cpuKernels{f32: sparseXentKernel[float32], f64: sparseXentKernel[float64]}.register(&eager.Op{
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
			p := Sub(Softmax(logits, -1), OneHot(labels, logits.Dim(1), logits.DType()))
			return []*tensor.Tensor{Mul(p, ExpandDims(dy, 1)), nil}
		},
	}))
}

// OneHot returns [..., depth] of dtype dt with 1 where the last index equals
// the label and 0 elsewhere. indices: Int32 or Int64 of shape [...].
// Out-of-range indices give an all-zero row.
func OneHot(indices *tensor.Tensor, depth int, dt tensor.DType) *tensor.Tensor {
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
