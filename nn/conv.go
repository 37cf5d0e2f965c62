package nn

import (
	"fmt"
	"reflect"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Conv2DOpts configure NewConv2D: the ops.Conv2DOpts of the convolution
// (zero: stride 1, VALID, NHWC), the dtype, the filter initializer (He
// normal by default), whether to skip the bias, and an activation.
type Conv2DOpts struct {
	ops.Conv2DOpts
	DType      tensor.DType
	Kernel     Initializer
	NoBias     bool
	Activation func(*tensor.Tensor) *tensor.Tensor
}

// Conv2D is a 2-d convolution layer: x: [N, H, W, C] (or NCHW) -> [N, OH,
// OW, filters] (or NCHW), filters [KH, KW, C, filters] in either layout
// (Keras's; PyTorch's Conv2d keeps weight [filters C KH KW]: transpose
// it by (2, 3, 1, 0) when loading one).
type Conv2D struct {
	Filter, Bias *tape.Variable
	opts         Conv2DOpts
}

// NewConv2D makes a Conv2D with variables name+"/filter" and name+"/bias".
func NewConv2D(name string, rng *tensor.RNG, kh, kw, in, filters int, o Conv2DOpts) *Conv2D {
	dt := orFloat32(o.DType)
	init := o.Kernel
	if init == nil {
		init = HeNormal
	}
	c := &Conv2D{Filter: tape.NewVariable(name+"/filter", init(rng, dt, kh, kw, in, filters)), opts: o}
	if !o.NoBias {
		c.Bias = tape.NewVariable(name+"/bias", tensor.Zeros(dt, filters))
	}
	return c
}

// Forward convolves, adds the bias on the feature dimension, activates.
// With a bias and no activation or ops.Relu, the three are one op
// (ops.FusedConv2D), which keeps one tensor of the output's size for the
// gradient instead of three.
func (c *Conv2D) Forward(x *tensor.Tensor) *tensor.Tensor {
	if x != nil && x.Rank() == 4 {
		in, axis, other, otherAxis := c.Filter.Value().Dim(2), 3, ops.NCHW, 1
		if c.opts.Format == ops.NCHW {
			axis, other, otherAxis = 1, ops.NHWC, 3
		}
		hint := ""
		if x.Dim(otherAxis) == in {
			hint = fmt.Sprintf(" (is it %v? Conv2DOpts.Format says %v)", other, c.opts.Format)
		}
		needFeatures("Conv2D", x, axis, in, fmt.Sprintf("input channels (%v)", c.opts.Format), hint)
	}
	if act, ok := fusable(c.opts.Activation); ok && c.Bias != nil {
		return ops.FusedConv2D(x, valueAs(c.Filter, x), valueAs(c.Bias, x), c.opts.Conv2DOpts, act)
	}
	y := ops.Conv2D(x, valueAs(c.Filter, x), c.opts.Conv2DOpts)
	if c.Bias != nil {
		y = then(y, func(y *tensor.Tensor) *tensor.Tensor { return ops.BiasAdd(y, valueAs(c.Bias, y), c.opts.Format) })
	}
	if c.opts.Activation != nil {
		y = then(y, c.opts.Activation)
	}
	return y
}

// Variables returns the filter and the bias.
func (c *Conv2D) Variables() []*tape.Variable {
	if c.Bias == nil {
		return []*tape.Variable{c.Filter}
	}
	return []*tape.Variable{c.Filter, c.Bias}
}

// MaxPool2D is ops.MaxPool2D as a layer. A zero Size pools 2x2 windows,
// as Keras's pooling layers do by default (strides 0: the window's).
type MaxPool2D struct{ ops.PoolOpts }

// Forward pools.
func (p MaxPool2D) Forward(x *tensor.Tensor) *tensor.Tensor {
	return ops.MaxPool2D(x, poolDefaults(p.PoolOpts))
}

// Variables returns none.
func (MaxPool2D) Variables() []*tape.Variable { return nil }

// AvgPool2D is ops.AvgPool2D as a layer. A zero Size pools 2x2 windows,
// as MaxPool2D's.
type AvgPool2D struct{ ops.PoolOpts }

// Forward pools.
func (p AvgPool2D) Forward(x *tensor.Tensor) *tensor.Tensor {
	return ops.AvgPool2D(x, poolDefaults(p.PoolOpts))
}

// poolDefaults is o with a zero Size made 2x2.
func poolDefaults(o ops.PoolOpts) ops.PoolOpts {
	if o.Size == [2]int{} {
		o.Size = [2]int{2, 2}
	}
	return o
}

// Variables returns none.
func (AvgPool2D) Variables() []*tape.Variable { return nil }

// fusable is the ops.FusedActivation of an activation function, and
// whether there is one: none for nil, ReluActivation for ops.Relu.
func fusable(f func(*tensor.Tensor) *tensor.Tensor) (ops.FusedActivation, bool) {
	switch {
	case f == nil:
		return ops.NoActivation, true
	case reflect.ValueOf(f).Pointer() == reluPC:
		return ops.ReluActivation, true
	}
	return 0, false
}

var reluPC = reflect.ValueOf(ops.Relu).Pointer()
