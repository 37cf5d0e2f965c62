// Package mathx holds float64 functions that package math gets wrong on
// some platforms, corrected: on amd64 (Go 1.26) math.Exp overflows to
// +Inf from x ≈ 709.436 on although e^x is finite up to 709.7827, and
// math.Log of a subnormal number is off by up to 35 (its assembly takes
// the exponent field as is).
package mathx

import "math"

// overflow is the largest x whose e^x is finite.
const overflow = 7.09782712893383973096e+02

// Exp is e^x, finite up to x = 709.7827 as it should be.
func Exp(x float64) float64 {
	if x > 709 && x <= overflow {
		return math.Exp(x-1) * math.E
	}
	return math.Exp(x)
}

// Log is the natural logarithm, right for subnormal x too.
func Log(x float64) float64 {
	if x > 0 && x < 0x1p-1022 {
		return math.Log(x*0x1p54) - 54*math.Ln2
	}
	return math.Log(x)
}
