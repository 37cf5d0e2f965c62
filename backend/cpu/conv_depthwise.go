package cpu

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernels of the depthwise convolution and its backprops
// (ops/conv_depthwise.go), computed directly: every output from its
// KH x KW taps, an input channel c and filter [KH, KW, C, M] giving output
// channels c·M+m. The forward and the input's gradient split over rows
// (image, row) and the filter's gradient over channels, so no two shards
// write one element.

// dwStrides are a batch's element strides along images, channels, rows
// and columns, in a's layout.
type dwStrides struct{ n, c, h, w int }

func dwStridesOf(a ops.Conv2DGemmAttrs, ch, h, w int) dwStrides {
	if a.Format == ops.NCHW {
		return dwStrides{n: ch * h * w, c: h * w, h: w, w: 1}
	}
	return dwStrides{n: h * w * ch, c: 1, h: w * ch, w: ch}
}

// dwGeom is a depthwise convolution's sizes.
type dwGeom struct {
	a       ops.Conv2DGemmAttrs
	n, c, m int
	oh, ow  int
	xs, ys  dwStrides
}

func dwGeomOf(a ops.Conv2DGemmAttrs, n, c, m int) dwGeom {
	oh, ow := a.OutSize()
	return dwGeom{a: a, n: n, c: c, m: m, oh: oh, ow: ow, xs: dwStridesOf(a, c, a.H, a.W), ys: dwStridesOf(a, c*m, oh, ow)}
}

func depthwiseKernel[T float32 | float64](c *eager.Call, outs []*tensor.Tensor) {
	x, f := c.Inputs[0], c.Inputs[1]
	g := dwGeomOf(c.Attrs.(ops.Conv2DGemmAttrs), x.Dim(0), f.Dim(2), f.Dim(3))
	xv, fv, yv := data[T](x), data[T](f), data[T](outs[0])
	a := g.a
	if x32, ok := any(xv).([]float32); ok && dwVec(g) {
		depthwiseVec(c, g, x32, any(fv).([]float32), any(yv).([]float32))
		return
	}
	if a.Format == ops.NHWC {
		depthwiseNHWC(c, g, xv, fv, yv)
		return
	}
	deviceOf(c).Parallel(g.n*g.oh, float64(g.ow*g.c*g.m*a.KH*a.KW), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			n, oh := r/g.oh, r%g.oh
			for ow := range g.ow {
				for ch := range g.c {
					xb := n*g.xs.n + ch*g.xs.c
					for m := range g.m {
						var acc T
						for kh := range a.KH {
							ih := oh*a.StrideH - a.PadTop + kh*a.DilationH
							if ih < 0 || ih >= a.H {
								continue
							}
							for kw := range a.KW {
								iw := ow*a.StrideW - a.PadLeft + kw*a.DilationW
								if iw < 0 || iw >= a.W {
									continue
								}
								acc += xv[xb+ih*g.xs.h+iw*g.xs.w] * fv[((kh*a.KW+kw)*g.c+ch)*g.m+m]
							}
						}
						yv[n*g.ys.n+(ch*g.m+m)*g.ys.c+oh*g.ys.h+ow*g.ys.w] = acc
					}
				}
			}
		}
	})
}

// taps calls fn for each tap (kh, kw) of output (oh, ow) that falls
// inside the input, at input (ih, iw), in order.
func taps(a ops.Conv2DGemmAttrs, oh, ow int, fn func(kh, kw, ih, iw int)) {
	for kh := range a.KH {
		ih := oh*a.StrideH - a.PadTop + kh*a.DilationH
		if ih < 0 || ih >= a.H {
			continue
		}
		for kw := range a.KW {
			if iw := ow*a.StrideW - a.PadLeft + kw*a.DilationW; iw >= 0 && iw < a.W {
				fn(kh, kw, ih, iw)
			}
		}
	}
}

// depthwiseNHWC is the forward over NHWC, whose channels are contiguous:
// for each output position, each tap in order adds a row of C·M products
// (input row times filter row) into the output's row, so every output
// sums its taps in the same order as depthwiseKernel's.
func depthwiseNHWC[T float32 | float64](c *eager.Call, g dwGeom, xv, fv, yv []T) {
	a, cm := g.a, g.c*g.m
	deviceOf(c).Parallel(g.n*g.oh, float64(g.ow*cm*a.KH*a.KW), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			n, oh := r/g.oh, r%g.oh
			for ow := range g.ow {
				y := yv[n*g.ys.n+oh*g.ys.h+ow*g.ys.w:][:cm]
				clear(y)
				taps(a, oh, ow, func(kh, kw, ih, iw int) {
					x := xv[n*g.xs.n+ih*g.xs.h+iw*g.xs.w:][:g.c]
					f := fv[(kh*a.KW+kw)*cm:][:cm]
					if g.m == 1 {
						for ch, v := range x {
							y[ch] += v * f[ch]
						}
						return
					}
					for ch, v := range x {
						for m := range g.m {
							y[ch*g.m+m] += v * f[ch*g.m+m]
						}
					}
				})
			}
		}
	})
}

func depthwiseInputKernel[T float32 | float64](c *eager.Call, outs []*tensor.Tensor) {
	f, dy := c.Inputs[0], c.Inputs[1]
	g := dwGeomOf(c.Attrs.(ops.Conv2DGemmAttrs), dy.Dim(0), f.Dim(2), f.Dim(3))
	fv, dyv, dxv := data[T](f), data[T](dy), data[T](outs[0])
	a := g.a
	if f32, ok := any(fv).([]float32); ok && dwVec(g) {
		depthwiseInputVec(c, g, f32, any(dyv).([]float32), any(dxv).([]float32))
		return
	}
	deviceOf(c).Parallel(g.n*a.H, float64(a.W*g.c*g.m*a.KH*a.KW), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			n, ih := r/a.H, r%a.H
			for iw := range a.W {
				for ch := range g.c {
					var acc T
					for kh := range a.KH {
						th := ih + a.PadTop - kh*a.DilationH // oh·StrideH
						if th < 0 || th%a.StrideH != 0 || th/a.StrideH >= g.oh {
							continue
						}
						oh := th / a.StrideH
						for kw := range a.KW {
							tw := iw + a.PadLeft - kw*a.DilationW
							if tw < 0 || tw%a.StrideW != 0 || tw/a.StrideW >= g.ow {
								continue
							}
							yb := n*g.ys.n + oh*g.ys.h + tw/a.StrideW*g.ys.w
							for m := range g.m {
								acc += dyv[yb+(ch*g.m+m)*g.ys.c] * fv[((kh*a.KW+kw)*g.c+ch)*g.m+m]
							}
						}
					}
					dxv[n*g.xs.n+ch*g.xs.c+ih*g.xs.h+iw*g.xs.w] = acc
				}
			}
		}
	})
}

func depthwiseFilterKernel[T float32 | float64](c *eager.Call, outs []*tensor.Tensor) {
	x, dy := c.Inputs[0], c.Inputs[1]
	a := c.Attrs.(ops.Conv2DGemmAttrs)
	ch := a.Channels(x)
	g := dwGeomOf(a, x.Dim(0), ch, a.Channels(dy)/max(ch, 1))
	xv, dyv, dfv := data[T](x), data[T](dy), data[T](outs[0])
	if x32, ok := any(xv).([]float32); ok && dwVec(g) {
		depthwiseFilterVec(c, g, x32, any(dyv).([]float32), any(dfv).([]float32))
		return
	}
	if a.Format == ops.NHWC {
		depthwiseFilterNHWC(c, g, xv, dyv, dfv)
		return
	}
	deviceOf(c).Parallel(g.c, float64(g.n*g.oh*g.ow*g.m*a.KH*a.KW), func(lo, hi int) {
		for cc := lo; cc < hi; cc++ {
			for kh := range a.KH {
				for kw := range a.KW {
					for m := range g.m {
						acc := 0.0 // in float64: a long sum over the batch and positions
						for n := range g.n {
							for oh := range g.oh {
								ih := oh*a.StrideH - a.PadTop + kh*a.DilationH
								if ih < 0 || ih >= a.H {
									continue
								}
								for ow := range g.ow {
									iw := ow*a.StrideW - a.PadLeft + kw*a.DilationW
									if iw < 0 || iw >= a.W {
										continue
									}
									acc += float64(xv[n*g.xs.n+cc*g.xs.c+ih*g.xs.h+iw*g.xs.w]) *
										float64(dyv[n*g.ys.n+(cc*g.m+m)*g.ys.c+oh*g.ys.h+ow*g.ys.w])
								}
							}
						}
						dfv[((kh*a.KW+kw)*g.c+cc)*g.m+m] = T(acc)
					}
				}
			}
		}
	})
}

// depthwiseFilterNHWC is the filter's gradient over NHWC: each image adds
// its products, a row of C·M a tap and position, into a float64 sum of
// its own; the images' sums are then added in order (a fixed order,
// whatever the shards).
func depthwiseFilterNHWC[T float32 | float64](c *eager.Call, g dwGeom, xv, dyv, dfv []T) {
	a, cm := g.a, g.c*g.m
	size := a.KH * a.KW * cm
	sums := make([]float64, g.n*size)
	deviceOf(c).Parallel(g.n, float64(g.oh*g.ow*a.KH*a.KW*cm), func(lo, hi int) {
		for n := lo; n < hi; n++ {
			sum := sums[n*size:][:size]
			for oh := range g.oh {
				for ow := range g.ow {
					dy := dyv[n*g.ys.n+oh*g.ys.h+ow*g.ys.w:][:cm]
					taps(a, oh, ow, func(kh, kw, ih, iw int) {
						x := xv[n*g.xs.n+ih*g.xs.h+iw*g.xs.w:][:g.c]
						s := sum[(kh*a.KW+kw)*cm:][:cm]
						for ch, v := range x {
							for m := range g.m {
								s[ch*g.m+m] += float64(v) * float64(dy[ch*g.m+m])
							}
						}
					})
				}
			}
		}
	})
	for i := range size {
		acc := 0.0
		for n := range g.n {
			acc += sums[n*size+i]
		}
		dfv[i] = T(acc)
	}
}

func init() {
	kernels{f32: depthwiseKernel[float32], f64: depthwiseKernel[float64]}.register("DepthwiseConv2DNative")
	kernels{f32: depthwiseInputKernel[float32], f64: depthwiseInputKernel[float64]}.register("DepthwiseConv2DNativeBackpropInput")
	kernels{f32: depthwiseFilterKernel[float32], f64: depthwiseFilterKernel[float64]}.register("DepthwiseConv2DNativeBackpropFilter")
}
