package cpu

import "github.com/eagerflow/eagerflow/internal/mathx"

// Kernels of ops/normal.go's functions and of their gradient ops (dy
// times mathx's derivative): internal/mathx's float64 ones, float32 and
// the half types through them, rounded once.

func init() {
	for op, f := range map[string]func(float64) float64{"Erfc": mathx.Erfc, "Erfcx": mathx.Erfcx,
		"Ndtr": mathx.Ndtr, "LogNdtr": mathx.LogNdtr, "Ndtri": mathx.Ndtri} {
		floatLoops(op, mapLoop(via64(f)), 30, f)
	}
	for op, f := range map[string]func(float64) float64{"ErfcGrad": mathx.ErfcDeriv, "ErfcxGrad": mathx.ErfcxDeriv,
		"NdtrGrad": mathx.NdtrDeriv, "LogNdtrGrad": mathx.LogNdtrDeriv, "NdtriGrad": mathx.NdtriDeriv} {
		kernels{
			f32: backwardKernel(30, func(x, dy float32) float32 { return float32(float64(dy) * f(float64(x))) }, nil),
			f64: backwardKernel(30, func(x, dy float64) float64 { return dy * f(x) }, nil),
		}.register(op)
	}
}
