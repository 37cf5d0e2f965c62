package cpu

import (
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// The gradient of a pooling's window sums (average pooling's), as package
// ops asks for it: a window sum over dy dilated by the pooling's strides
// (ops' transposed window: the strides as a base dilation, a stride of 1,
// a low padding of K-1-P for the pooling's padding P in [0, K), zero for
// init, ReduceWindowAttrs.IdentityInit). Where the pooling is 2-D over
// NHWC or NCHW, each element of the result sums dy over the pooling's
// windows that hold it, found by two divisions a row and a column, as
// loops over channel vectors (NHWC) or plane rows (NCHW) instead of the
// general geometry's walk over the dilation's holes.

// pooling is a 2-D pooling: images of c channels, h x w (the operand),
// its windows (oh x ow), their size, strides and low padding; nhwc for
// channels last, else NCHW.
type pooling struct {
	images, c, h, w, oh, ow int
	kh, kw, sh, sw, ph, pw  int
	nhwc                    bool
}

// poolAxes finds a 4-D window's dimensions of height, width and channels:
// NHWC where the batch and the channels are plain (plain(d): the window
// leaves dimension d alone), else NCHW where the batch and dimension 1
// are.
func poolAxes(plain func(d int) bool) (hd, wd, cd int, nhwc, ok bool) {
	switch {
	case plain(0) && plain(3):
		return 1, 2, 3, true, true
	case plain(0) && plain(1):
		return 2, 3, 1, false, true
	}
	return 0, 0, 0, false, false
}

// spreadOf recognises a's window over dy (whose sums are out) as the
// gradient of a 2-D pooling's sums, and returns that pooling.
func spreadOf(dy, out tensor.Shape, a ops.ReduceWindowAttrs) (pooling, bool) {
	w := a.Window
	if a.Kind != ops.ReduceSum || !a.IdentityInit || len(dy) != 4 || len(out) != 4 {
		return pooling{}, false
	}
	hd, wd, cd, nhwc, ok := poolAxes(func(d int) bool {
		return w.Dims[d] == 1 && w.Strides[d] == 1 && w.BaseDilation[d] == 1 && w.WindowDilation[d] == 1 && w.Padding[d] == [2]int{}
	})
	if !ok {
		return pooling{}, false
	}
	for _, d := range []int{hd, wd} {
		if lo := w.Padding[d][0]; w.Strides[d] != 1 || w.WindowDilation[d] != 1 || lo < 0 || lo >= w.Dims[d] {
			return pooling{}, false
		}
	}
	return pooling{images: out[0], c: out[cd], h: out[hd], w: out[wd], oh: dy[hd], ow: dy[wd],
		kh: w.Dims[hd], kw: w.Dims[wd], sh: w.BaseDilation[hd], sw: w.BaseDilation[wd],
		ph: w.Dims[hd] - 1 - w.Padding[hd][0], pw: w.Dims[wd] - 1 - w.Padding[wd][0], nhwc: nhwc}, true
}

// rows is the rows of the operand's planes (images x h in NHWC, images x
// c x h in NCHW): the unit the spread loops share out.
func (p pooling) rows() int {
	if p.nhwc {
		return p.images * p.h
	}
	return p.images * p.c * p.h
}

// cover is the windows [lo, hi) of a pooling along one dimension (k
// taps, stride s, low padding pad, n windows) that hold position i.
func cover(i, k, s, pad, n int) (lo, hi int) {
	if t := i + pad - k + 1; t > 0 {
		lo = (t + s - 1) / s
	}
	return lo, min((i+pad)/s+1, n)
}

// spreadSums writes out, the sums of dy over the windows of p that hold
// each element, plus init for each of a result window's taps on no
// window (none where init is zero, the identity ops gives).
func spreadSums[T tensor.Num](dev *device.CPUDevice, p pooling, dy, out []T, init T) {
	dev.Parallel(p.rows(), float64(p.w*max(p.c, 1)*4), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			img, ih := r/p.h, r%p.h // img is an image (NHWC) or a plane (NCHW)
			ohLo, ohHi := cover(ih, p.kh, p.sh, p.ph, p.oh)
			for iw := range p.w {
				owLo, owHi := cover(iw, p.kw, p.sw, p.pw, p.ow)
				missing := p.kh*p.kw - max(ohHi-ohLo, 0)*max(owHi-owLo, 0)
				if p.nhwc {
					o := out[(r*p.w+iw)*p.c:][:p.c]
					for k := range o {
						o[k] = init
					}
					for a := ohLo; a < ohHi; a++ {
						for b := owLo; b < owHi; b++ {
							for k, v := range dy[((img*p.oh+a)*p.ow+b)*p.c:][:p.c] {
								o[k] += v
							}
						}
					}
					if init != 0 {
						for range missing {
							for k := range o {
								o[k] += init
							}
						}
					}
					continue
				}
				acc := init
				for a := ohLo; a < ohHi; a++ {
					for _, v := range dy[(img*p.oh+a)*p.ow:][owLo:max(owHi, owLo)] {
						acc += v
					}
				}
				if init != 0 {
					for range missing {
						acc += init
					}
				}
				out[r*p.w+iw] = acc
			}
		}
	})
}
