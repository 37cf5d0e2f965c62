package tape

import (
	"fmt"
	"math"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// CheckResult is the outcome of CheckGradient.
type CheckResult struct {
	// MaxError is the largest |analytic - numeric| / max(1, |numeric|) over
	// every element of every input.
	MaxError float64
	// Input and Index locate it.
	Input, Index      int
	Analytic, Numeric float64
}

func (r CheckResult) String() string {
	return fmt.Sprintf("max error %.3g at input %d element %d (analytic %.9g, numeric %.9g)",
		r.MaxError, r.Input, r.Index, r.Analytic, r.Numeric)
}

// CheckGradient compares the tape's gradient of f at xs with central finite
// differences. xs must be Float64 (the check is meaningless in float32).
// When f returns a non-scalar, the check differentiates sum(f(xs) * w) for
// a fixed random w, which exercises every output. step is the difference
// step (0 means 1e-6).
func CheckGradient(f func(xs []*tensor.Tensor) *tensor.Tensor, xs []*tensor.Tensor, step float64) CheckResult {
	if f == nil {
		panic(tensor.NewError("tape", "CheckGradient", tensor.ErrAttr, nil, "", "the function is nil"))
	}
	if len(xs) == 0 {
		panic(tensor.NewError("tape", "CheckGradient", tensor.ErrArity, nil, "", "no inputs to check the gradient at"))
	}
	needAll("CheckGradient", "input", xs)
	if step == 0 {
		step = 1e-6
	}
	for i, x := range xs {
		if x.DType() != tensor.Float64 {
			panic(tensor.NewError("tape", "CheckGradient", tensor.ErrDType, xs, "", "input %d is %v; the check needs float64", i, x.DType()))
		}
	}
	var w *tensor.Tensor
	loss := func(in []*tensor.Tensor) *tensor.Tensor {
		y := f(in)
		if y.Rank() == 0 {
			return y
		}
		if w == nil {
			w = tensor.RandUniform(tensor.NewRNG(7), tensor.Float64, 0.5, 1.5, y.Shape()...)
		}
		return ops.Sum(ops.Mul(y, w))
	}
	tp := New()
	tp.Watch(xs...)
	y := loss(xs)
	analytic := tp.Gradient(y, xs...)

	res := CheckResult{MaxError: -1}
	for i, x := range xs {
		base := tensor.ToSlice[float64](x)
		var a []float64
		if analytic[i] != nil {
			a = tensor.ToSlice[float64](analytic[i])
		} else {
			a = make([]float64, len(base))
		}
		at := func(j int, v float64) float64 {
			moved := append([]float64(nil), base...)
			moved[j] = v
			in := append([]*tensor.Tensor(nil), xs...)
			in[i] = ops.Reshape(tensor.FromSlice(moved), x.Shape()...)
			return loss(in).Float()
		}
		for j, v := range base {
			h := step * math.Max(1, math.Abs(v))
			num := (at(j, v+h) - at(j, v-h)) / (2 * h)
			err := math.Abs(a[j]-num) / math.Max(1, math.Abs(num))
			if math.IsNaN(err) {
				err = math.Inf(1)
			}
			if err > res.MaxError {
				res = CheckResult{MaxError: err, Input: i, Index: j, Analytic: a[j], Numeric: num}
			}
		}
	}
	return res
}
