package cpu

import (
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Float64 Exp, Log and Gelu at the edges where Go's math package (amd64)
// or a naive formula goes wrong: e^x is finite up to 709.7827, the log of
// a subnormal, and Gelu's limit -0 at -Inf.
func TestFloat64Edges(t *testing.T) {
	one := func(f func(*tensor.Tensor) *tensor.Tensor, x float64) float64 {
		return tensor.ToSlice[float64](f(tensor.Scalar(x)))[0]
	}
	if got := one(ops.Exp, 709.78); math.IsInf(got, 0) || math.Abs(got-1.7928227943945155e+308) > 1e-15*got {
		t.Errorf("Exp(709.78) = %v, want 1.7928227943945155e+308", got)
	}
	if got := one(ops.Log, 5e-324); math.Abs(got+744.4400719213812) > 1e-13 {
		t.Errorf("Log(5e-324) = %v, want -744.4400719213812", got)
	}
	if got := one(ops.Gelu, math.Inf(-1)); got != 0 || !math.Signbit(got) {
		t.Errorf("Gelu(-Inf) = %v, want -0", got)
	}
	if got := one(ops.Gelu, -10); math.Abs(got+7.619853024160593e-23) > 1e-36 {
		t.Errorf("Gelu(-10) = %v, want -7.619853024160593e-23", got)
	}
}
