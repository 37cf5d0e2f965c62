package cpu

import (
	"math"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/mathx"
)

// Kernels of ops/trigonometry.go's functions: float64 by package math
// (internal/mathx where math's misses: Tan near its poles and for large
// arguments, Sinh and Cosh near the range's end, Asin and Acos near ±1,
// Log10 at the powers of 10), float32 through it, rounded once.

func init() {
	floatLoops("Tan", trigLoop(trigTan, mathx.Tan), trigCost32, mathx.Tan)
	floatLoops("Atan", lanesLoop(satan4, math.Atan), trigCost32, math.Atan)
	floatLoops("Log2", logLoop(logTwo, mathx.Log2), trigCost32, mathx.Log2)
	floatLoops("Log10", logLoop(logTen, mathx.Log10), trigCost32, mathx.Log10)
	for op, f := range map[string]func(float64) float64{
		"Asin": mathx.Asin, "Acos": mathx.Acos,
		"Sinh": mathx.Sinh, "Cosh": mathx.Cosh, "Asinh": math.Asinh, "Acosh": math.Acosh, "Atanh": math.Atanh,
		"Exp2": math.Exp2,
	} {
		floatLoops(op, mapLoop(via64(f)), 20, f)
	}
	binaryFloatFuncs(map[string]func(a, b float64) float64{"Atan2": math.Atan2, "Hypot": math.Hypot, "LogAddExp": mathx.LogAddExp})
}

// binaryFloatFuncs registers broadcasting functions of two floats by
// their float64 functions, float32 through them, rounded once.
func binaryFloatFuncs(fs map[string]func(a, b float64) float64) {
	for op, f := range fs {
		f32 := scalarLoops(func(a, b float32) float32 { return float32(f(float64(a), float64(b))) })
		kernels{f32: binaryKernel(f32), f64: binaryKernel(scalarLoops(f)),
			elementwise: &eager.ElementwiseF32{VV: f32.vv, VS: f32.vs, SV: f32.sv}}.register(op)
	}
}
