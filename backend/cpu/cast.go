package cpu

import (
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

func fromBool[D tensor.Num](o []D, x []bool) {
	x = x[:len(o)]
	for i := range o {
		if x[i] {
			o[i] = 1
		} else {
			o[i] = 0
		}
	}
}

// castKernel converts from S to the output's dtype.
func castKernel[S tensor.Num](c *eager.Call, outs []*tensor.Tensor) {
	x, out := data[S](c.Inputs[0]), outs[0]
	switch out.DType() {
	case tensor.Float32:
		convert(data[float32](out), x)
	case tensor.Float64:
		convert(data[float64](out), x)
	case tensor.Int32:
		convert(data[int32](out), x)
	case tensor.Int64:
		convert(data[int64](out), x)
	case tensor.Uint8:
		convert(data[uint8](out), x)
	case tensor.Bool:
		toBool(data[bool](out), x)
	}
}

func castBoolKernel(c *eager.Call, outs []*tensor.Tensor) {
	x, out := data[bool](c.Inputs[0]), outs[0]
	switch out.DType() {
	case tensor.Float32:
		fromBool(data[float32](out), x)
	case tensor.Float64:
		fromBool(data[float64](out), x)
	case tensor.Int32:
		fromBool(data[int32](out), x)
	case tensor.Int64:
		fromBool(data[int64](out), x)
	case tensor.Uint8:
		fromBool(data[uint8](out), x)
	case tensor.Bool:
		copy(data[bool](out), x)
	}
}

func init() {
	kernels{
		f32: castKernel[float32], f64: castKernel[float64], i32: castKernel[int32],
		i64: castKernel[int64], u8: castKernel[uint8], b: castBoolKernel,
	}.register("Cast")
}
