package cpu

import (
	"math"

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
	floatLoops("Sin", trigLoop(trigSin, math.Sin), trigCost32, math.Sin)
	floatLoops("Cos", trigLoop(trigCos, math.Cos), trigCost32, math.Cos)
	floatLoops("Log1p", logLoop(logOnePlus, math.Log1p), trigCost32, math.Log1p)
	floatLoops("Expm1", lanesLoop(sexpm1_4, math.Expm1), trigCost32, math.Expm1)
	floatLoops("Erf", erf32Loop, expCost32, math.Erf)
	floatLoops("Erfinv", mapLoop(via64(math.Erfinv)), 20, math.Erfinv)
	floatLoopsOf("Ceil", ceilLoop[float32], 1, ceilLoop[float64], 1)
	floatLoopsOf("Floor", floorLoop[float32], 1, floorLoop[float64], 1)
	floatLoopsOf("Round", roundLoop[float32], 4, roundLoop[float64], 4)
	kernels{f32: unaryKernel(1, isFinite[float32]), f64: unaryKernel(1, isFinite[float64])}.register("IsFinite")
}

// trigCost32 is lanesLoop's cost per element, for sharding: about 1 ns
// with the AVX2 kernels, 20 through math.Sin.
var trigCost32 = map[bool]float64{true: 2, false: 20}[haveVecKernels]

// The modes of strig4.
const (
	trigSin = iota
	trigCos
	trigTan
)

// trigLoop returns the float32 loop of sin, cos or tan (mode): groups of
// four with the AVX2 kernel strig4 (float64 lanes, each result rounded
// once: float32(f(x)) but where the true value lies within about 2⁻⁵⁰ of
// a rounding boundary), and through f in float64 the groups it leaves
// (an argument of 2²⁸ or more, an infinity, NaN) and the tail.
func trigLoop(mode int, f func(float64) float64) func(o, x []float32) {
	return lanesLoop(func(dst, x *float32, n int) int { return strig4(dst, x, n, mode) }, f)
}

// The modes of slogs4.
const (
	logOnePlus = iota
	logTwo
	logTen
)

// logLoop returns the float32 loop of log1p, log₂ or log₁₀ (mode) through
// slogs4, as trigLoop takes strig4.
func logLoop(mode int, f func(float64) float64) func(o, x []float32) {
	return lanesLoop(func(dst, x *float32, n int) int { return slogs4(dst, x, n, mode) }, f)
}

// lanesLoop returns the float32 loop of f through kern, a float64-lane
// kernel that does groups of four and stops before a group it leaves (it
// returns how many it did): those groups and the tail through f in
// float64, rounded once.
func lanesLoop(kern func(dst, x *float32, n int) int, f func(float64) float64) func(o, x []float32) {
	return func(o, x []float32) {
		x = x[:len(o)]
		i := 0
		for haveVecKernels && len(o)-i >= 4 {
			i += kern(&o[i], &x[i], (len(o)-i)&^3)
			if len(o)-i < 4 {
				break
			}
			for j := i; j < i+4; j++ { // the group it stopped at
				o[j] = float32(f(float64(x[j])))
			}
			i += 4
		}
		for ; i < len(o); i++ {
			o[i] = float32(f(float64(x[i])))
		}
	}
}

// floorLoop and ceilLoop round down and up by math.Floor and math.Ceil
// (ROUNDSD: a float32's floor is a float32), with no call an element.
func floorLoop[T tensor.Float](o, x []T) {
	x = x[:len(o)]
	for i, v := range x {
		o[i] = T(math.Floor(float64(v)))
	}
}

func ceilLoop[T tensor.Float](o, x []T) {
	x = x[:len(o)]
	for i, v := range x {
		o[i] = T(math.Ceil(float64(v)))
	}
}

// roundLoop rounds halves away from zero (XLA's Round) by math.Round, a
// float32 through float64 (the same value: a float32's rounding is a
// float32), with no call an element.
func roundLoop[T tensor.Float](o, x []T) {
	x = x[:len(o)]
	for i, v := range x {
		o[i] = T(math.Round(float64(v)))
	}
}
