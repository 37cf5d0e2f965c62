package cpu

import (
	"unsafe"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernels of Cast (ops/cast.go).

func convert[D, S tensor.Num](o []D, x []S) {
	x = x[:len(o)]
	for i := range o {
		o[i] = D(x[i])
	}
}

func toBool[S tensor.Num](o []bool, x []S) {
	x = x[:len(o)]
	for i := range o {
		o[i] = x[i] != 0
	}
}

// narrow is the Go types of the half and 8-bit float dtypes.
type narrow interface {
	tensor.BF16 | tensor.F16 | tensor.F8E4M3 | tensor.F8E5M2
}

// toHalf rounds x to narrow type H through float32 (as PyTorch converts),
// ties to even.
func toHalf[H narrow, S tensor.Num](o []H, x []S, round func(float32) H) {
	x = x[:len(o)]
	for i := range o {
		o[i] = round(float32(x[i]))
	}
}

// castHalfKernel converts from narrow type H: its float32 values, exactly,
// then the Go conversion of float32 to the output's dtype; in shards over
// the device's workers.
func castHalfKernel[H narrow](c *eager.Call, outs []*tensor.Tensor) {
	hs, out := data[H](c.Inputs[0]), outs[0]
	deviceOf(c).Parallel(len(hs), 4, func(lo, hi int) {
		if out.DType() == tensor.Float32 {
			widenHalves(data[float32](out)[lo:hi], hs[lo:hi])
			return
		}
		f := make([]float32, hi-lo)
		widenHalves(f, hs[lo:hi])
		castRange(f, out, lo)
	})
}

// widenHalves sets f to the float32 values of h.
func widenHalves[H narrow](f []float32, h []H) {
	switch hs := any(h).(type) {
	case []tensor.BF16:
		widen16(f, hs, swidenbf16)
	case []tensor.F16:
		widen16(f, hs, swidenf16)
	case []tensor.F8E4M3:
		for i, v := range hs[:len(f)] {
			f[i] = v.Float32()
		}
	case []tensor.F8E5M2:
		for i, v := range hs[:len(f)] {
			f[i] = v.Float32()
		}
	}
}

// widen16 sets f to the float32 values of the 16-bit floats h: 16 at a
// time by kernel where the CPU has AVX-512, the rest in Go.
func widen16[H interface {
	~uint16
	Float32() float32
}](f []float32, h []H, kernel func(dst *float32, src *uint16, n int)) {
	vec := 0
	if haveAVX512 {
		if vec = len(f) &^ 15; vec > 0 {
			kernel(&f[0], (*uint16)(unsafe.Pointer(&h[0])), vec)
		}
	}
	for i, v := range h[vec:len(f)] {
		f[vec+i] = v.Float32()
	}
}

// castKernel converts from S to the output's dtype, in shards over the
// device's workers.
func castKernel[S tensor.Num](c *eager.Call, outs []*tensor.Tensor) {
	x := data[S](c.Inputs[0])
	deviceOf(c).Parallel(len(x), 2, func(lo, hi int) { castRange(x[lo:hi], outs[0], lo) })
}

// castFrom converts x to out's dtype into out.
func castFrom[S tensor.Num](x []S, out *tensor.Tensor) { castRange(x, out, 0) }

// castRange converts x to out's dtype into out from element lo.
func castRange[S tensor.Num](x []S, out *tensor.Tensor, lo int) {
	hi := lo + len(x)
	switch out.DType() {
	case tensor.Float32:
		convert(data[float32](out)[lo:hi], x)
	case tensor.Float64:
		convert(data[float64](out)[lo:hi], x)
	case tensor.Int32:
		convert(data[int32](out)[lo:hi], x)
	case tensor.Int64:
		convert(data[int64](out)[lo:hi], x)
	case tensor.Uint8:
		convert(data[uint8](out)[lo:hi], x)
	case tensor.Bool:
		toBool(data[bool](out)[lo:hi], x)
	case tensor.BFloat16:
		if x32, ok := any(x).([]float32); ok {
			roundBF16(data[tensor.BF16](out)[lo:hi], x32) // the vector rounding where the CPU has it
			return
		}
		toHalf(data[tensor.BF16](out)[lo:hi], x, tensor.ToBF16)
	case tensor.Float16:
		if x32, ok := any(x).([]float32); ok {
			roundF16(data[tensor.F16](out)[lo:hi], x32)
			return
		}
		toHalf(data[tensor.F16](out)[lo:hi], x, tensor.ToF16)
	case tensor.Float8E4M3:
		toHalf(data[tensor.F8E4M3](out)[lo:hi], x, tensor.ToF8E4M3)
	case tensor.Float8E5M2:
		toHalf(data[tensor.F8E5M2](out)[lo:hi], x, tensor.ToF8E5M2)
	}
}

// roundF16 sets dst to src rounded to float16 (tensor.ToF16's rounding),
// 16 at a time where the CPU has AVX-512.
func roundF16(dst []tensor.F16, src []float32) {
	src = src[:len(dst)]
	vec := 0
	if haveAVX512 {
		if vec = len(dst) &^ 15; vec > 0 {
			snarrowf16((*uint16)(&dst[0]), &src[0], vec)
		}
	}
	for i, v := range src[vec:] {
		dst[vec+i] = tensor.ToF16(v) // inlined, not through toHalf's func value
	}
}

// castBoolKernel casts bools through their bytes (0 or 1) as uint8s: no
// branch to mispredict on a random mask; over the workers.
func castBoolKernel(c *eager.Call, outs []*tensor.Tensor) {
	in, out := c.Inputs[0], outs[0]
	deviceOf(c).Parallel(in.NumElements(), 1, func(lo, hi int) { castRange(in.HostBytes()[lo:hi], out, lo) })
}

func init() {
	kernels{
		f32: castKernel[float32], f64: castKernel[float64], i32: castKernel[int32],
		i64: castKernel[int64], u8: castKernel[uint8], b: castBoolKernel,
		bf16: castHalfKernel[tensor.BF16], f16: castHalfKernel[tensor.F16],
		f8e4m3: castHalfKernel[tensor.F8E4M3], f8e5m2: castHalfKernel[tensor.F8E5M2],
	}.register("Cast")
}
