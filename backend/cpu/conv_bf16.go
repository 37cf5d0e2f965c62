package cpu

import (
	"unsafe"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// bfloat16 convolutions (Conv2DGemm and FusedConv2D forward, NHWC) on
// VDPBF16PS where the CPU has AVX512_BF16: each image's patches gathered
// in bfloat16 (im2col, or im2row for one channel), the product by
// gemmBF16 against the [taps O] filter as it is stored, the bias and
// Relu applied to each float32 tile, rounded once. NCHW: Y_n [O OH*OW] =
// F [O taps] · P_n [taps OH*OW], P_n im2row's, F laid out once a call in
// its tap order. Their gradients are conv_bf16_grad.go's.

// convElem is what the patch gatherers (im2col, im2row) move: the float
// dtypes and bfloat16.
type convElem interface {
	tensor.Float | tensor.BF16
}

// asBF16 views float32 scratch as twice as many bfloat16 slots.
func asBF16(s []float32) []tensor.BF16 {
	return unsafe.Slice((*tensor.BF16)(unsafe.Pointer(unsafe.SliceData(s))), 2*len(s))
}

func conv2DBF16Kernel(c *eager.Call, outs []*tensor.Tensor) {
	convForwardBF16(c, c.Attrs.(ops.Conv2DGemmAttrs), outs, nil, false)
}

func fusedConv2DBF16Kernel(c *eager.Call, outs []*tensor.Tensor) {
	a := c.Attrs.(ops.FusedConv2DAttrs)
	convForwardBF16(c, a.Conv, outs, data[tensor.BF16](c.Inputs[2]), a.Activation == ops.ReluActivation)
}

// convForwardBF16 convolves the call's x and filter into outs[0], adding
// bias (nil: none) and applying Relu where relu is set.
func convForwardBF16(c *eager.Call, a ops.Conv2DGemmAttrs, outs []*tensor.Tensor, bias []tensor.BF16, relu bool) {
	x, f, y := c.Inputs[0], c.Inputs[1], outs[0]
	g := geomOf(a, x.Dim(0), a.Channels(x), f.Dim(3))
	xv, fv, yv := data[tensor.BF16](x), data[tensor.BF16](f), data[tensor.BF16](y)
	ohw, img, taps := g.oh*g.ow, g.h*g.w*g.c, g.taps()
	var b32 []float32
	if bias != nil {
		b32 = make([]float32, g.o)
		for j, b := range bias {
			b32[j] = b.Float32()
		}
	}
	if g.format != ops.NHWC {
		fo := filterRowsBF16(fv, g)
		perImage(c, g, (ohw*taps+1)/2, nil, func(n int, s []float32, par bool) {
			p := asBF16(s)[:ohw*taps]
			im2row(p, xv[n*img:], g) // P_n [taps OH*OW]
			yn := yv[n*g.o*ohw : (n+1)*g.o*ohw]
			var dev *device.CPUDevice
			if par {
				dev = deviceOf(c)
			}
			gemmBF16(dev, g.o, ohw, taps, fo, false, p, false, func(i0, j0, rows, cols int, tile []float32) {
				for r := range rows {
					sums := tile[r*bf16NR : r*bf16NR+cols]
					if bias != nil {
						sadds(&sums[0], &sums[0], b32[i0+r], cols)
					}
					if relu {
						reluLoop(sums, sums)
					}
				}
				storeBF16(yn, ohw, i0, j0, rows, cols, tile)
			})
		}, nil)
		return
	}
	filter := packBF16(deviceOf(c), taps, g.o, fv, false) // [taps O], once for every image
	defer filter.free()
	perImage(c, g, (ohw*taps+1)/2, nil, func(n int, s []float32, par bool) {
		p := asBF16(s)[:ohw*taps]
		yn := yv[n*ohw*g.o : (n+1)*ohw*g.o]
		var dev *device.CPUDevice
		if par {
			dev = deviceOf(c)
		}
		store := func(i0, j0, rows, cols int, tile []float32) {
			var b []float32
			if bias != nil {
				b = b32[j0:]
			}
			biasRelu(tile, rows, cols, b, relu)
			storeBF16(yn, g.o, i0, j0, rows, cols, tile)
		}
		if g.c == 1 {
			im2row(p, xv[n*img:], g) // [taps, ohw]
			gemmBF16Packed(dev, ohw, p, true, filter, store)
			return
		}
		im2col(p, xv[n*img:], g) // [ohw, taps]
		gemmBF16Packed(dev, ohw, p, false, filter, store)
	}, nil)
}

// filterRowsBF16 lays an HWIO filter out as [O taps], each row in
// im2row's tap order (c, kh, kw): NCHW's left-hand side.
func filterRowsBF16(f []tensor.BF16, g convGeom) []tensor.BF16 {
	tm := make([]tensor.BF16, g.taps()*g.o)
	tapMajor(tm, f, g) // [taps O]
	rows := make([]tensor.BF16, len(tm))
	taps := g.taps()
	for t := range taps {
		for o, v := range tm[t*g.o : (t+1)*g.o] {
			rows[o*taps+t] = v
		}
	}
	return rows
}
