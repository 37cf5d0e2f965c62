package cpu

import (
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// fusedConv2DBackpropBF16Kernel is FusedConv2DBackprop of bfloat16
// operands, NHWC, on VDPBF16PS, image by image as the float32 kernel
// (conv_fused_grad.go): dz_n (dy_n masked where y_n is not positive, for
// Relu) made in float32 while the bias gradient sums it, then rounded to
// bfloat16 (exactly: its values are dy's) for the two products. The
// filter gradient P_nᵀ·dz_n [taps O] is summed in float32 over the
// images, P_n the image's patches in bfloat16 (im2col; im2row with one
// channel, whose rows are P_nᵀ's); the input gradient dz_n·Fᵀ [OH*OW
// taps] is added back by col2im in float32. Each gradient is rounded to
// bfloat16 once. NCHW, where dz_n is [O OH*OW] and P_n im2row's [taps
// OH*OW], computes the filter gradient P_n·dz_nᵀ in im2row's tap order
// (filterOf lays it out as HWIO at the end) and the input gradient
// F·dz_n [taps OH*OW], F in that order, added back by row2im.
func fusedConv2DBackpropBF16Kernel(c *eager.Call, outs []*tensor.Tensor) {
	a := c.Attrs.(ops.FusedConv2DBackpropAttrs)
	x, f, y, dy := c.Inputs[0], c.Inputs[1], c.Inputs[2], c.Inputs[3]
	g := geomOf(a.Conv, x.Dim(0), a.Conv.Channels(x), f.Dim(3))
	var dx []tensor.BF16
	if a.InputGrad {
		dx, outs = data[tensor.BF16](outs[0]), outs[1:]
	}
	df, db := data[tensor.BF16](outs[0]), data[tensor.BF16](outs[1])
	xv, fv, yv, dyv := data[tensor.BF16](x), data[tensor.BF16](f), data[tensor.BF16](y), data[tensor.BF16](dy)
	relu := a.Activation == ops.ReluActivation
	ohw, taps, img := g.oh*g.ow, g.taps(), g.c*g.h*g.w
	out := g.o * ohw

	nchw := g.format != ops.NHWC
	if nchw && g.c > 1 {
		fm := make([]tensor.BF16, taps*g.o)
		tapMajor(fm, fv, g) // im2row's tap order
		fv = fm
	}
	// Fᵀ as the input gradient's right-hand side [O taps], packed once
	// (NHWC).
	var ft bf16Panels
	if dx != nil && !nchw {
		ft = packBF16(deviceOf(c), g.o, taps, fv, true)
		defer ft.free()
	}

	// Scratch per goroutine, in float32 slots: dz_n in float32 (and y_n's
	// for Relu), dz_n in bfloat16, P_n in bfloat16, and for the input
	// gradient P_n's float32 sums and the image's gradient in float32.
	yLen, halfOut, halfP := 0, (out+1)/2, (ohw*taps+1)/2
	if relu {
		yLen = out
	}
	dxLen := 0
	if dx != nil {
		dxLen = ohw*taps + img
	}
	size := out + yLen + halfOut + halfP + dxLen
	total, buf := perImageSums(c, g, size, taps*g.o+g.o, func(n int, s, acc []float32, par bool) {
		dz32, y32 := s[:out], s[out:out+yLen]
		rest := s[out+yLen:]
		dz := asBF16(rest[:halfOut])[:out]
		p := asBF16(rest[halfOut : halfOut+halfP])[:ohw*taps]
		rest = rest[halfOut+halfP:]
		var dev *device.CPUDevice
		if par {
			dev = deviceOf(c)
		}

		dyn := dyv[n*out : (n+1)*out]
		widenHalves(dz32, dyn)
		if relu {
			widenHalves(y32, yv[n*out:(n+1)*out])
			reluGradLoop(dz32, y32, dz32)
			roundBF16(dz, dz32) // exact: each value is dy's or zero
		} else {
			dz = dyn
		}
		accF, accB := acc[:taps*g.o], acc[taps*g.o:]
		if nchw {
			sum := sumReducer[float32]().row
			for o := range g.o {
				accB[o] = sum(accB[o], dz32[o*ohw:(o+1)*ohw])
			}
		} else {
			for r := range ohw {
				addInto(accB, dz32[r*g.o:(r+1)*g.o])
			}
		}

		// The filter gradient, [taps O]: the HWIO filter's layout.
		addTiles := func(i0, j0, rows, cols int, tile []float32) {
			for r := range rows {
				addInto(accF[(i0+r)*g.o+j0:(i0+r)*g.o+j0+cols], tile[r*bf16NR:r*bf16NR+cols])
			}
		}
		switch {
		case nchw:
			im2row(p, xv[n*img:], g) // P_n [taps OH*OW]; dz_n is [O OH*OW]
			gemmBF16(dev, taps, g.o, ohw, p, false, dz, true, addTiles)
		case g.c == 1:
			im2row(p, xv[n*img:], g) // P_nᵀ [taps OH*OW]
			gemmBF16(dev, taps, g.o, ohw, p, false, dz, false, addTiles)
		default:
			im2col(p, xv[n*img:], g) // P_n [OH*OW taps]
			gemmBF16(dev, taps, g.o, ohw, p, true, dz, false, addTiles)
		}
		if dx == nil {
			return
		}

		// The input gradient: dz_n·Fᵀ [OH*OW taps], added back by col2im
		// (NCHW: F·dz_n [taps OH*OW], by row2im).
		p32, dx32 := rest[:ohw*taps], rest[ohw*taps:ohw*taps+img]
		clear(dx32)
		if nchw {
			gemmBF16(dev, taps, ohw, g.o, fv, false, dz, false, func(i0, j0, rows, cols int, tile []float32) {
				for r := range rows {
					copy(p32[(i0+r)*ohw+j0:(i0+r)*ohw+j0+cols], tile[r*bf16NR:r*bf16NR+cols])
				}
			})
			row2im(dx32, p32, g)
		} else {
			gemmBF16Packed(dev, ohw, dz, false, ft, func(i0, j0, rows, cols int, tile []float32) {
				for r := range rows {
					copy(p32[(i0+r)*taps+j0:(i0+r)*taps+j0+cols], tile[r*bf16NR:r*bf16NR+cols])
				}
			})
			col2im(dx32, p32, g)
		}
		roundBF16(dx[n*img:(n+1)*img], dx32)
	})
	defer putGemmScratch(buf)
	if nchw && g.c > 1 {
		hwio := make([]float32, taps*g.o)
		filterOf(hwio, total[:taps*g.o], g)
		copy(total, hwio)
	}
	roundBF16(df, total[:taps*g.o])
	roundBF16(db, total[taps*g.o:])
}
