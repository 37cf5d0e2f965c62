package cpu

import (
	"math"

	"github.com/chewxy/math32"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernels of the float functions of ops/math.go.

func isFinite[T tensor.Float](o []bool, x []T) {
	x = x[:len(o)]
	for i := range o {
		v := float64(x[i])
		o[i] = !math.IsNaN(v) && !math.IsInf(v, 0)
	}
}

// via64 computes a float32 function in float64 and rounds once: within 1
// ulp wherever the float64 function is. github.com/chewxy/math32's float32
// versions of Sin and Cos lose their argument reduction (895 ulp at 110)
// and its Expm1 overflows early (a finite value at 89, not +Inf), which
// TestFloat32ScalarFunctions shows.
func via64(f func(float64) float64) func(float32) float32 {
	return func(x float32) float32 { return float32(f(float64(x))) }
}

func init() {
	floatLoops("Sin", mapLoop(via64(math.Sin)), 20, math.Sin)
	floatLoops("Cos", mapLoop(via64(math.Cos)), 20, math.Cos)
	floatLoops("Log1p", mapLoop(math32.Log1p), 20, math.Log1p)
	floatLoops("Expm1", mapLoop(via64(math.Expm1)), 20, math.Expm1)
	floatLoops("Erf", erf32Loop, expCost32, math.Erf)
	floatLoops("Ceil", mapLoop(math32.Ceil), 20, math.Ceil)
	floatLoops("Floor", mapLoop(math32.Floor), 20, math.Floor)
	floatLoops("Round", mapLoop(math32.Round), 20, math.Round)
	kernels{f32: unaryKernel(1, isFinite[float32]), f64: unaryKernel(1, isFinite[float64])}.register("IsFinite")
}
