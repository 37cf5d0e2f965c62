package cuda

import (
	"github.com/eagerflow/eagerflow/backend/move"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Conv2DGemm and its two backprops (ops/conv_gemm.go) as cuBLAS GEMMs
// against the batch's patch matrix P (the window family's patches: rows
// the output positions (image, oh, ow), columns the taps, (kh, kw, c) in
// NHWC and (c, kh, kw) in NCHW):
//   - NHWC: Y [N·OH·OW, O] = P·F, with the HWIO filter F already [KH·KW·C,
//     O]; dP = dY·Fᵀ; dF = Pᵀ·dY.
//   - NCHW: the filter permuted to F' [C·KH·KW, O]; image n's output
//     Y_n [O, OH·OW] = F'ᵀ·P_nᵀ, one batched GEMM; dP_n = dY_nᵀ·F'ᵀ; dF' =
//     Pᵀ·dY' with dY permuted to [N·OH·OW, O], then permuted back.
//
// The input gradient is the patches' adjoint (ScatterPatches) of dP.
// Where cuDNN takes the convolution, it computes all three instead
// (dnn.go).

func init() {
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		eager.RegisterKernel("Conv2DGemm", device.GPU, dt, conv)
		eager.RegisterKernel("FusedConv2D", device.GPU, dt, fusedConv)
		eager.RegisterKernel("Conv2DGemmBackpropInput", device.GPU, dt, convInput)
		eager.RegisterKernel("Conv2DGemmBackpropFilter", device.GPU, dt, convFilter)
		eager.RegisterKernel("FusedConv2DBackprop", device.GPU, dt, fusedConvBackprop)
	}
	// The half types: cuDNN's tensor-core convolutions where it takes
	// them, else through float32 (so FusedConv2DBackprop, whose bias
	// gradient is a reduction the half types have no kernel for).
	for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		eager.RegisterKernel("Conv2DGemm", device.GPU, dt, halfConv(func(c *eager.Call, out *tensor.Tensor) bool {
			return gpu(c).dnnForward(c, c.Attrs.(ops.Conv2DGemmAttrs), c.Inputs[0], c.Inputs[1], out)
		}))
		eager.RegisterKernel("FusedConv2D", device.GPU, dt, halfConv(func(c *eager.Call, out *tensor.Tensor) bool {
			a := c.Attrs.(ops.FusedConv2DAttrs)
			if !gpu(c).dnnForward(c, a.Conv, c.Inputs[0], c.Inputs[1], out) {
				return false
			}
			addBias(c, a, c.Inputs[2], out)
			return true
		}))
		eager.RegisterKernel("Conv2DGemmBackpropInput", device.GPU, dt, halfConv(func(c *eager.Call, out *tensor.Tensor) bool {
			return gpu(c).dnnBackwardData(c, c.Attrs.(ops.Conv2DGemmAttrs), c.Inputs[0], c.Inputs[1], out)
		}))
		eager.RegisterKernel("Conv2DGemmBackpropFilter", device.GPU, dt, halfConv(func(c *eager.Call, out *tensor.Tensor) bool {
			return gpu(c).dnnBackwardFilter(c, c.Attrs.(ops.Conv2DGemmAttrs), c.Inputs[0], c.Inputs[1], out)
		}))
		eager.RegisterKernel("FusedConv2DBackprop", device.GPU, dt, halfFusedConvBackprop)
	}
}

// halfFusedConvBackprop is FusedConv2DBackprop of a half type: dz by the
// half ReluGrad kernel, the input and filter gradients through cuDNN, the
// bias gradient's sum in float32 (the Reduce op's own path for the half
// types); where cuDNN does not take a backprop, the whole call computes
// through float32 (every output written anew).
func halfFusedConvBackprop(c *eager.Call, outs []*tensor.Tensor) {
	a := c.Attrs.(ops.FusedConv2DBackpropAttrs)
	x, f, y, dy := c.Inputs[0], c.Inputs[1], c.Inputs[2], c.Inputs[3]
	d, db := gpu(c), outs[len(outs)-1]
	dz := dy
	if a.Activation == ops.ReluActivation {
		dz = temporary(c, dy.DType(), dy.Shape(), "the masked gradient")
		defer dz.Release()
		binaryInto(c, "binary", binaryOps["ReluGrad"], kernelType(dy.DType()), y, dy, dz)
	}
	done := !a.InputGrad || d.dnnBackwardData(c, a.Conv, f, dz, outs[0])
	done = done && d.dnnBackwardFilter(c, a.Conv, x, dz, outs[len(outs)-2])
	dims := []int{0, 1, 2} // NHWC: all but the channels
	if a.Conv.Format == ops.NCHW {
		dims = []int{0, 2, 3}
	}
	sum := &eager.Call{Op: eager.Lookup("Reduce"), Attrs: ops.Reduction{Kind: ops.ReduceSum, Dims: dims}, Device: c.Device, Inputs: []*tensor.Tensor{dz}}
	if !done || !eager.ThroughFloat32(sum, []*tensor.Tensor{db}) {
		halfConv(nil)(c, outs)
	}
}

// halfConv is the kernel of a convolution op of a half type: dnn computes
// its one output through cuDNN and reports whether it could; where it
// could not (or is nil), the call computes through float32.
func halfConv(dnn func(c *eager.Call, out *tensor.Tensor) bool) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		if outs[0].NumElements() == 0 && len(outs) == 1 {
			return
		}
		if dnn != nil && len(outs) == 1 && dnn(c, outs[0]) {
			return
		}
		if !eager.ThroughFloat32(c, outs) {
			c.Fail(tensor.ErrNoKernel, "no %v kernel on %s, nor a float32 one", outs[0].DType(), c.Device.Name())
		}
	}
}

// convWindow is the window whose patches over a batch of ch-channel
// images are the patch matrix.
func convWindow(a ops.Conv2DGemmAttrs, ch int) ops.Window {
	w := ops.Window{Dims: []int{1, a.KH, a.KW, ch}, Strides: []int{1, a.StrideH, a.StrideW, 1},
		Padding:      [][2]int{{0, 0}, {a.PadTop, a.PadBottom}, {a.PadLeft, a.PadRight}, {0, 0}},
		BaseDilation: []int{1, 1, 1, 1}, WindowDilation: []int{1, a.DilationH, a.DilationW, 1}}
	if a.Format == ops.NCHW {
		w.Dims = []int{1, ch, a.KH, a.KW}
		w.Strides = []int{1, 1, a.StrideH, a.StrideW}
		w.Padding = [][2]int{{0, 0}, {0, 0}, {a.PadTop, a.PadBottom}, {a.PadLeft, a.PadRight}}
		w.WindowDilation = []int{1, 1, a.DilationH, a.DilationW}
	}
	return w
}

// temporary is a new tensor on the call's device, failing the call when
// the memory is not there; the caller releases it.
func temporary(c *eager.Call, dt tensor.DType, shape tensor.Shape, what string) *tensor.Tensor {
	t, err := tensor.Empty(c.Device, dt, shape)
	if err != nil {
		c.Fail(err, "a %v%v temporary for %s", dt, shape, what)
	}
	return t
}

// convShapes are the output positions per image and the taps per
// position of a convolution with attributes a over ch channels.
func convShapes(a ops.Conv2DGemmAttrs, ch int) (rows, taps int) {
	oh, ow := a.OutSize()
	return oh * ow, a.KH * a.KW * ch
}

// patchMatrix is the patch matrix of the batch x, a temporary.
func patchMatrix(c *eager.Call, x *tensor.Tensor, a ops.Conv2DGemmAttrs, rows, taps int) *tensor.Tensor {
	ch := a.Channels(x)
	p := temporary(c, x.DType(), tensor.Shape{x.Dim(0) * rows, taps}, "the convolution's patches")
	pad := temporary(c, x.DType(), tensor.Shape{}, "the padding value")
	defer pad.Release()
	if err := gpu(c).Fill(pad.Buffer(), 0, 1, make([]byte, x.DType().Size())); err != nil {
		p.Release()
		check(c, err)
	}
	if err := gpu(c).patches(c, p, x, pad, convWindow(a, ch)); err != nil {
		p.Release()
		check(c, err)
	}
	return p
}

// hwioAsCIO is the HWIO filter f permuted to [C, KH, KW, O], a temporary.
func hwioAsCIO(c *eager.Call, f *tensor.Tensor) *tensor.Tensor {
	return move.Permuted(c, f, []int{2, 0, 1, 3})
}

func conv(c *eager.Call, outs []*tensor.Tensor) { convInto(c, c.Attrs.(ops.Conv2DGemmAttrs), outs[0]) }

// fusedConv is FusedConv2D: the convolution, then the bias added and the
// activation applied in place, in one elementwise launch.
func fusedConv(c *eager.Call, outs []*tensor.Tensor) {
	a, out := c.Attrs.(ops.FusedConv2DAttrs), outs[0]
	convInto(c, a.Conv, out)
	addBias(c, a, c.Inputs[2], out)
}

// addBias adds FusedConv2D's bias along out's channels and applies its
// activation, in place.
func addBias(c *eager.Call, a ops.FusedConv2DAttrs, bias, out *tensor.Tensor) {
	along := tensor.Shape{bias.Dim(0)}
	if a.Conv.Format == ops.NCHW {
		along = tensor.Shape{bias.Dim(0), 1, 1}
	}
	check(c, gpu(c).biasRelu(out, bias, along, a.Activation == ops.ReluActivation))
}

// convInto is the convolution of the call's first two inputs into out.
func convInto(c *eager.Call, a ops.Conv2DGemmAttrs, out *tensor.Tensor) {
	x, f := c.Inputs[0], c.Inputs[1]
	if out.NumElements() == 0 || gpu(c).dnnForward(c, a, x, f, out) {
		return
	}
	n, o := x.Dim(0), f.Dim(3)
	rows, taps := convShapes(a, a.Channels(x))
	p := patchMatrix(c, x, a, rows, taps)
	defer p.Release()
	if a.Format == ops.NHWC {
		check(c, gpu(c).product(product{a: p, b: f, c: out, m: n * rows, k: taps, n: o, batch: 1}))
		return
	}
	fp := hwioAsCIO(c, f)
	defer fp.Release()
	check(c, gpu(c).product(product{a: fp, transA: true, b: p, transB: true, c: out,
		m: o, k: taps, n: rows, strideB: rows * taps, batch: n}))
}

func convInput(c *eager.Call, outs []*tensor.Tensor) {
	convInputInto(c, c.Attrs.(ops.Conv2DGemmAttrs), c.Inputs[0], c.Inputs[1], outs[0])
}

// convInputInto is the input gradient of a convolution with attributes a
// and filter f, from the output gradient dy, into out.
func convInputInto(c *eager.Call, a ops.Conv2DGemmAttrs, f, dy, out *tensor.Tensor) {
	if out.NumElements() == 0 || gpu(c).dnnBackwardData(c, a, f, dy, out) {
		return
	}
	n, ch, o := dy.Dim(0), f.Dim(2), f.Dim(3)
	rows, taps := convShapes(a, ch)
	dp := temporary(c, dy.DType(), tensor.Shape{n * rows, taps}, "the patches' gradient")
	defer dp.Release()
	d := gpu(c)
	if a.Format == ops.NHWC {
		check(c, d.product(product{a: dy, b: f, transB: true, c: dp, m: n * rows, k: o, n: taps, batch: 1}))
	} else {
		fp := hwioAsCIO(c, f)
		defer fp.Release()
		check(c, d.product(product{a: dy, transA: true, strideA: o * rows, b: fp, transB: true, c: dp,
			m: rows, k: o, n: taps, batch: n}))
	}
	check(c, d.scatterPatches(c, out, dp, convWindow(a, ch)))
}

func convFilter(c *eager.Call, outs []*tensor.Tensor) {
	convFilterInto(c, c.Attrs.(ops.Conv2DGemmAttrs), c.Inputs[0], c.Inputs[1], outs[0], nil)
}

// fusedConvBackprop is FusedConv2DBackprop (ops/conv_fused_grad.go): dz =
// ReluGrad(y, dy) into a temporary (dy itself without an activation), the
// input and filter gradients from it as Conv2DGemm's backprops compute
// them, and the bias gradient its sum over the batch and positions, as
// Reduce computes it.
func fusedConvBackprop(c *eager.Call, outs []*tensor.Tensor) {
	a := c.Attrs.(ops.FusedConv2DBackpropAttrs)
	x, f, y, dy := c.Inputs[0], c.Inputs[1], c.Inputs[2], c.Inputs[3]
	d := kernelType(dy.DType())
	dz := dy
	if a.Activation == ops.ReluActivation {
		dz = temporary(c, dy.DType(), dy.Shape(), "the masked gradient")
		defer dz.Release()
		binaryInto(c, "binary", binaryOps["ReluGrad"], d, y, dy, dz)
	}
	if a.InputGrad {
		convInputInto(c, a.Conv, f, dz, outs[0])
		outs = outs[1:]
	}
	// The bias gradient in the filter GEMM's epilogue where the filter
	// gradient is a GEMM and the context runs one; else by the
	// reductions' kernels: cuDNN's (cudnnConvolutionBackwardBias,
	// calc_bias_diff_nhwc_packed) took 284 µs a call on an H200 for what
	// a column sum does in about 6.
	if convFilterInto(c, a.Conv, x, dz, outs[0], outs[1]) {
		return
	}
	dims := []int{0, 1, 2} // NHWC: all but the channels
	if a.Conv.Format == ops.NCHW {
		dims = []int{0, 2, 3}
	}
	reduceInto(c, d, dz, dims, ops.ReduceSum, outs[1])
}
