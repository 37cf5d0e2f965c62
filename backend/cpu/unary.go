package cpu

import (
	"math"

	"github.com/eagerflow/eagerflow/backend"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/mathx"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernels of the elementwise unary ops (ops/unary.go).

// unaryKernel shards a contiguous loop over the elements.
func unaryKernel[T, R tensor.Elem](cost float64, f func(o []R, x []T)) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		x, o := data[T](c.Inputs[0]), data[R](outs[0])
		if float64(len(o))*cost < backend.MinShardCost {
			f(o, x)
			return
		}
		deviceOf(c).Parallel(len(o), cost, func(lo, hi int) { f(o[lo:hi], x[lo:hi]) })
	}
}

// mapLoop turns a function of one element into a loop.
func mapLoop[T, R any](f func(T) R) func(o []R, x []T) {
	return func(o []R, x []T) {
		x = x[:len(o)]
		for i := range o {
			o[i] = f(x[i])
		}
	}
}

func negLoop[T tensor.Num](o, x []T) {
	x = x[:len(o)]
	for i := range o {
		o[i] = -x[i]
	}
}

func absOf[T tensor.Num](v T) T {
	if v < 0 {
		return -v
	}
	return v
}

// absFloatLoop clears the sign bits: |-0| is +0 (absOf's v < 0 keeps
// -0's sign) and |NaN| a NaN, without a branch.
func absFloatLoop[T tensor.Float](o, x []T) {
	x = x[:len(o)]
	switch o := any(o).(type) {
	case []float32:
		for i, v := range any(x).([]float32) {
			o[i] = math.Float32frombits(math.Float32bits(v) &^ (1 << 31))
		}
	case []float64:
		for i, v := range any(x).([]float64) {
			o[i] = math.Abs(v)
		}
	}
}

func signOf[T tensor.Num](v T) T {
	switch {
	case v > 0:
		return 1
	case v < 0:
		return T(0) - 1
	}
	return v // keeps 0, -0 and NaN
}

// signLoop32 and signLoop64 are signOf over floats without branches (a
// branch on the sign mispredicts on random data: 7 ns an element where
// these take under one): ±1 by x's sign bit, x itself where it is ±0 or
// NaN.
func signLoop32(o, x []float32) {
	x = x[:len(o)]
	for i, v := range x {
		b := math.Float32bits(v)
		mag := b & 0x7fffffff
		keep := uint32(int32(mag-1)>>31) | uint32(int32(0x7f800000-mag)>>31) // ±0, or NaN
		o[i] = math.Float32frombits(keep&b | ^keep&(b&0x80000000|0x3f800000))
	}
}

func signLoop64(o, x []float64) {
	x = x[:len(o)]
	for i, v := range x {
		b := math.Float64bits(v)
		mag := b & 0x7fffffffffffffff
		keep := uint64(int64(mag-1)>>63) | uint64(int64(0x7ff0000000000000-mag)>>63)
		o[i] = math.Float64frombits(keep&b | ^keep&(b&(1<<63)|0x3ff0000000000000))
	}
}

// sqrtLoop and rsqrtLoop are √x and 1/√x, the square root correctly
// rounded (float32's through float64: the same bits, SQRTSD's), with no
// call an element.
func sqrtLoop[T tensor.Float](o, x []T) {
	x = x[:len(o)]
	for i, v := range x {
		o[i] = T(math.Sqrt(float64(v)))
	}
}

func rsqrtLoop[T tensor.Float](o, x []T) {
	x = x[:len(o)]
	for i, v := range x {
		o[i] = 1 / T(math.Sqrt(float64(v)))
	}
}

func squareLoop[T tensor.Num](o, x []T) {
	x = x[:len(o)]
	if o32, ok := any(o).([]float32); ok && haveVecKernels && len(o) > 0 {
		x32 := any(x).([]float32)
		smul(&o32[0], &x32[0], &x32[0], len(o))
		return
	}
	for i := range o {
		o[i] = x[i] * x[i]
	}
}

func reluLoop[T tensor.Num](o, x []T) {
	x = x[:len(o)]
	if o32, ok := any(o).([]float32); ok && haveVecKernels && len(o) > 0 {
		srelu(&o32[0], &any(x).([]float32)[0], len(o))
		return
	}
	for i := range o {
		if v := x[i]; v > 0 || v != v { // NaN propagates
			o[i] = v
		} else {
			o[i] = 0
		}
	}
}

func sigmoid32(x float32) float32 {
	if x >= 0 {
		return 1 / (1 + exp32(-x))
	}
	e := exp32(x)
	return e / (1 + e)
}

func sigmoid64(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

func reluGradKernel[T tensor.Num](c *eager.Call, outs []*tensor.Tensor) {
	x, dy, o := data[T](c.Inputs[0]), data[T](c.Inputs[1]), data[T](outs[0])
	deviceOf(c).Parallel(len(o), 1, func(lo, hi int) { reluGradLoop(o[lo:hi], x[lo:hi], dy[lo:hi]) })
}

// reluGradLoop sets o[i] = dy[i] where x[i] > 0, else 0.
func reluGradLoop[T tensor.Num](o, x, dy []T) {
	if o32, ok := any(o).([]float32); ok && haveVecKernels && len(o) > 0 {
		sreluGrad(&o32[0], &any(x).([]float32)[0], &any(dy).([]float32)[0], len(o))
		return
	}
	x, dy = x[:len(o)], dy[:len(o)]
	for i := range o {
		if x[i] > 0 {
			o[i] = dy[i]
		} else {
			o[i] = 0
		}
	}
}

// backwardKernel computes a backward op from the function's input or
// output x, o[i] = f(x[i], dy[i]) in one pass, sharded (cost an
// element); loop32 (where not nil) is its float32 loop, f then unused.
func backwardKernel[T tensor.Float](cost float64, f func(x, dy T) T, loop32 func(o, x, dy []float32)) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		x, dy, o := data[T](c.Inputs[0]), data[T](c.Inputs[1]), data[T](outs[0])
		deviceOf(c).Parallel(len(o), cost, func(lo, hi int) {
			xs, ds, os := x[lo:hi], dy[lo:hi], o[lo:hi]
			if loop32 != nil {
				if o32, ok := any(os).([]float32); ok {
					loop32(o32, any(xs).([]float32), any(ds).([]float32))
					return
				}
			}
			for i := range os {
				os[i] = f(xs[i], ds[i])
			}
		})
	}
}

// gradKernels registers a backward op's float kernels: f64 float64's
// rule, loop32 float32's loop, cost an element.
func gradKernels(op string, cost float64, f64 func(x, dy float64) float64, loop32 func(o, x, dy []float32)) {
	kernels{f32: backwardKernel[float32](cost, nil, loop32), f64: backwardKernel(cost, f64, nil)}.register(op)
}

// outputGradKernel computes a function's backward from its output y,
// o[i] = f(y[i], dy[i]) (TanhGrad, SigmoidGrad): one pass, sharded.
func outputGradKernel[T tensor.Float](f func(y, dy T) T) eager.Kernel {
	return backwardKernel(2, f, nil)
}

func tanhGradOf[T tensor.Float](y, dy T) T    { return dy * (1 - y*y) }
func sigmoidGradOf[T tensor.Float](y, dy T) T { return dy * y * (1 - y) }

func init() {
	kernels{f32: outputGradKernel(tanhGradOf[float32]), f64: outputGradKernel(tanhGradOf[float64])}.register("TanhGrad")
	kernels{f32: outputGradKernel(sigmoidGradOf[float32]), f64: outputGradKernel(sigmoidGradOf[float64])}.register("SigmoidGrad")
	numLoops("Neg", negLoop[float32], negLoop[float64], negLoop[int32], negLoop[int64], negLoop[uint8])
	numLoops("Abs", absFloatLoop[float32], absFloatLoop[float64], mapLoop(absOf[int32]), mapLoop(absOf[int64]), mapLoop(absOf[uint8]))
	numLoops("Sign", signLoop32, signLoop64, mapLoop(signOf[int32]), mapLoop(signOf[int64]), mapLoop(signOf[uint8]))
	numLoops("Square", squareLoop[float32], squareLoop[float64], squareLoop[int32], squareLoop[int64], squareLoop[uint8])
	numLoops("Relu", reluLoop[float32], reluLoop[float64], reluLoop[int32], reluLoop[int64], reluLoop[uint8])
	kernels{
		f32: reluGradKernel[float32], f64: reluGradKernel[float64], i32: reluGradKernel[int32],
		i64: reluGradKernel[int64], u8: reluGradKernel[uint8],
	}.register("ReluGrad")

	floatLoops("Exp", exp32Loop, expCost32, mathx.Exp)
	floatLoops("Log", log32Loop, expCost32, mathx.Log)
	floatLoopsOf("Sqrt", sqrtLoop[float32], 1, sqrtLoop[float64], 1)
	floatLoopsOf("Rsqrt", rsqrtLoop[float32], 1, rsqrtLoop[float64], 1)
	floatLoops("Tanh", tanh32Loop, tanhCost32, math.Tanh)
	floatLoops("Sigmoid", sigmoid32Loop, expCost32, sigmoid64)
}

// floatLoops registers a unary function of floats from its float32 loop,
// costing cost32 per element (in device.Parallel's units; scalar
// transcendental code is about 20), and its float64 scalar function.
func floatLoops(op string, f32 func(o, x []float32), cost32 float64, f64 func(float64) float64) {
	floatLoopsOf(op, f32, cost32, mapLoop(f64), 20)
}

// floatLoopsOf is floatLoops with the float64 loop given whole (a loop
// of its own, where mapLoop's call an element would dominate), costing
// cost64 per element.
func floatLoopsOf(op string, f32 func(o, x []float32), cost32 float64, f64 func(o, x []float64), cost64 float64) {
	kernels{
		f32: unaryKernel(cost32, f32), f64: unaryKernel(cost64, f64),
		elementwise: &eager.ElementwiseF32{Unary: f32},
	}.register(op)
}

// numLoops registers a unary function of every numeric dtype from its loops.
func numLoops(op string, f32 func(o, x []float32), f64 func(o, x []float64), i32 func(o, x []int32),
	i64 func(o, x []int64), u8 func(o, x []uint8)) {
	kernels{
		f32: unaryKernel(1, f32), f64: unaryKernel(1, f64), i32: unaryKernel(1, i32),
		i64: unaryKernel(1, i64), u8: unaryKernel(1, u8),
		elementwise: &eager.ElementwiseF32{Unary: f32},
	}.register(op)
}
