package nn

import (
	"fmt"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Conv1DOpts configure NewConv1D. Stride and Dilation are the sequence's
// (0: 1). Padding is ops.Valid, ops.Same or ops.Explicit (Explicit's
// (start, end) pads); Causal pads the start alone by (kernel-1)·Dilation,
// so that output t sees inputs up to t and no later (Keras's "causal",
// WaveNet's and temporal convolutional networks' padding; Padding must
// then be Valid). Format ops.NHWC takes x [N, L, C] (Keras's Conv1D),
// ops.NCHW takes [N, C, L] (PyTorch's Conv1d). DType, Kernel (He normal
// by default), NoBias and Activation are as Conv2DOpts'.
type Conv1DOpts struct {
	Stride, Dilation int
	Padding          ops.PaddingMode
	Explicit         [2]int
	Causal           bool
	Format           ops.DataFormat
	DType            tensor.DType
	Kernel           Initializer
	NoBias           bool
	Activation       func(*tensor.Tensor) *tensor.Tensor
}

// Conv1D is a 1-d convolution layer over sequences: x [N, L, C] (or [N,
// C, L]) -> [N, OL, filters] (or [N, filters, OL]), filter [K, C,
// filters] (Keras's layout; PyTorch's Conv1d keeps weight [filters C K]:
// transpose it by (2, 1, 0) when loading one). It computes as Conv2D over
// rows of height 1, so it takes Conv2D's kernels on every device (its
// fused bias and Relu, cuDNN, the GEMM lowering).
type Conv1D struct {
	Filter, Bias *tape.Variable
	opts         Conv1DOpts
}

// NewConv1D makes a Conv1D of kernel size k with variables name+"/filter"
// and name+"/bias". It panics with a *tensor.Error for a size, stride or
// dilation below 1 (0 meaning 1 for the last two), Causal with a Padding
// other than Valid, or an unknown layout.
func NewConv1D(name string, rng *tensor.RNG, k, in, filters int, o Conv1DOpts) *Conv1D {
	switch {
	case k < 1 || in < 1 || filters < 1:
		panic(tensor.NewError("nn", "NewConv1D", tensor.ErrAttr, nil, "", "kernel size %d, %d input and %d output channels: each must be at least 1", k, in, filters))
	case o.Stride < 0 || o.Dilation < 0:
		panic(tensor.NewError("nn", "NewConv1D", tensor.ErrAttr, nil, "", "stride %d and dilation %d must be at least 1 (0 means 1)", o.Stride, o.Dilation))
	case o.Causal && o.Padding != ops.Valid:
		panic(tensor.NewError("nn", "NewConv1D", tensor.ErrAttr, nil, "", "Causal pads the start itself: Padding must be Valid, got %v", o.Padding))
	case o.Format > ops.NCHW:
		panic(tensor.NewError("nn", "NewConv1D", tensor.ErrAttr, nil, "", "unknown layout %d (ops.NHWC: [N L C], ops.NCHW: [N C L])", o.Format))
	}
	c := &Conv1D{opts: o}
	c.Filter, c.Bias = convVariables(name, rng, o.DType, o.Kernel, o.NoBias, []int{k, in, filters}, filters)
	return c
}

// Forward convolves x [N, L, C] (or [N, C, L]), adds the bias and
// activates.
func (c *Conv1D) Forward(x *tensor.Tensor) *tensor.Tensor {
	mustArgs("Conv1D", arg{"x", x})
	f := c.Filter.Value()
	axis := 2
	if c.opts.Format == ops.NCHW {
		axis = 1
	}
	if x.Rank() != 3 {
		panic(tensor.NewError("nn", "Conv1D", tensor.ErrRank, []*tensor.Tensor{x}, "", "x must be a batch of sequences, %s, got %v", c.layout(), x.Shape()))
	}
	needFeatures("Conv1D", x, axis, f.Dim(1), fmt.Sprintf("input channels (%s)", c.layout()), "")
	// Rows of height 1: [N 1 L C] (or [N C 1 L]) and a filter [1 K C O].
	n, l, ch := x.Dim(0), x.Dim(1), x.Dim(2)
	rows := []int{n, 1, l, ch}
	if c.opts.Format == ops.NCHW {
		n, ch, l = x.Dim(0), x.Dim(1), x.Dim(2)
		rows = []int{n, ch, 1, l}
	}
	o := ops.Conv2DOpts{Strides: [2]int{1, c.opts.Stride}, Dilations: [2]int{1, c.opts.Dilation}, Padding: c.opts.Padding, Format: c.opts.Format}
	switch {
	case c.opts.Causal:
		o.Padding, o.Explicit = ops.Explicit, [2][2]int{{0, 0}, {(f.Dim(0) - 1) * max(c.opts.Dilation, 1), 0}}
	case c.opts.Padding == ops.Explicit:
		o.Explicit = [2][2]int{{0, 0}, c.opts.Explicit}
	}
	filter := ops.Reshape(valueAs(c.Filter, x), 1, f.Dim(0), f.Dim(1), f.Dim(2))
	y := conv2DForward(ops.Reshape(x, rows...), filter, biasAs(c.Bias, x), o, c.opts.Activation)
	if c.opts.Format == ops.NCHW {
		return ops.Reshape(y, n, y.Dim(1), y.Dim(3))
	}
	return ops.Reshape(y, n, y.Dim(2), y.Dim(3))
}

// layout is x's expected shape, in words.
func (c *Conv1D) layout() string {
	if c.opts.Format == ops.NCHW {
		return "[N C L]"
	}
	return "[N L C]"
}

// Variables returns the filter and the bias.
func (c *Conv1D) Variables() []*tape.Variable { return withBias(c.Filter, c.Bias) }

// Conv2DTransposeOpts configure NewConv2DTranspose: the Conv2D whose
// input gradient the layer computes (its strides, dilations, Valid or
// Same padding and layout), OutputPadding rows and columns added at the
// output's end with Valid padding (each below its stride: a strided
// convolution maps that many sizes to one, and PyTorch's output_padding
// picks among them), and the dtype, initializer (He normal), bias and
// activation as Conv2DOpts'.
type Conv2DTransposeOpts struct {
	Conv2DOpts
	OutputPadding [2]int
}

// Conv2DTranspose is a transposed 2-d convolution (Keras's
// Conv2DTranspose, PyTorch's ConvTranspose2d; an upsampling decoder's
// layer): the gradient of a Conv2D with respect to its input, x [N, H, W,
// C] (or NCHW) -> [N, OH, OW, filters], where OH is (H-1)·stride +
// (KH-1)·dilation + 1 with Valid padding and H·stride with Same (plus
// OutputPadding), OW likewise. filter is [KH, KW, filters, C] (Keras's
// layout: the Conv2D's it transposes; PyTorch's ConvTranspose2d keeps
// weight [C filters KH KW]: transpose it by (2, 3, 1, 0)).
type Conv2DTranspose struct {
	Filter, Bias *tape.Variable
	opts         Conv2DTransposeOpts
}

// NewConv2DTranspose makes a Conv2DTranspose with variables
// name+"/filter" and name+"/bias". It panics with a *tensor.Error for
// explicit padding (give Valid or Same and OutputPadding), an output
// padding not below its stride, or sizes below 1.
func NewConv2DTranspose(name string, rng *tensor.RNG, kh, kw, in, filters int, o Conv2DTransposeOpts) *Conv2DTranspose {
	if kh < 1 || kw < 1 || in < 1 || filters < 1 {
		panic(tensor.NewError("nn", "NewConv2DTranspose", tensor.ErrAttr, nil, "", "a %dx%d kernel, %d input and %d output channels: each must be at least 1", kh, kw, in, filters))
	}
	if o.Padding == ops.Explicit {
		panic(tensor.NewError("nn", "NewConv2DTranspose", tensor.ErrAttr, nil, "", "padding Valid or Same (the output's size follows: OutputPadding adds to it), not Explicit"))
	}
	if o.Padding == ops.Same && o.OutputPadding != [2]int{} {
		panic(tensor.NewError("nn", "NewConv2DTranspose", tensor.ErrAttr, nil, "", "output padding %v takes Valid padding: with Same the output is the input's size times the stride", o.OutputPadding))
	}
	for i, p := range o.OutputPadding {
		if p < 0 || p >= max(o.Strides[i], 1) {
			panic(tensor.NewError("nn", "NewConv2DTranspose", tensor.ErrAttr, nil, "", "output padding %v: each must be at least 0 and below its stride %v", o.OutputPadding, o.Strides))
		}
	}
	c := &Conv2DTranspose{opts: o}
	c.Filter, c.Bias = convVariables(name, rng, o.DType, o.Kernel, o.NoBias, []int{kh, kw, filters, in}, filters)
	return c
}

// Forward takes the transposed convolution of x, adds the bias and
// activates.
func (c *Conv2DTranspose) Forward(x *tensor.Tensor) *tensor.Tensor {
	mustArgs("Conv2DTranspose", arg{"x", x})
	f := c.Filter.Value()
	o := c.opts.Conv2DOpts.Conv2DOpts
	axis := 3
	if o.Format == ops.NCHW {
		axis = 1
	}
	if x.Rank() != 4 {
		panic(tensor.NewError("nn", "Conv2DTranspose", tensor.ErrRank, []*tensor.Tensor{x}, "", "x must be a batch of images (%v), got %v", o.Format, x.Shape()))
	}
	needFeatures("Conv2DTranspose", x, axis, f.Dim(3), fmt.Sprintf("input channels (%v)", o.Format), "")
	shape := x.Shape().Clone() // the output's: the transposed Conv2D's input
	spatial := []int{1, 2}
	if o.Format == ops.NCHW {
		spatial = []int{2, 3}
	}
	shape[axis] = f.Dim(2)
	for i, d := range spatial {
		s, dl := max(o.Strides[i], 1), max(o.Dilations[i], 1)
		if o.Padding == ops.Same {
			shape[d] = x.Dim(d) * s
		} else {
			shape[d] = (x.Dim(d)-1)*s + (f.Dim(i)-1)*dl + 1
		}
		shape[d] += c.opts.OutputPadding[i]
	}
	y := ops.Conv2DBackpropInput(shape, valueAs(c.Filter, x), x, o)
	return biasActivate(y, biasAs(c.Bias, x), o.Format, c.opts.Activation)
}

// Variables returns the filter and the bias.
func (c *Conv2DTranspose) Variables() []*tape.Variable { return withBias(c.Filter, c.Bias) }

// DepthwiseConv2D is a depthwise 2-d convolution layer (Keras's
// DepthwiseConv2D; PyTorch's Conv2d with groups equal to the channels):
// each input channel convolved with its own Multiplier filters, x [N, H,
// W, C] (or NCHW) -> [N, OH, OW, C·Multiplier], filter [KH, KW, C,
// Multiplier], output channel c·Multiplier+m from input channel c
// (ops.DepthwiseConv2D). MobileNet's blocks pair it with a 1x1 Conv2D.
type DepthwiseConv2D struct {
	Filter, Bias *tape.Variable
	opts         Conv2DOpts
}

// NewDepthwiseConv2D makes a DepthwiseConv2D with multiplier filters a
// channel and variables name+"/filter" and name+"/bias", configured as
// Conv2D by o. It panics with a *tensor.Error for sizes below 1.
func NewDepthwiseConv2D(name string, rng *tensor.RNG, kh, kw, channels, multiplier int, o Conv2DOpts) *DepthwiseConv2D {
	if kh < 1 || kw < 1 || channels < 1 || multiplier < 1 {
		panic(tensor.NewError("nn", "NewDepthwiseConv2D", tensor.ErrAttr, nil, "", "a %dx%d kernel, %d channels, multiplier %d: each must be at least 1", kh, kw, channels, multiplier))
	}
	c := &DepthwiseConv2D{opts: o}
	c.Filter, c.Bias = convVariables(name, rng, o.DType, o.Kernel, o.NoBias, []int{kh, kw, channels, multiplier}, channels*multiplier)
	return c
}

// Forward convolves each channel, adds the bias and activates.
func (c *DepthwiseConv2D) Forward(x *tensor.Tensor) *tensor.Tensor {
	axis := 3
	if c.opts.Format == ops.NCHW {
		axis = 1
	}
	if x != nil && x.Rank() == 4 {
		needFeatures("DepthwiseConv2D", x, axis, c.Filter.Value().Dim(2), fmt.Sprintf("input channels (%v)", c.opts.Format), "")
	}
	y := ops.DepthwiseConv2D(x, valueAs(c.Filter, x), c.opts.Conv2DOpts)
	return biasActivate(y, biasAs(c.Bias, x), c.opts.Format, c.opts.Activation)
}

// Variables returns the filter and the bias.
func (c *DepthwiseConv2D) Variables() []*tape.Variable { return withBias(c.Filter, c.Bias) }

// convVariables makes a convolution layer's variables: name+"/filter" of
// shape drawn by init (He normal where nil) and, unless noBias,
// name+"/bias" of n zeros, in dt (float32 where Invalid).
func convVariables(name string, rng *tensor.RNG, dt tensor.DType, init Initializer, noBias bool, shape []int, n int) (filter, bias *tape.Variable) {
	dt = orFloat32(dt)
	if init == nil {
		init = HeNormal
	}
	filter = tape.NewVariable(name+"/filter", init(rng, dt, shape...))
	if !noBias {
		bias = tape.NewVariable(name+"/bias", tensor.Zeros(dt, n))
	}
	return filter, bias
}

// withBias is [filter, bias], or [filter] where bias is nil.
func withBias(filter, bias *tape.Variable) []*tape.Variable {
	if bias == nil {
		return []*tape.Variable{filter}
	}
	return []*tape.Variable{filter, bias}
}
