package ops

import (
	"fmt"
	"slices"

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

// convPlan is the lowering of one convolution.
type convPlan struct {
	inPerm, kPerm, outPerm []int // to [N, S..., C], [S..., I, O] and back
	win                    Window
	n, spatialOut, cout    int
	outShape               []int // [N, O..., Cout] before outPerm
	kShape2                []int // [prod(k)*I, O]
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

func planConv(x, k *tensor.Tensor, o ConvOpts) *convPlan {
	in := []*tensor.Tensor{x, k}
	d := o.Dims
	ns := len(d.InSpatial)
	if x.Rank() != ns+2 || k.Rank() != ns+2 || len(d.KernelSpatial) != ns || len(d.OutSpatial) != ns {
		fail("Conv", tensor.ErrRank, in, "input and kernel need rank %d for %d spatial dimensions", ns+2, ns)
	}
	p := &convPlan{
		inPerm:  append(append([]int{d.InBatch}, d.InSpatial...), d.InFeature),
		kPerm:   append(slices.Clone(d.KernelSpatial), d.KernelIn, d.KernelOut),
		outPerm: make([]int, ns+2),
	}
	checkPermutation("Conv", in, p.inPerm, x.Rank(), "input")
	checkPermutation("Conv", in, p.kPerm, k.Rank(), "kernel")
	// Output dimension j comes from position pos[j] of [N, O..., C].
	pos := append(append([]int{d.OutBatch}, d.OutSpatial...), d.OutFeature)
	checkPermutation("Conv", in, pos, ns+2, "output")
	for i, j := range pos {
		p.outPerm[j] = i
	}
	groups := max(o.FeatureGroups, 1)
	cin, kin, cout := x.Dim(d.InFeature), k.Dim(d.KernelIn), k.Dim(d.KernelOut)
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
		return v
	}
	strides, ld, rd := fill(o.Strides), fill(o.LhsDilation), fill(o.RhsDilation)
	pad := o.Padding
	if pad == nil {
		pad = make([][2]int, ns)
	}
	if len(pad) != ns {
		fail("Conv", tensor.ErrAttr, in, "padding needs %d entries", ns)
	}
	kin = cin / groups
	// The window covers every spatial tap and all of a group's features.
	p.win = Window{
		Dims:           append(append([]int{1}, spatialSizes(k, d.KernelSpatial)...), kin),
		Strides:        append(append([]int{1}, strides...), kin),
		Padding:        append(append([][2]int{{0, 0}}, pad...), [2]int{0, 0}),
		BaseDilation:   append(append([]int{1}, ld...), 1),
		WindowDilation: append(append([]int{1}, rd...), 1),
	}
	p.n, p.cout = x.Dim(d.InBatch), cout
	p.spatialOut = 1
	p.outShape = []int{p.n}
	for i, s := range d.InSpatial {
		w := Window{Dims: []int{p.win.Dims[i+1]}, Strides: []int{strides[i]}, Padding: [][2]int{pad[i]},
			BaseDilation: []int{ld[i]}, WindowDilation: []int{rd[i]}}
		os := outSize(x.Dim(s), w, 0)
		p.outShape = append(p.outShape, os)
		p.spatialOut *= os
	}
	p.outShape = append(p.outShape, cout)
	p.kShape2 = []int{tensor.Shape(spatialSizes(k, d.KernelSpatial)).NumElements() * kin, cout}
	return p
}

func spatialSizes(t *tensor.Tensor, dims []int) []int {
	s := make([]int, len(dims))
	for i, d := range dims {
		s[i] = t.Dim(d)
	}
	return s
}

// Conv is XLA's ConvGeneralDilated: any number of spatial dimensions,
// strides, (low, high) padding including negative, lhs (input) and rhs
// (kernel) dilation, feature groups, and dimension numbers. x and kernel
// share a float dtype. Panics with a *tensor.Error when shapes or options do
// not fit.
func Conv(x, kernel *tensor.Tensor, o ConvOpts) *tensor.Tensor {
	p := planConv(x, kernel, o)
	xt := Transpose(x, p.inPerm...)     // [N, S..., C]
	kt := Transpose(kernel, p.kPerm...) // [k..., I, O]
	groups := max(o.FeatureGroups, 1)
	cin := xt.Dim(-1)
	outs := make([]*tensor.Tensor, groups)
	for gi := 0; gi < groups; gi++ {
		xg, kg := xt, kt
		if groups > 1 {
			xg = sliceLast(xt, gi*cin/groups, (gi+1)*cin/groups)
			kg = sliceLast(kt, gi*p.cout/groups, (gi+1)*p.cout/groups)
		}
		patches := ExtractPatches(xg, ScalarLike(xg, 0), p.win)
		rows := Reshape(patches, p.n*p.spatialOut, p.kShape2[0])
		outs[gi] = MatMul(rows, Reshape(kg, p.kShape2[0], kg.Dim(-1)))
	}
	y := outs[0]
	if groups > 1 {
		y = Concatenate(1, outs...)
	}
	return Transpose(Reshape(y, p.outShape...), p.outPerm...)
}

// sliceLast takes [lo, hi) of the last dimension.
func sliceLast(x *tensor.Tensor, lo, hi int) *tensor.Tensor {
	start := make([]int, x.Rank())
	limit := slices.Clone([]int(x.Shape()))
	start[len(start)-1], limit[len(limit)-1] = lo, hi
	return Slice(x, start, limit, nil)
}

// PaddingMode chooses how Conv2D and the pools pad.
type PaddingMode uint8

// Padding modes, as TensorFlow names them.
const (
	Valid    PaddingMode = iota // no padding
	Same                        // output size ceil(n/stride), padding split low/high
	Explicit                    // the given (low, high) pairs
)

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

func hw(x *tensor.Tensor, f DataFormat) (int, int) {
	if f == NCHW {
		return x.Dim(2), x.Dim(3)
	}
	return x.Dim(1), x.Dim(2)
}

// Conv2D convolves a batch of images with filters: x: [N, H, W, C] (NHWC)
// or [N, C, H, W] (NCHW), filter: [KH, KW, C, O] -> [N, OH, OW, O] or [N, O,
// OH, OW], with strides, dilations and SAME/VALID/explicit padding as
// TensorFlow's Conv2D.
func Conv2D(x, filter *tensor.Tensor, o Conv2DOpts) *tensor.Tensor {
	if x.Rank() != 4 || filter.Rank() != 4 {
		fail("Conv2D", tensor.ErrRank, []*tensor.Tensor{x, filter}, "needs rank-4 input and filter")
	}
	h, w := hw(x, o.Format)
	return Conv(x, filter, o.convOpts(h, w, filter.Dim(0), filter.Dim(1)))
}

// Conv2DBackpropInput returns the gradient of Conv2D with respect to its
// input, given the input's shape, the filter and the output gradient dy
// (TensorFlow's Conv2DBackpropInput).
func Conv2DBackpropInput(inputShape tensor.Shape, filter, dy *tensor.Tensor, o Conv2DOpts) *tensor.Tensor {
	x := on(tensor.Zeros(dy.DType(), inputShape...), dy.Device())
	h, w := hw(x, o.Format)
	p := planConv(x, filter, o.convOpts(h, w, filter.Dim(0), filter.Dim(1)))
	dy2 := Reshape(Transpose(dy, inversePerm(p.outPerm)...), p.n*p.spatialOut, p.cout)
	k2 := Reshape(Transpose(filter, p.kPerm...), p.kShape2...)
	xt := Transpose(x, p.inPerm...)
	patches := Reshape(MatMulT(dy2, k2, false, true), patchesShape(newGeometry(xt.Shape(), p.win.withDefaults(xt.Rank())))...)
	return Transpose(ScatterPatches(patches, xt.Shape(), p.win), inversePerm(p.inPerm)...)
}

// Conv2DBackpropFilter returns the gradient of Conv2D with respect to its
// filter, given the input, the filter's shape and dy (TensorFlow's
// Conv2DBackpropFilter).
func Conv2DBackpropFilter(x *tensor.Tensor, filterShape tensor.Shape, dy *tensor.Tensor, o Conv2DOpts) *tensor.Tensor {
	filter := on(tensor.Zeros(dy.DType(), filterShape...), dy.Device())
	h, w := hw(x, o.Format)
	p := planConv(x, filter, o.convOpts(h, w, filter.Dim(0), filter.Dim(1)))
	dy2 := Reshape(Transpose(dy, inversePerm(p.outPerm)...), p.n*p.spatialOut, p.cout)
	xt := Transpose(x, p.inPerm...)
	rows := Reshape(ExtractPatches(xt, ScalarLike(xt, 0), p.win), p.n*p.spatialOut, p.kShape2[0])
	kt := Reshape(MatMulT(rows, dy2, true, false), Transpose(filter, p.kPerm...).Shape()...)
	return Transpose(kt, inversePerm(p.kPerm)...)
}
