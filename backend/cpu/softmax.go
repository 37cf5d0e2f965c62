package cpu

import (
	"math"

	"github.com/eagerflow/eagerflow/backend/move"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernels of the softmax family (ops/softmax.go).

// logSoftmaxKernel computes (x - max) - log(sum(exp(x - max))) along the
// last dimension, one row at a time: x - max first, exactly for the
// largest logits, so that a row of equal large logits gives exactly -log n
// (x - (max + log s) rounds at the scale of x); the log of the sum by
// logSumShifted, so that a largest logit far above the others keeps the
// relative precision of its log-probability near 0.
func logSoftmaxKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	x := c.Inputs[0]
	n := x.Dim(-1)
	xv, ov := data[T](x), data[T](outs[0])
	if n == 0 {
		return
	}
	rows := len(xv) / n
	deviceOf(c).Parallel(rows, expCost32*float64(n), func(lo, hi int) {
		var buf [lseBlock]float32
		for r := lo; r < hi; r++ {
			row, out := xv[r*n:(r+1)*n], ov[r*n:(r+1)*n]
			m, ls := logSumShifted(row, &buf)
			addScalar(out, row, -m)
			addScalar(out, out, -T(ls))
		}
	})
}

// lseBlock is how many float32 exponentials logSumShifted computes at
// once.
const lseBlock = 256

// logSumShifted returns row's maximum m and log Σ e^(v - m) over row (so
// the row's log-sum-exp is m + that), the latter as log k + log1p(r/k),
// k the elements at the maximum (each e^0 = 1, counted where v - m is 0)
// and r the others' sum in float64: 1 + r rounded would lose r's digits
// below 2^-53, all of them where the largest logit stands far above the
// rest (a log-probability of -4e-12 then came out 3e-5 off, relatively).
// float32 rows take their exponentials a block at a time from the vector
// exp32Loop (within 2 ulp each), each block summed by the vector kernels;
// float64 rows from math.Exp. A row holding NaN, or whose maximum is
// ±Inf, gives NaN.
func logSumShifted[T tensor.Float](row []T, buf *[lseBlock]float32) (T, float64) {
	m := rowMax(row)
	k, r := 0, 0.0
	if r32, ok := any(row).([]float32); ok {
		m32 := float32(m)
		sum := sumReducer[float32]().row
		for lo := 0; lo < len(r32); lo += lseBlock {
			blk := r32[lo:min(lo+lseBlock, len(r32))]
			e := buf[:len(blk)]
			addScalar(e, blk, -m32)
			exp32Loop(e, e)
			if len(blk) == len(r32) || rowMax(blk) == m32 {
				// The block holds the maximum (most of a long row's do
				// not): its ones are counted, not summed.
				for i, v := range blk {
					if v-m32 == 0 {
						k, e[i] = k+1, 0
					}
				}
			}
			r += float64(sum(0, e))
		}
	} else {
		for _, v := range row {
			if d := float64(v - m); d == 0 {
				k++
			} else {
				r += math.Exp(d)
			}
		}
	}
	return m, math.Log(float64(k)) + math.Log1p(r/float64(k))
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
	deviceOf(c).Parallel(len(xv)/n, expCost32*float64(n)+float64(n), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row, out := xv[r*n:(r+1)*n], ov[r*n:(r+1)*n]
			scaleRow(out, T(1/expShifted(out, row)))
		}
	})
}

// expShifted sets out to e^(row - max(row)) (row not empty) and returns
// the sum of out: the softmax's numerators and denominator.
func expShifted[T tensor.Float](out, row []T) float64 {
	addScalar(out, row, -rowMax(row))
	if o32, ok := any(out).([]float32); ok {
		exp32Loop(o32, o32)
		return float64(sumReducer[float32]().row(0, o32))
	}
	s := 0.0
	for i, v := range out {
		e := math.Exp(float64(v))
		out[i] = T(e)
		s += e
	}
	return s
}

func sparseXentKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	x, classes := c.Inputs[0], c.Inputs[0].Dim(1)
	ids := move.CheckLabels(c, 1, classes)
	xv, ov := data[T](x), data[T](outs[0])
	deviceOf(c).Parallel(len(ov), expCost32*float64(classes), func(lo, hi int) {
		var buf [lseBlock]float32
		for r := lo; r < hi; r++ {
			row := xv[r*classes : (r+1)*classes]
			m, ls := logSumShifted(row, &buf)
			ov[r] = T(float64(m) - float64(row[ids[r]]) + ls)
		}
	})
}

// sparseXentGradKernel sets each row to (softmax(logits) - onehot)·dy.
func sparseXentGradKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	x, classes := c.Inputs[0], c.Inputs[0].Dim(1)
	ids := move.CheckLabels(c, 1, classes)
	xv, dy, ov := data[T](x), data[T](c.Inputs[2]), data[T](outs[0])
	deviceOf(c).Parallel(len(dy), expCost32*float64(classes)+float64(classes), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row, out := xv[r*classes:(r+1)*classes], ov[r*classes:(r+1)*classes]
			scaleRow(out, T(float64(dy[r])/expShifted(out, row)))
			out[ids[r]] -= dy[r]
		}
	})
}

// logSoftmaxGradKernel sets each row to dy − e^y·Σdy (LogSoftmaxGrad:
// y the log-probabilities), in one op where the composition took four.
func logSoftmaxGradKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	rowsGrad[T](c, outs, expCost32+2, func(out, y, dy []T) {
		s := sumReducer[T]().row(0, dy)
		expInto(out, y)
		scaleRow(out, -s)
		addInto(out, dy)
	})
}

// softmaxGradKernel sets each row to y·(dy − Σdy·y) (SoftmaxGrad: y the
// probabilities).
func softmaxGradKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	rowsGrad[T](c, outs, 3, func(out, y, dy []T) {
		addScalar(out, dy, -dot(dy, y))
		mulRows(out, y)
	})
}

// rowsGrad runs row(out, y, dy) over the rows of the last dimension of
// the inputs (y, dy), spread over the workers at about cost an element.
func rowsGrad[T tensor.Float](c *eager.Call, outs []*tensor.Tensor, cost float64, row func(out, y, dy []T)) {
	y := c.Inputs[0]
	n := y.Dim(-1)
	yv, dv, ov := data[T](y), data[T](c.Inputs[1]), data[T](outs[0])
	if n == 0 || len(ov) == 0 {
		return
	}
	deviceOf(c).Parallel(len(ov)/n, cost*float64(n), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row(ov[r*n:][:n], yv[r*n:][:n], dv[r*n:][:n])
		}
	})
}

// expInto sets o to exp(x) (float32 by the vector kernel).
func expInto[T tensor.Float](o, x []T) {
	if o32, ok := any(o).([]float32); ok {
		exp32Loop(o32, any(x).([]float32))
		return
	}
	for i, v := range x[:len(o)] {
		o[i] = T(math.Exp(float64(v)))
	}
}

func init() {
	kernels{f32: logSoftmaxGradKernel[float32], f64: logSoftmaxGradKernel[float64]}.register("LogSoftmaxGrad")
	kernels{f32: softmaxGradKernel[float32], f64: softmaxGradKernel[float64]}.register("SoftmaxGrad")
	kernels{f32: logSoftmaxKernel[float32], f64: logSoftmaxKernel[float64]}.register("LogSoftmax")
	kernels{f32: softmaxKernel[float32], f64: softmaxKernel[float64]}.register("Softmax")
	kernels{f32: sparseXentKernel[float32], f64: sparseXentKernel[float64]}.register("SparseSoftmaxCrossEntropy")
	kernels{f32: sparseXentGradKernel[float32], f64: sparseXentGradKernel[float64]}.register("SparseSoftmaxCrossEntropyGrad")
}
