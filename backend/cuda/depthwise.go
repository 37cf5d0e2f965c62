package cuda

import (
	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// The depthwise convolution and its backprops (ops/conv_depthwise.go)
// through cuDNN where it takes them (depthwise_dnn.go), else as the direct
// kernels of kernels/depthwise.go, each walking its elements in the
// layout's memory order (a thread an output element; the filter gradient
// in float64 partial sums); the half types go through float32
// (eager.ThroughFloat32).

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

// dwLayout is the kernels' order for the attributes' layout.
func dwLayout(a ops.Conv2DGemmAttrs) string {
	if a.Format == ops.NCHW {
		return "nchw"
	}
	return "nhwc"
}

// depthwise returns the kernel of op kind (dw_fwd, dw_input): it reads
// the call's inputs a and b, writes outs[0], and decomposes a thread's
// index by the divisors dims gives for the geometry; NCHW convolutions
// the band kernels take go by bands (kernels.DepthwiseBand), and NCHW
// input gradients at other strides and multipliers by bands of dx's rows
// (kernels.DepthwiseRows); rows too wide for a band by bands split into
// column tiles (kernels.DepthwiseTile, DepthwiseRowTiles): only windows
// too large for a tile go direct.
func depthwise(d kernels.DType, kind string, geom func(c *eager.Call) kernels.DepthwiseDims, divisors func(g kernels.DepthwiseDims) []int) eager.Kernel {
	pass := map[string]cu.ConvPass{"dw_fwd": cu.ConvForward, "dw_input": cu.ConvBackwardData}[kind]
	return func(c *eager.Call, outs []*tensor.Tensor) {
		out := outs[0]
		total := out.NumElements()
		if total == 0 {
			return
		}
		g := geom(c)
		if gpu(c).dnnDepthwise(c, pass, c.Attrs.(ops.Conv2DGemmAttrs), g.N, g.C, g.M, c.Inputs[0], c.Inputs[1], out) {
			return
		}
		layout, grad := dwLayout(c.Attrs.(ops.Conv2DGemmAttrs)), kind == "dw_input"
		tile, tiled := kernels.DepthwiseTile(g, d, grad)
		if band := kernels.DepthwiseBand(g, d, grad); layout == "nchw" && (band || tiled) {
			x, f := c.Inputs[0], c.Inputs[1]
			if grad {
				x, f = c.Inputs[1], c.Inputs[0]
			}
			args, p := divisorArg(newArgs().Ptr(ptr(out)).Ptr(ptr(x)).Ptr(ptr(f)), g.M, total), kernels.DepthwisePool(g, grad)
			if band {
				check(c, gpu(c).launchBand("depthwise", kernels.Name(kind, "nchwband", string(d)), p, d, total, args))
			} else {
				check(c, gpu(c).launchTile("depthwise", kernels.Name(kind, "nchwtile", string(d)), p, total, tile, args))
			}
			return
		}
		rowTile, rowTiled := kernels.DepthwiseRowTiles(g, d)
		if rows := kernels.DepthwiseRows(g, d); layout == "nchw" && grad && (rows || rowTiled) { // strides or a multiplier: bands of dx's rows
			dy, f := c.Inputs[1], c.Inputs[0]
			p := kernels.DepthwiseRowsPool(g)
			args := newArgs().Ptr(ptr(out)).Ptr(ptr(dy)).Ptr(ptr(f)).U64(uint64(g.M)).Bytes(kernels.PoolGeometry(p, max(total, dy.NumElements())), 8)
			if rows {
				check(c, gpu(c).launchBands("depthwise", kernels.Name(kind, "nchwrows", string(d)), g.N*g.C, g.H, kernels.DepthwiseRowsPer(g, d), args))
			} else {
				check(c, gpu(c).launchTiles("depthwise", kernels.Name(kind, "nchwrowtiles", string(d)), g.N*g.C, g.H, g.W, rowTile, args))
			}
			return
		}
		args := newArgs().Ptr(ptr(out)).Ptr(ptr(c.Inputs[0])).Ptr(ptr(c.Inputs[1])).U64(uint64(total)).Bytes(kernels.DepthwiseGeometry(g), 8)
		limit := total + g.H + g.W + g.PT + g.PL // bounds every dividend
		for _, v := range divisors(g) {
			divisorArg(args, v, limit)
		}
		name := kernels.Name(kind, layout, string(d))
		check(c, gpu(c).launch("depthwise", name, total, args))
	}
}

// The forward and input kernels: the geometry from the filter, the
// divisors of the element each thread computes.
func depthwiseForward(d kernels.DType) eager.Kernel {
	return depthwise(d, "dw_fwd", func(c *eager.Call) kernels.DepthwiseDims {
		return depthwiseDims(c.Attrs.(ops.Conv2DGemmAttrs), c.Inputs[0].Dim(0), c.Inputs[1].Dim(2), c.Inputs[1].Dim(3))
	}, func(g kernels.DepthwiseDims) []int { return []int{g.C * g.M, g.OH, g.OW, g.M} })
}

func depthwiseInput(d kernels.DType) eager.Kernel {
	return depthwise(d, "dw_input", func(c *eager.Call) kernels.DepthwiseDims {
		return depthwiseDims(c.Attrs.(ops.Conv2DGemmAttrs), c.Inputs[1].Dim(0), c.Inputs[0].Dim(2), c.Inputs[0].Dim(3))
	}, func(g kernels.DepthwiseDims) []int { return []int{g.C, g.H, g.W, g.SH, g.SW} })
}

// dwFilterThreads is about how many threads the NHWC filter gradient's
// first pass aims at, each summing at least dwFilterChunk positions.
const (
	dwFilterThreads = 65536
	dwFilterChunk   = 8
)

// depthwiseFilter sums the filter gradient over the batch's output
// positions in float64 and rounds once. NCHW: two passes,
// dw_filter_nchwband's partial sums a band [images x bands, filter
// elements], then the reduction folding them (rows too wide for a band:
// dw_filter_nchwtile's a tile); windows too large for a tile: dw_filter's
// blocks, one a filter element. NHWC: two passes, dw_filter's
// partial sums [chunks, filter elements] over chunks of the positions,
// then the reduction.
func depthwiseFilter(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		out := outs[0]
		elems := out.NumElements()
		if elems == 0 {
			return
		}
		a := c.Attrs.(ops.Conv2DGemmAttrs)
		g := depthwiseDims(a, c.Inputs[0].Dim(0), out.Dim(2), out.Dim(3))
		if gpu(c).dnnDepthwise(c, cu.ConvBackwardFilter, a, g.N, g.C, g.M, c.Inputs[0], c.Inputs[1], out) {
			return
		}
		layout, span := dwLayout(a), g.N*g.OH*g.OW
		args := func(dst *tensor.Tensor, n, chunk int) *cu.Args {
			args := newArgs().Ptr(ptr(dst)).Ptr(ptr(c.Inputs[0])).Ptr(ptr(c.Inputs[1])).U64(uint64(n)).
				Bytes(kernels.DepthwiseGeometry(g), 8).U64(uint64(span)).U64(uint64(chunk))
			limit := n + span + g.H + g.W + g.PT + g.PL
			for _, v := range []int{elems, g.M, g.C, g.KW, g.OH, g.OW} {
				divisorArg(args, v, limit)
			}
			return args
		}
		name, dev := kernels.Name("dw_filter", layout, string(d)), gpu(c)
		filterTile, filterTiled := kernels.DepthwiseFilterTile(g, d)
		var part *tensor.Tensor
		switch {
		case layout == "nchw" && kernels.DepthwiseFilterBand(g, d):
			p := kernels.DepthwisePool(g, false)
			rows := kernels.FilterBandRows(p, d)
			bands := (p.OH + rows - 1) / rows
			part = temporary(c, tensor.Float64, tensor.Shape{g.N * bands, elems}, "the filter gradient's partial sums")
			bargs := divisorArg(newArgs().Ptr(ptr(part)).Ptr(ptr(c.Inputs[0])).Ptr(ptr(c.Inputs[1])), g.M, g.N*g.C*g.M*bands)
			check(c, dev.launchBandRows("depthwise", kernels.Name("dw_filter", "nchwband", string(d)), p, g.N*g.C*g.M*g.OH*g.OW, rows, bargs))
		case layout == "nchw" && filterTiled:
			p := kernels.DepthwisePool(g, false)
			bands := filterTile.Bands(p.OH) * filterTile.Tiles(p.OW) // a tile a row of part
			part = temporary(c, tensor.Float64, tensor.Shape{g.N * bands, elems}, "the filter gradient's partial sums")
			bargs := divisorArg(newArgs().Ptr(ptr(part)).Ptr(ptr(c.Inputs[0])).Ptr(ptr(c.Inputs[1])), g.M, g.N*g.C*g.M*bands)
			check(c, dev.launchTile("depthwise", kernels.Name("dw_filter", "nchwtile", string(d)), p, g.N*g.C*g.M*g.OH*g.OW, filterTile, bargs))
		case layout == "nchw":
			blocks := min(elems, max(dev.info.SMs, 1)*32)
			check(c, dev.launchBlocks("depthwise", name, blocks, kernels.ReduceBlock, args(out, elems, 0)))
			return
		default:
			chunks := max(1, min(dwFilterThreads/elems, (span+dwFilterChunk-1)/dwFilterChunk))
			chunk := (span + chunks - 1) / chunks
			if chunk > 0 {
				chunks = (span + chunk - 1) / chunk
			}
			part = temporary(c, tensor.Float64, tensor.Shape{chunks, elems}, "the filter gradient's partial sums")
			check(c, dev.launch("depthwise", name, chunks*elems, args(part, chunks*elems, chunk)))
		}
		defer part.Release()
		if d == kernels.F64 {
			reduceInto(c, kernels.F64, part, []int{0}, ops.ReduceSum, out)
			return
		}
		sum := temporary(c, tensor.Float64, tensor.Shape{elems}, "the filter gradient in float64")
		defer sum.Release()
		reduceInto(c, kernels.F64, part, []int{0}, ops.ReduceSum, sum)
		check(c, dev.castInto(out, sum))
	}
}
