package ops

import (
	"fmt"
	"slices"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Convolution in any number of spatial dimensions, lowered to
// ExtractPatches (im2col) and MatMul, so its gradients, including the two
// backprop ops, are those of its parts.

// ConvDims are XLA's ConvolutionDimensionNumbers: where the batch, feature
// and spatial dimensions sit in the input, the kernel and the output.
type ConvDims struct {
	InBatch, InFeature   int
	InSpatial            []int
	KernelIn, KernelOut  int
	KernelSpatial        []int
	OutBatch, OutFeature int
	OutSpatial           []int
}

// ConvOpts configure Conv, one entry per spatial dimension (nil means 1s or
// no padding). FeatureGroups splits input and output features into that
// many groups (1 by default; the input feature count for a depthwise conv).
type ConvOpts struct {
	Strides       []int
	Padding       [][2]int
	LhsDilation   []int
	RhsDilation   []int
	FeatureGroups int
	Dims          ConvDims
}

// NHWCDims returns the dimension numbers of TensorFlow's default layout
// (input [N, spatial..., C], kernel [spatial..., I, O], output like input)
// for the given number of spatial dimensions.
func NHWCDims(spatial int) ConvDims {
	s := make([]int, spatial)
	for i := range s {
		s[i] = i
	}
	in := make([]int, spatial)
	for i := range in {
		in[i] = i + 1
	}
	return ConvDims{InBatch: 0, InFeature: spatial + 1, InSpatial: in,
		KernelSpatial: s, KernelIn: spatial, KernelOut: spatial + 1,
		OutBatch: 0, OutFeature: spatial + 1, OutSpatial: slices.Clone(in)}
}

// NCHWDims returns the dimension numbers of PyTorch's layout (input [N, C,
// spatial...], kernel [O, I, spatial...], output like input).
func NCHWDims(spatial int) ConvDims {
	s := make([]int, spatial)
	for i := range s {
		s[i] = i + 2
	}
	return ConvDims{InBatch: 0, InFeature: 1, InSpatial: s,
		KernelOut: 0, KernelIn: 1, KernelSpatial: slices.Clone(s),
		OutBatch: 0, OutFeature: 1, OutSpatial: slices.Clone(s)}
}

// convPlan is the lowering of one convolution. The input is padded
// explicitly (so every window lies inside it), then patches are taken in the
// input's own dimension order: rows are the batch and output positions, in
// input order; columns are the feature and kernel taps, in input order. The
// kernel is permuted to match, so only the small kernel and the output move.
type convPlan struct {
	xShape   tensor.Shape
	pad      []PadDim // explicit padding of the input (nil when windows pad)
	win      Window   // over the (padded) input
	kPerm    []int    // kernel dims ordered as the columns, then KernelOut
	rowShape []int    // non-feature input dims' output sizes, in input order, then Cout
	outPerm  []int    // rowShape order -> output order
	featDim  int      // input feature dimension
	kOutDim  int      // kernel output-feature dimension
	rows     int      // number of rows
	cols     int      // columns per group
	cout     int
	groups   int
}

func checkPermutation(op string, in []*tensor.Tensor, perm []int, rank int, what string) {
	if len(perm) != rank {
		fail(op, tensor.ErrAttr, in, "%s dimension numbers %v do not cover rank %d", what, perm, rank)
	}
	seen := make([]bool, rank)
	for _, p := range perm {
		if p < 0 || p >= rank || seen[p] {
			fail(op, tensor.ErrAttr, in, "%s dimension numbers %v are not a permutation", what, perm)
		}
		seen[p] = true
	}
}

func planConv(xShape, kShape tensor.Shape, o ConvOpts) *convPlan {
	in := []*tensor.Tensor{}
	d := o.Dims
	ns := len(d.InSpatial)
	r := ns + 2
	if xShape.Rank() != r || kShape.Rank() != r || len(d.KernelSpatial) != ns || len(d.OutSpatial) != ns {
		fail("Conv", tensor.ErrRank, in, "input %v and kernel %v need rank %d for %d spatial dimensions", xShape, kShape, r, ns)
	}
	checkPermutation("Conv", in, append([]int{d.InBatch, d.InFeature}, d.InSpatial...), r, "input")
	checkPermutation("Conv", in, append([]int{d.KernelIn, d.KernelOut}, d.KernelSpatial...), r, "kernel")
	checkPermutation("Conv", in, append([]int{d.OutBatch, d.OutFeature}, d.OutSpatial...), r, "output")
	groups := max(o.FeatureGroups, 1)
	cin, kin, cout := xShape[d.InFeature], kShape[d.KernelIn], kShape[d.KernelOut]
	if cin != kin*groups || cout%groups != 0 {
		fail("Conv", tensor.ErrShape, in, "input has %d features, kernel expects %d in %d groups with %d outputs", cin, kin, groups, cout)
	}
	fill := func(v []int) []int {
		if v == nil {
			return ones(ns)
		}
		if len(v) != ns {
			fail("Conv", tensor.ErrAttr, in, "%v needs %d entries", v, ns)
		}
		for _, x := range v {
			if x < 1 {
				fail("Conv", tensor.ErrAttr, in, "strides and dilations must be positive, got %v", v)
			}
		}
		return v
	}
	strides, ld, rd := fill(o.Strides), fill(o.LhsDilation), fill(o.RhsDilation)
	padding := o.Padding
	if padding == nil {
		padding = make([][2]int, ns)
	}
	if len(padding) != ns {
		fail("Conv", tensor.ErrAttr, in, "padding needs %d entries", ns)
	}
	p := &convPlan{xShape: xShape, featDim: d.InFeature, kOutDim: d.KernelOut, cout: cout, groups: groups}
	// The window, in input order. With no input dilation the padding is
	// applied beforehand, so the kernels never meet a border.
	p.win = Window{Dims: ones(r), Strides: ones(r), Padding: make([][2]int, r), BaseDilation: ones(r), WindowDilation: ones(r)}
	p.win.Dims[d.InFeature], p.win.Strides[d.InFeature] = kin, kin
	prePad := !slices.ContainsFunc(ld, func(v int) bool { return v != 1 })
	if prePad {
		p.pad = make([]PadDim, r)
	}
	padded := xShape.Clone()
	for i, sd := range d.InSpatial {
		p.win.Dims[sd] = kShape[d.KernelSpatial[i]]
		p.win.Strides[sd], p.win.BaseDilation[sd], p.win.WindowDilation[sd] = strides[i], ld[i], rd[i]
		if prePad {
			p.pad[sd] = PadDim{Low: padding[i][0], High: padding[i][1]}
			padded[sd] += padding[i][0] + padding[i][1]
			if padded[sd] < 0 {
				fail("Conv", tensor.ErrShape, in, "padding %v leaves spatial dimension %d negative", padding[i], i)
			}
		} else {
			p.win.Padding[sd] = padding[i]
		}
	}
	// Columns: the input's feature and spatial dims in input order, mapped
	// to the kernel's; then the kernel's output features.
	toKernel := map[int]int{d.InFeature: d.KernelIn}
	for i, sd := range d.InSpatial {
		toKernel[sd] = d.KernelSpatial[i]
	}
	p.cols = 1
	for x := 0; x < r; x++ {
		if k, ok := toKernel[x]; ok {
			p.kPerm = append(p.kPerm, k)
			p.cols *= p.win.Dims[x]
		}
	}
	p.kPerm = append(p.kPerm, d.KernelOut)
	// Rows: the other input dims in input order, with their output sizes.
	g := Window{Dims: p.win.Dims, Strides: p.win.Strides, Padding: p.win.Padding,
		BaseDilation: p.win.BaseDilation, WindowDilation: p.win.WindowDilation}
	logical := []int{} // for each row dim: -1 batch, else spatial index
	p.rows = 1
	for x := 0; x < r; x++ {
		if x == d.InFeature {
			continue
		}
		n := outSize(padded[x], g, x)
		p.rowShape = append(p.rowShape, n)
		p.rows *= n
		li := -1
		for i, sd := range d.InSpatial {
			if sd == x {
				li = i
			}
		}
		logical = append(logical, li)
	}
	p.rowShape = append(p.rowShape, cout)
	// Output dim j takes rowShape dim pos: Transpose(y, outPerm...).
	p.outPerm = make([]int, r)
	for j := 0; j < r; j++ {
		switch {
		case j == d.OutFeature:
			p.outPerm[j] = r - 1
		case j == d.OutBatch:
			p.outPerm[j] = slices.Index(logical, -1)
		default:
			p.outPerm[j] = slices.Index(logical, slices.Index(d.OutSpatial, j))
		}
	}
	return p
}

// patchRows pads x and lays its patches out as [rows, cols] for group gi.
func (p *convPlan) patchRows(x *tensor.Tensor, gi int) *tensor.Tensor {
	if p.pad != nil {
		x = Pad(x, ScalarLike(x, 0), p.pad...)
	}
	x = p.groupInput(x, gi)
	return Reshape(ExtractPatches(x, ScalarLike(x, 0), p.win), p.rows, p.cols)
}

func (p *convPlan) groupInput(x *tensor.Tensor, gi int) *tensor.Tensor {
	if p.groups == 1 {
		return x
	}
	n := x.Dim(p.featDim) / p.groups
	return sliceAxis(x, p.featDim, gi*n, (gi+1)*n)
}

// kernelMatrix lays the kernel out as [cols, cout/groups] for group gi.
func (p *convPlan) kernelMatrix(k *tensor.Tensor, gi int) *tensor.Tensor {
	if p.groups > 1 {
		n := k.Dim(p.kOutDim) / p.groups
		k = sliceAxis(k, p.kOutDim, gi*n, (gi+1)*n)
	}
	return Reshape(Transpose(k, p.kPerm...), p.cols, -1)
}

// output turns [rows, cout] into the output layout; outputRows inverts it.
func (p *convPlan) output(y *tensor.Tensor) *tensor.Tensor {
	return Transpose(Reshape(y, p.rowShape...), p.outPerm...)
}

func (p *convPlan) outputRows(dy *tensor.Tensor) *tensor.Tensor {
	return Reshape(Transpose(dy, inversePerm(p.outPerm)...), p.rows, p.cout)
}

// sliceAxis takes [lo, hi) of one dimension.
func sliceAxis(x *tensor.Tensor, axis, lo, hi int) *tensor.Tensor {
	start := make([]int, x.Rank())
	limit := slices.Clone([]int(x.Shape()))
	start[axis], limit[axis] = lo, hi
	return Slice(x, start, limit, nil)
}

// groupSlice returns columns [gi*n, (gi+1)*n) of a [rows, cout] matrix.
func (p *convPlan) groupCols(m *tensor.Tensor, gi int) *tensor.Tensor {
	if p.groups == 1 {
		return m
	}
	n := p.cout / p.groups
	return sliceAxis(m, 1, gi*n, (gi+1)*n)
}

// Conv is XLA's ConvGeneralDilated: any number of spatial dimensions,
// strides, (low, high) padding including negative, lhs (input) and rhs
// (kernel) dilation, feature groups, and dimension numbers. x and kernel
// share a float dtype. Panics with a *tensor.Error when shapes or options do
// not fit.
func Conv(x, kernel *tensor.Tensor, o ConvOpts) *tensor.Tensor {
	needInputs("Conv", x, kernel)
	defer asOp("Conv")
	p := planConv(x.Shape(), kernel.Shape(), o)
	outs := make([]*tensor.Tensor, p.groups)
	for gi := range outs {
		outs[gi] = MatMul(p.patchRows(x, gi), p.kernelMatrix(kernel, gi))
	}
	y := outs[0]
	if p.groups > 1 {
		y = Concatenate(1, outs...)
	}
	return p.output(y)
}

// convBackpropInput is the gradient of Conv with respect to x.
func convBackpropInput(xShape tensor.Shape, kernel, dy *tensor.Tensor, o ConvOpts) *tensor.Tensor {
	p := planConv(xShape, kernel.Shape(), o)
	dy2 := p.outputRows(dy)
	padded := xShape.Clone()
	for d, pd := range p.pad {
		padded[d] += pd.Low + pd.High
	}
	parts := make([]*tensor.Tensor, p.groups)
	for gi := range parts {
		gShape := padded.Clone()
		gShape[p.featDim] /= p.groups
		cols := MatMulT(p.groupCols(dy2, gi), p.kernelMatrix(kernel, gi), false, true)
		parts[gi] = ScatterPatches(Reshape(cols, patchesShape(gShape, p.win)...), gShape, p.win)
	}
	dx := parts[0]
	if p.groups > 1 {
		dx = Concatenate(p.featDim, parts...)
	}
	if p.pad != nil {
		dx = unpad(dx, xShape, p.pad)
	}
	return dx
}

// convBackpropFilter is the gradient of Conv with respect to the kernel.
func convBackpropFilter(x *tensor.Tensor, kShape tensor.Shape, dy *tensor.Tensor, o ConvOpts) *tensor.Tensor {
	p := planConv(x.Shape(), kShape, o)
	dy2 := p.outputRows(dy)
	parts := make([]*tensor.Tensor, p.groups)
	permuted := make([]int, len(p.kPerm))
	for i, k := range p.kPerm {
		permuted[i] = kShape[k]
	}
	permuted[len(permuted)-1] /= p.groups
	for gi := range parts {
		parts[gi] = Transpose(Reshape(MatMulT(p.patchRows(x, gi), p.groupCols(dy2, gi), true, false), permuted...),
			inversePerm(p.kPerm)...)
	}
	if p.groups == 1 {
		return parts[0]
	}
	return Concatenate(p.kOutDim, parts...)
}

// PaddingMode chooses how Conv2D and the pools pad: Valid (the zero value:
// no padding), Same (output size ceil(n/stride), padding split low/high,
// the extra one high, as TensorFlow) or Explicit (Conv2DOpts.Explicit's
// pairs).
type PaddingMode uint8

// Padding modes, as TensorFlow names them.
const (
	Valid    PaddingMode = iota // no padding
	Same                        // output size ceil(n/stride), padding split low/high
	Explicit                    // the given (low, high) pairs
)

func (p PaddingMode) String() string {
	switch p {
	case Valid:
		return "VALID"
	case Same:
		return "SAME"
	case Explicit:
		return "EXPLICIT"
	}
	return fmt.Sprintf("PaddingMode(%d)", uint8(p))
}

// Conv2DOpts configure Conv2D and its backprops. Zero values mean stride
// 1, dilation 1, VALID padding, NHWC.
type Conv2DOpts struct {
	Strides   [2]int
	Dilations [2]int
	Padding   PaddingMode
	Explicit  [2][2]int // (low, high) for H and W when Padding is Explicit
	Format    DataFormat
}

func (o Conv2DOpts) String() string {
	return fmt.Sprintf("strides=%v dilations=%v padding=%d format=%v", o.Strides, o.Dilations, o.Padding, o.Format)
}

// check fails op unless the options are meaningful: strides and
// dilations positive (or 0 for 1), a known padding mode and layout.
func (o Conv2DOpts) check(op string, in []*tensor.Tensor) {
	for i := range 2 {
		if o.Strides[i] < 0 || o.Dilations[i] < 0 {
			panic(tensor.NewError("ops", op, tensor.ErrAttr, in, o.String(), "strides and dilations must be positive (0 means 1), got strides %v and dilations %v", o.Strides, o.Dilations))
		}
	}
	if o.Padding > Explicit {
		panic(tensor.NewError("ops", op, tensor.ErrAttr, in, o.String(), "unknown padding mode %d (Valid, Same or Explicit)", o.Padding))
	}
	if o.Format > NCHW {
		panic(tensor.NewError("ops", op, tensor.ErrAttr, in, o.String(), "unknown data format %d (NHWC or NCHW)", o.Format))
	}
}

func orOne(v int) int {
	if v == 0 {
		return 1
	}
	return v
}

// convOpts turns Conv2DOpts into ConvOpts for an input of height h, width w
// and a filter of kh x kw (filter layout HWIO, TensorFlow's).
func (o Conv2DOpts) convOpts(h, w, kh, kw int) ConvOpts {
	st := []int{orOne(o.Strides[0]), orOne(o.Strides[1])}
	dl := []int{orOne(o.Dilations[0]), orOne(o.Dilations[1])}
	var pad [][2]int
	switch o.Padding {
	case Same:
		pad = [][2]int{SamePadding(h, kh, st[0], dl[0]), SamePadding(w, kw, st[1], dl[1])}
	case Explicit:
		pad = [][2]int{o.Explicit[0], o.Explicit[1]}
	default:
		pad = [][2]int{{0, 0}, {0, 0}}
	}
	dims := NHWCDims(2)
	if o.Format == NCHW {
		dims = NCHWDims(2)
		dims.KernelSpatial, dims.KernelIn, dims.KernelOut = []int{0, 1}, 2, 3 // filters stay HWIO
	}
	return ConvOpts{Strides: st, RhsDilation: dl, Padding: pad, Dims: dims}
}

func hw(x *tensor.Tensor, f DataFormat) (int, int) { return hwOf(x.Shape(), f) }

func hwOf(s tensor.Shape, f DataFormat) (int, int) {
	if f == NCHW {
		return s[2], s[3]
	}
	return s[1], s[2]
}

// Conv2D convolves a batch of images with filters: x: [N, H, W, C] (NHWC)
// or [N, C, H, W] (NCHW), filter: [KH, KW, C, O] -> [N, OH, OW, O] or [N, O,
// OH, OW], with strides, dilations and SAME/VALID/explicit padding as
// TensorFlow's Conv2D.
func Conv2D(x, filter *tensor.Tensor, o Conv2DOpts) *tensor.Tensor {
	needInputs("Conv2D", x, filter)
	defer asOp("Conv2D")
	o.check("Conv2D", []*tensor.Tensor{x, filter})
	if x.Rank() != 4 || filter.Rank() != 4 {
		fail("Conv2D", tensor.ErrRank, []*tensor.Tensor{x, filter}, "needs rank-4 input and filter")
	}
	h, w := hw(x, o.Format)
	if a, ok := gemmConv(o, h, w, filter.Dim(0), filter.Dim(1)); ok {
		return eager.Run1(conv2DGemmOp, a, x, filter)
	}
	return Conv(x, filter, o.convOpts(h, w, filter.Dim(0), filter.Dim(1)))
}

// Conv2DBackpropInput returns the gradient of Conv2D with respect to its
// input, given the input's shape, the filter and the output gradient dy
// (TensorFlow's Conv2DBackpropInput). It is what the tape computes for a
// recorded Conv2D.
func Conv2DBackpropInput(inputShape tensor.Shape, filter, dy *tensor.Tensor, o Conv2DOpts) *tensor.Tensor {
	needInputs("Conv2DBackpropInput", filter, dy)
	defer asOp("Conv2DBackpropInput")
	o.check("Conv2DBackpropInput", []*tensor.Tensor{filter, dy})
	if inputShape.Rank() != 4 || filter.Rank() != 4 {
		fail("Conv2DBackpropInput", tensor.ErrRank, []*tensor.Tensor{filter, dy}, "needs a rank-4 input shape and filter, got %v and %v", inputShape, filter.Shape())
	}
	h, w := hwOf(inputShape, o.Format)
	if a, ok := gemmConv(o, h, w, filter.Dim(0), filter.Dim(1)); ok {
		dx := eager.Run1(conv2DGemmInputOp, a, filter, dy)
		if !dx.Shape().Equal(inputShape) {
			fail("Conv2DBackpropInput", tensor.ErrShape, []*tensor.Tensor{filter, dy}, "input shape %v does not match filter %v and dy %v (they give %v)", inputShape, filter.Shape(), dy.Shape(), dx.Shape())
		}
		return dx
	}
	return convBackpropInput(inputShape, filter, dy, o.convOpts(h, w, filter.Dim(0), filter.Dim(1)))
}

// Conv2DBackpropFilter returns the gradient of Conv2D with respect to its
// filter, given the input, the filter's shape and dy (TensorFlow's
// Conv2DBackpropFilter).
func Conv2DBackpropFilter(x *tensor.Tensor, filterShape tensor.Shape, dy *tensor.Tensor, o Conv2DOpts) *tensor.Tensor {
	needInputs("Conv2DBackpropFilter", x, dy)
	defer asOp("Conv2DBackpropFilter")
	o.check("Conv2DBackpropFilter", []*tensor.Tensor{x, dy})
	if x.Rank() != 4 || filterShape.Rank() != 4 {
		fail("Conv2DBackpropFilter", tensor.ErrRank, []*tensor.Tensor{x, dy}, "needs a rank-4 input and filter shape, got %v and %v", x.Shape(), filterShape)
	}
	h, w := hw(x, o.Format)
	if a, ok := gemmConv(o, h, w, filterShape[0], filterShape[1]); ok {
		df := eager.Run1(conv2DGemmFilterOp, a, x, dy)
		if !df.Shape().Equal(filterShape) {
			fail("Conv2DBackpropFilter", tensor.ErrShape, []*tensor.Tensor{x, dy}, "filter shape %v does not match input %v and dy %v (they give %v)", filterShape, x.Shape(), dy.Shape(), df.Shape())
		}
		return df
	}
	return convBackpropFilter(x, filterShape, dy, o.convOpts(h, w, filterShape[0], filterShape[1]))
}

// DepthwiseConv2D convolves each input channel with its own filters
// (TensorFlow's depthwise_conv2d): filter [KH, KW, C, M] gives C*M output
// channels, channel c*M+m from input channel c. It is Conv with C feature
// groups, computed directly (each output from its KH x KW taps) where the
// device has the kernels (the CPU, the GPU).
func DepthwiseConv2D(x, filter *tensor.Tensor, o Conv2DOpts) *tensor.Tensor {
	needInputs("DepthwiseConv2D", x, filter)
	defer asOp("DepthwiseConv2D")
	o.check("DepthwiseConv2D", []*tensor.Tensor{x, filter})
	if x.Rank() != 4 || filter.Rank() != 4 {
		fail("DepthwiseConv2D", tensor.ErrRank, []*tensor.Tensor{x, filter}, "needs rank-4 input and filter")
	}
	h, w := hw(x, o.Format)
	if a, ok := gemmConv(o, h, w, filter.Dim(0), filter.Dim(1)); ok && fusedOn(depthwiseOp, x) {
		return eager.Run1(depthwiseOp, a, x, filter)
	}
	c := filter.Dim(2)
	opts := o.convOpts(h, w, filter.Dim(0), filter.Dim(1))
	opts.FeatureGroups = c
	return Conv(x, Reshape(filter, filter.Dim(0), filter.Dim(1), 1, c*filter.Dim(3)), opts)
}
