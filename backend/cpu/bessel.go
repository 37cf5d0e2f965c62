package cpu

import "github.com/eagerflow/eagerflow/internal/mathx"

// Kernels of ops/bessel.go: internal/mathx's float64 functions, float32
// and the half types through them, rounded once.

func init() {
	for op, f := range map[string]func(float64) float64{"BesselI0": mathx.BesselI0, "BesselI1": mathx.BesselI1,
		"BesselI0e": mathx.BesselI0e, "BesselI1e": mathx.BesselI1e} {
		floatLoops(op, mapLoop(via64(f)), 60, f)
	}
}
