package cuda

import (
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// The depthwise convolution and its backprops (ops/conv_depthwise.go) as
// the direct kernels of kernels/depthwise.go, a thread an element; the
// half types go through float32 (eager.ThroughFloat32).

func init() {
	for _, d := range kernels.Floats {
		eager.RegisterKernel("DepthwiseConv2DNative", device.GPU, tensorType(d), depthwiseForward(d))
		eager.RegisterKernel("DepthwiseConv2DNativeBackpropInput", device.GPU, tensorType(d), depthwiseInput(d))
		eager.RegisterKernel("DepthwiseConv2DNativeBackpropFilter", device.GPU, tensorType(d), depthwiseFilter(d))
	}
}

// depthwiseDims describes the convolution of a over n images of c
// channels with multiplier m.
func depthwiseDims(a ops.Conv2DGemmAttrs, n, c, m int) kernels.DepthwiseDims {
	oh, ow := a.OutSize()
	strides := func(ch, h, w int) [4]int {
		if a.Format == ops.NCHW {
			return [4]int{ch * h * w, h * w, w, 1}
		}
		return [4]int{h * w * ch, 1, w * ch, ch}
	}
	return kernels.DepthwiseDims{N: n, C: c, M: m, H: a.H, W: a.W, OH: oh, OW: ow, KH: a.KH, KW: a.KW,
		SH: a.StrideH, SW: a.StrideW, DH: a.DilationH, DW: a.DilationW, PT: a.PadTop, PL: a.PadLeft,
		X: strides(c, a.H, a.W), Y: strides(c*m, oh, ow)}
}

// depthwise returns the kernel of op kind (dw_fwd, dw_input, dw_filter):
// it reads the call's inputs a and b, writes outs[0], and decomposes a
// thread's index by the divisors dims gives for the geometry.
func depthwise(d kernels.DType, kind string, geom func(c *eager.Call, out *tensor.Tensor) kernels.DepthwiseDims, divisors func(g kernels.DepthwiseDims) []int) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		out := outs[0]
		total := out.NumElements()
		if total == 0 {
			return
		}
		g := geom(c, out)
		args := newArgs().Ptr(ptr(out)).Ptr(ptr(c.Inputs[0])).Ptr(ptr(c.Inputs[1])).U64(uint64(total)).Bytes(kernels.DepthwiseGeometry(g), 8)
		for _, v := range divisors(g) {
			divisorArg(args, v, total)
		}
		check(c, gpu(c).launch("depthwise", kernels.Name(kind, string(d)), total, args))
	}
}

// The three kernels: the geometry from the filter (forward, input) or the
// output (filter), the divisors of the element each thread computes.
func depthwiseForward(d kernels.DType) eager.Kernel {
	return depthwise(d, "dw_fwd", func(c *eager.Call, _ *tensor.Tensor) kernels.DepthwiseDims {
		return depthwiseDims(c.Attrs.(ops.Conv2DGemmAttrs), c.Inputs[0].Dim(0), c.Inputs[1].Dim(2), c.Inputs[1].Dim(3))
	}, func(g kernels.DepthwiseDims) []int { return []int{g.OW, g.OH, g.C * g.M, g.M} })
}

func depthwiseInput(d kernels.DType) eager.Kernel {
	return depthwise(d, "dw_input", func(c *eager.Call, _ *tensor.Tensor) kernels.DepthwiseDims {
		return depthwiseDims(c.Attrs.(ops.Conv2DGemmAttrs), c.Inputs[1].Dim(0), c.Inputs[0].Dim(2), c.Inputs[0].Dim(3))
	}, func(g kernels.DepthwiseDims) []int { return []int{g.W, g.H, g.C} })
}

func depthwiseFilter(d kernels.DType) eager.Kernel {
	return depthwise(d, "dw_filter", func(c *eager.Call, out *tensor.Tensor) kernels.DepthwiseDims {
		return depthwiseDims(c.Attrs.(ops.Conv2DGemmAttrs), c.Inputs[0].Dim(0), out.Dim(2), out.Dim(3))
	}, func(g kernels.DepthwiseDims) []int { return []int{g.M, g.C, g.KW} })
}
