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
	c := &Conv2D{opts: o}
	c.Filter, c.Bias = convVariables(name, rng, o.DType, o.Kernel, o.NoBias, []int{kh, kw, in, filters}, filters)
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
	return conv2DForward(x, valueAs(c.Filter, x), biasAs(c.Bias, x), c.opts.Conv2DOpts, c.opts.Activation)
}

// conv2DForward is a Conv2D layer's computation: x convolved with filter
// by o, bias (nil: none) added on the feature dimension, act (nil: none)
// applied; one op (ops.FusedConv2D) where there is a bias and act is
// none or ops.Relu.
func conv2DForward(x, filter, bias *tensor.Tensor, o ops.Conv2DOpts, act func(*tensor.Tensor) *tensor.Tensor) *tensor.Tensor {
	if fused, ok := fusable(act); ok && bias != nil {
		return ops.FusedConv2D(x, filter, bias, o, fused)
	}
	return biasActivate(ops.Conv2D(x, filter, o), bias, o.Format, act)
}

// biasActivate adds bias (nil: none) to y on o's feature dimension and
// applies act (nil: none), handing back each intermediate's buffer.
func biasActivate(y, bias *tensor.Tensor, f ops.DataFormat, act func(*tensor.Tensor) *tensor.Tensor) *tensor.Tensor {
	if bias != nil {
		y = then(y, func(y *tensor.Tensor) *tensor.Tensor { return ops.BiasAdd(y, bias, f) })
	}
	if act != nil {
		y = then(y, act)
	}
	return y
}

// biasAs is the bias variable's value in x's dtype (valueAs), nil for
// none.
func biasAs(b *tape.Variable, x *tensor.Tensor) *tensor.Tensor {
	if b == nil || x == nil {
		return nil
	}
	return valueAs(b, x)
}

// Variables returns the filter and the bias.
func (c *Conv2D) Variables() []*tape.Variable { return withBias(c.Filter, c.Bias) }

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
