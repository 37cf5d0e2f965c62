package ops

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// CastAttrs are Cast's attributes.
type CastAttrs struct{ To tensor.DType }

func (a CastAttrs) String() string { return "to=" + a.To.String() }

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

var castOp *eager.Op

func init() {
	castOp = eager.Register(cpuKernels{
		f32: castKernel[float32], f64: castKernel[float64], i32: castKernel[int32],
		i64: castKernel[int64], u8: castKernel[uint8], b: castBoolKernel,
	}.register(&eager.Op{
		Name: "Cast", Inputs: 1,
		Infer: func(c *eager.Call) []eager.Out {
			a, ok := c.Attrs.(CastAttrs)
			if !ok || !a.To.Valid() {
				c.Fail(tensor.ErrAttr, "needs a valid target dtype")
			}
			return c.Out1(a.To, c.Inputs[0].Shape())
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			from := g.Inputs[0].DType()
			if !from.IsFloat() || !g.Outputs[0].DType().IsFloat() {
				return []*tensor.Tensor{nil} // no gradient into or out of integers
			}
			return []*tensor.Tensor{Cast(g.OutGrads[0], from)}
		},
	}))
}

// Cast converts x to dtype to elementwise, as XLA's ConvertElementType (a Go
// conversion: floats to integers truncate toward zero; out-of-range values
// and NaN give an unspecified integer; numbers to Bool are x != 0; Bool to
// numbers is 0 or 1). Only float-to-float casts carry a gradient.
func Cast(x *tensor.Tensor, to tensor.DType) *tensor.Tensor {
	return eager.Run1(castOp, CastAttrs{To: to}, x)
}
