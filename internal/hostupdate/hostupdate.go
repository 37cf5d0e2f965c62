// Package hostupdate lends backend/cpu's in-place update kernels (the
// ones under tape.Variable's updates) to package ops's deprecated
// forwarders ops.AxpyInPlace and ops.AdamInPlace: ops cannot import
// backend/cpu, which imports ops. backend/cpu fills the variables from
// its init; they are nil in a program that does not link it.
package hostupdate

import "github.com/eagerflow/eagerflow/tensor"

// AdamParams are ops.AdamParams' fields (the two convert to each other).
type AdamParams struct {
	LR, Beta1, Beta2, C1, C2, Eps, WeightDecay float64
	GradScale                                  float64
	GradFactor                                 *tensor.Tensor
}

// The kernels, per dtype: dst += alpha*x, and one Adam step in place.
var (
	Axpy32 func(dst []float32, alpha float32, x []float32)
	Axpy64 func(dst []float64, alpha float64, x []float64)
	Adam32 func(w, m, v, g []float32, p AdamParams)
	Adam64 func(w, m, v, g []float64, p AdamParams)
)
