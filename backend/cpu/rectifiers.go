package cpu

import (
	"math"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernels of the rectifiers (ops/rectifiers.go): each function written
// once over the float type, in its own arithmetic, with PyTorch's rules
// at the kinks; the float32 loops take the AVX2 kernels (units_amd64.s:
// comparisons and blends, no branch an element) over multiples of eight
// and these functions over the rest.

// vec8 is how many of n elements the vector kernels take: a multiple of
// eight, none without them.
func vec8(n int) int {
	if !haveVecKernels {
		return 0
	}
	return n &^ 7
}

// unit32 is the float32 loop of kern (n a multiple of 8) and f for the
// rest.
func unit32(kern func(dst, x *float32, n int), f func(float32) float32) func(o, x []float32) {
	return func(o, x []float32) {
		x = x[:len(o)]
		k := vec8(len(o))
		if k > 0 {
			kern(&o[0], &x[0], k)
		}
		for i := k; i < len(o); i++ {
			o[i] = f(x[i])
		}
	}
}

// unitGrad32 is unit32 for a backward op of (x, dy).
func unitGrad32(kern func(dst, x, dy *float32, n int), f func(x, dy float32) float32) func(o, x, dy []float32) {
	return func(o, x, dy []float32) {
		x, dy = x[:len(o)], dy[:len(o)]
		k := vec8(len(o))
		if k > 0 {
			kern(&o[0], &x[0], &dy[0], k)
		}
		for i := k; i < len(o); i++ {
			o[i] = f(x[i], dy[i])
		}
	}
}

func preluOf[T tensor.Float](x, a T) T {
	if x > 0 {
		return x
	}
	return x * a
}

func preluSlopeOf[T tensor.Float](x, a T) T {
	if x > 0 {
		return 1
	}
	return a
}

// ones256 is a block of ones (PreluSlope's 1 where x > 0, selected).
var ones256 = func() (b [256]float32) {
	for i := range b {
		b[i] = 1
	}
	return b
}()

// preluLoops32 and preluSlopeLoops32 are Prelu's and PreluSlope's float32
// loops: a slope alpha of one value (LeakyRelu), of x's shape, or of a
// channel tiled along it (binaryKernel's periodic rows) through the
// vector kernels; a single x (all on one side) through the Go rule.
var (
	preluLoops32 = binLoops[float32, float32]{
		vv: func(o, x, a []float32) {
			x, a = x[:len(o)], a[:len(o)]
			k := vec8(len(o))
			if k > 0 {
				smul(&o[0], &x[0], &a[0], k)
				sselpos(&o[0], &x[0], &x[0], &o[0], k)
			}
			for i := k; i < len(o); i++ {
				o[i] = preluOf(x[i], a[i])
			}
		},
		vs: func(o, x []float32, a float32) {
			x = x[:len(o)]
			k := vec8(len(o))
			if k > 0 {
				sprelu(&o[0], &x[0], a, k)
			}
			for i := k; i < len(o); i++ {
				o[i] = preluOf(x[i], a)
			}
		},
		sv: scalarLoops(preluOf[float32]).sv,
	}
	preluSlopeLoops32 = binLoops[float32, float32]{
		vv: func(o, x, a []float32) {
			x, a = x[:len(o)], a[:len(o)]
			k := vec8(len(o))
			for lo := 0; lo < k; lo += len(ones256) {
				n := min(len(ones256), k-lo)
				sselpos(&o[lo], &x[lo], &ones256[0], &a[lo], n)
			}
			for i := k; i < len(o); i++ {
				o[i] = preluSlopeOf(x[i], a[i])
			}
		},
		vs: func(o, x []float32, a float32) {
			x = x[:len(o)]
			k := vec8(len(o))
			if k > 0 {
				spreluslope(&o[0], &x[0], a, k)
			}
			for i := k; i < len(o); i++ {
				o[i] = preluSlopeOf(x[i], a)
			}
		},
		sv: scalarLoops(preluSlopeOf[float32]).sv,
	}
)

// Relu6, HardSigmoid and HardSwish clamp x (x + 3) to [0, 6] as
// PyTorch's kernels do, NaN kept (Go's min and max propagate it, and
// max(-0, 0) is +0); HardSwish is -0 all the way from -3 (at -∞ too,
// where x·0 would be NaN) and x from 3. Their backward ops pass dy (scaled) inside
// the kinks, NaN's dy too where PyTorch's do.

func relu6Of[T tensor.Float](x T) T       { return min(max(x, 0), 6) }
func hardSigmoidOf[T tensor.Float](x T) T { return min(max(x+3, 0), 6) / 6 }

func hardSwishOf[T tensor.Float](x T) T {
	switch {
	case x <= -3:
		return T(math.Copysign(0, -1))
	case x >= 3:
		return x // not x·6/6, which overflows past max/6
	}
	return x * min(max(x+3, 0), 6) / 6
}

func relu6GradOf[T tensor.Float](x, dy T) T {
	if x <= 0 || x >= 6 {
		return 0
	}
	return dy
}

func hardSigmoidGradOf[T tensor.Float](x, dy T) T {
	if x > -3 && x < 3 {
		return dy * (1.0 / 6)
	}
	return 0
}

// hardSwishGradOf is dy·h'(x), h' = 0 below -3, x/3 + 1/2 to 3 (both
// included, as PyTorch's), 1 above.
func hardSwishGradOf[T tensor.Float](x, dy T) T {
	switch {
	case x < -3:
		return 0
	case x <= 3:
		return dy * ((2*x + 3) / 6) // x/3 + 1/2 without cancelling near -3/2
	}
	return dy
}

func init() {
	kernels{f32: binaryKernel(preluLoops32), f64: binaryKernel(scalarLoops(preluOf[float64])),
		elementwise: &eager.ElementwiseF32{VV: preluLoops32.vv, VS: preluLoops32.vs, SV: preluLoops32.sv}}.register("Prelu")
	kernels{f32: binaryKernel(preluSlopeLoops32), f64: binaryKernel(scalarLoops(preluSlopeOf[float64])),
		elementwise: &eager.ElementwiseF32{VV: preluSlopeLoops32.vv, VS: preluSlopeLoops32.vs, SV: preluSlopeLoops32.sv}}.register("PreluSlope")
	floatLoopsOf("Relu6", unit32(srelu6, relu6Of[float32]), 1, mapLoop(relu6Of[float64]), 1)
	floatLoopsOf("HardSigmoid", unit32(shardsigmoid, hardSigmoidOf[float32]), 1, mapLoop(hardSigmoidOf[float64]), 1)
	floatLoopsOf("HardSwish", unit32(shardswish, hardSwishOf[float32]), 1, mapLoop(hardSwishOf[float64]), 1)
	gradKernels("Relu6Grad", 1, relu6GradOf[float64], unitGrad32(srelu6grad, relu6GradOf[float32]))
	gradKernels("HardSigmoidGrad", 1, hardSigmoidGradOf[float64], unitGrad32(shardsigmoidgrad, hardSigmoidGradOf[float32]))
	gradKernels("HardSwishGrad", 1, hardSwishGradOf[float64], unitGrad32(shardswishgrad, hardSwishGradOf[float32]))
}
