package cpu

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// fusedConv2DBackpropKernel is FusedConv2DBackprop (ops/conv_fused_grad.go)
// image by image: dz_n (dy_n masked where y_n is 0, for Relu; dy_n itself
// otherwise) into scratch that stays in cache while the bias gradient sums
// it, the filter gradient's GEMM reads it and the input gradient's GEMM
// (when asked) reads it, each goroutine summing its images' filter and
// bias gradients into its own blocks, added at the end. The separate ops
// wrote dz in full and read it three times more; on the Fashion-MNIST
// CNN's [128 28 28 32] layer that traffic was about 50 MB a step.
func fusedConv2DBackpropKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	a := c.Attrs.(ops.FusedConv2DBackpropAttrs)
	x, f, y, dy := c.Inputs[0], c.Inputs[1], c.Inputs[2], c.Inputs[3]
	g := geomOf(a.Conv, x.Dim(0), a.Conv.Channels(x), f.Dim(3))
	var dx []T
	if a.InputGrad {
		dx, outs = data[T](outs[0]), outs[1:]
	}
	df, db := data[T](outs[0]), data[T](outs[1])
	xv, fv, yv, dyv := data[T](x), data[T](f), data[T](y), data[T](dy)
	relu := a.Activation == ops.ReluActivation
	nhwc := g.format == ops.NHWC
	ohw, taps, img := g.oh*g.ow, g.taps(), g.c*g.h*g.w
	out := g.o * ohw

	// The filter in the form each image's input gradient reads: Fᵀ (NHWC)
	// or tap-major (NCHW).
	var fr []T
	if dx != nil {
		var buf *[]byte
		if nhwc {
			fr, buf = nhwcFilterT(g, fv)
		} else {
			fr, buf = gemmScratch[T](taps * g.o)
			tapMajor(fr, fv, g)
		}
		defer putGemmScratch(buf)
	}
	orient := nhwcFilterDirect[T](g)
	if !nhwc {
		orient = nchwFilterTurned[T](g)
	}

	// Scratch per goroutine: [dz_n (Relu only) | P_n]; its sums: [filter
	// block | bias block].
	dzLen := 0
	if relu {
		dzLen = out
	}
	sum := sumReducer[T]().row
	total, buf := perImageSums(c, g, dzLen+taps*ohw, taps*g.o+g.o, func(n int, s, acc []T, par bool) {
		dzn := dyv[n*out : (n+1)*out]
		if relu {
			reluGradLoop(s[:out], yv[n*out:(n+1)*out], dzn)
			dzn = s[:out]
		}
		p, accF, accB := s[dzLen:], acc[:taps*g.o], acc[taps*g.o:]
		if nhwc {
			for r := range ohw {
				addInto(accB, dzn[r*g.o:(r+1)*g.o])
			}
			nhwcFilterImage(c, par, g, xv[n*img:], dzn, p, accF, orient)
			if dx != nil {
				nhwcInputImage(c, par, g, fr, dzn, p, dx[n*img:(n+1)*img])
			}
			return
		}
		for o := range g.o {
			accB[o] = sum(accB[o], dzn[o*ohw:(o+1)*ohw])
		}
		nchwFilterImage(c, par, g, xv[n*img:], dzn, p, accF, orient)
		if dx != nil {
			nchwInputImage(c, par, g, fr, dzn, p, dx[n*img:(n+1)*img])
		}
	})
	defer putGemmScratch(buf)
	if nhwc {
		nhwcFilterResult(df, total[:taps*g.o], g, orient)
	} else {
		nchwFilterResult(df, total[:taps*g.o], g, orient)
	}
	copy(db, total[taps*g.o:])
}
