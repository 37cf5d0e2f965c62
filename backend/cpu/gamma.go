package cpu

import "github.com/eagerflow/eagerflow/internal/mathx"

// Kernels of ops/gamma.go's and ops/igamma.go's functions: internal/mathx's
// float64 ones, float32 and the half types through them, rounded once.

func init() {
	floatLoops("Lgamma", mapLoop(via64(mathx.Lgamma)), 40, mathx.Lgamma)
	floatLoops("Digamma", mapLoop(via64(mathx.Digamma)), 40, mathx.Digamma)
	binaryFloatFuncs(map[string]func(a, b float64) float64{"Polygamma": mathx.Polygamma, "Zeta": mathx.Zeta,
		"Igamma": mathx.Igamma, "Igammac": mathx.Igammac})
}
