package nn

import (
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// DenseOpts configure NewDense; the zero value is a float32 layer with
// Glorot-uniform kernel, zero bias, no activation.
type DenseOpts struct {
	DType      tensor.DType
	Kernel     Initializer
	NoBias     bool
	Activation func(*tensor.Tensor) *tensor.Tensor
}

// Dense is a fully connected layer: x: [..., in] -> act(x·W + b): [..., out].
// Its kernel is Keras's [in out]; PyTorch's Linear keeps weight [out in]
// (transpose it when loading one: a square one loads either way).
type Dense struct {
	Kernel, Bias *tape.Variable // [in out], [out] (nil with NoBias)
	act          func(*tensor.Tensor) *tensor.Tensor
}

// NewDense makes a Dense layer whose variables are named name+"/kernel" and
// name+"/bias", initialized from rng.
func NewDense(name string, rng *tensor.RNG, in, out int, o DenseOpts) *Dense {
	dt := orFloat32(o.DType)
	init := o.Kernel
	if init == nil {
		init = GlorotUniform
	}
	d := &Dense{Kernel: tape.NewVariable(name+"/kernel", init(rng, dt, in, out)), act: o.Activation}
	if !o.NoBias {
		d.Bias = tape.NewVariable(name+"/bias", tensor.Zeros(dt, out))
	}
	return d
}

func orFloat32(dt tensor.DType) tensor.DType {
	if dt == tensor.Invalid {
		return tensor.Float32
	}
	return dt
}

// Forward computes act(x·W + b) over the last dimension of x. With a bias
// and no activation or ops.Relu, the three are one op (ops.FusedMatMul:
// on the GPU one GEMM whose epilogue adds the bias and applies Relu);
// with another activation the product and the bias are, the activation
// following.
func (d *Dense) Forward(x *tensor.Tensor) *tensor.Tensor {
	needFeatures("Dense", x, -1, d.Kernel.Value().Dim(0), "input features", "")
	w := valueAs(d.Kernel, x)
	y := x
	var lead tensor.Shape
	if x.Rank() > 2 { // [..., in] -> [n, in] and back
		lead = x.Shape()[:x.Rank()-1].Clone()
		y = ops.Reshape(x, -1, x.Dim(-1))
	}
	if act, ok := fusable(d.act); ok && d.Bias != nil && y.Rank() == 2 {
		y = ops.FusedMatMul(y, w, valueAs(d.Bias, y), act)
	} else if d.Bias != nil && y.Rank() == 2 { // the bias in the product, the activation after
		y = then(ops.FusedMatMul(y, w, valueAs(d.Bias, y), ops.NoActivation), d.act)
	} else {
		y = ops.MatMul(y, w)
		if d.Bias != nil {
			y = then(y, func(y *tensor.Tensor) *tensor.Tensor { return ops.Add(y, valueAs(d.Bias, y)) })
		}
		if d.act != nil {
			y = then(y, d.act)
		}
	}
	if lead != nil {
		y = ops.Reshape(y, append(lead, w.Dim(1))...)
	}
	return y
}

// Variables returns the kernel and the bias.
func (d *Dense) Variables() []*tape.Variable {
	if d.Bias == nil {
		return []*tape.Variable{d.Kernel}
	}
	return []*tape.Variable{d.Kernel, d.Bias}
}
