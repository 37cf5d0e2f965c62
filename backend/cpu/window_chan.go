package cpu

import (
	"slices"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Windows that move over the two dimensions before the last, leaving the
// last (channels, contiguous) alone, with no dilation: NHWC pooling. Each
// window is then kh x kw vectors of c channels, and ReduceWindow and
// SelectAndScatter run it as loops over those vectors instead of through
// the general geometry (a callback per element). ReduceWindow takes them
// padded too (SAME pooling: a border window's taps cut to the image).

// chanWindow is such a window over images of h x w x c elements, padded
// by pt rows above and pl columns to the left (padded: any padding).
type chanWindow struct {
	images, h, w, c int
	kh, kw, sh, sw  int
	oh, ow          int
	pt, pl          int
	padded          bool
}

// chanOf returns the channel form of a normalized window over shape, and
// whether the window has one: no padding (SelectAndScatter's).
func chanOf(shape tensor.Shape, win ops.Window) (chanWindow, bool) {
	p, ok := paddedChanOf(shape, win)
	return p, ok && !p.padded
}

// paddedChanOf is chanOf of a window that may pad the rows and columns
// (by nothing negative): ReduceWindow's, whose padding taps count as init.
func paddedChanOf(shape tensor.Shape, win ops.Window) (chanWindow, bool) {
	r := shape.Rank()
	if r < 3 {
		return chanWindow{}, false
	}
	for d := 0; d < r; d++ {
		if win.BaseDilation[d] != 1 || win.WindowDilation[d] != 1 || win.Padding[d][0] < 0 || win.Padding[d][1] < 0 {
			return chanWindow{}, false
		}
		if (d < r-3 || d == r-1) && (win.Dims[d] != 1 || win.Strides[d] != 1 || win.Padding[d] != [2]int{}) {
			return chanWindow{}, false
		}
	}
	pv, pw := win.Padding[r-3], win.Padding[r-2]
	p := chanWindow{images: shape[:r-3].NumElements(), h: shape[r-3], w: shape[r-2], c: shape[r-1],
		kh: win.Dims[r-3], kw: win.Dims[r-2], sh: win.Strides[r-3], sw: win.Strides[r-2],
		pt: pv[0], pl: pw[0], padded: pv != [2]int{} || pw != [2]int{}}
	hp, wp := p.h+pv[0]+pv[1], p.w+pw[0]+pw[1]
	if p.kh > hp || p.kw > wp || p.c == 0 || p.h == 0 || p.w == 0 {
		return chanWindow{}, false
	}
	p.oh, p.ow = (hp-p.kh)/p.sh+1, (wp-p.kw)/p.sw+1
	return p, true
}

// clipped calls fn for the windows of every row of windows oh ≡ first
// (mod every), split across workers by row: o0 is the offset of a
// window's outputs (c each), taps the offsets of its taps inside the
// image, row by row (fewer than kh*kw where it covers padding, none where
// it lies on padding alone; fn must not keep the slice).
func (p chanWindow) clipped(dev *device.CPUDevice, first, every int, fn func(o0 int, taps []int)) {
	rows := (p.oh - first + every - 1) / every
	cs, rs := p.c, p.w*p.c // the steps to the next column and row of taps
	dev.Parallel(p.images*rows, float64(p.ow*p.kh*p.kw*p.c), func(lo, hi int) {
		taps := make([]int, 0, p.kh*p.kw)
		for r := lo; r < hi; r++ {
			image, oh := r/rows, first+r%rows*every
			top := oh*p.sh - p.pt
			i0, i1 := max(0, -top), min(p.kh, p.h-top)
			for ow := range p.ow {
				left := ow*p.sw - p.pl
				j0, j1 := max(0, -left), min(p.kw, p.w-left)
				x0 := ((image*p.h+top)*p.w + left) * p.c
				taps = taps[:0]
				for i := i0; i < i1; i++ {
					for j := j0; j < j1; j++ {
						taps = append(taps, x0+i*rs+j*cs)
					}
				}
				fn(((image*p.oh+oh)*p.ow+ow)*p.c, taps)
			}
		}
	})
}

// windows calls fn for every window, split across workers by output row:
// x0 is the offset of the window's first tap, o0 of its outputs (c each).
// Before a row's windows it calls band (when not nil) with the operand's
// elements that row owns: its stride of rows, to the image's end for the
// last. Rows run in parallel, so fn may write the taps only when windows
// of different rows do not overlap (sh >= kh).
func (p chanWindow) windows(dev *device.CPUDevice, band func(lo, hi int), fn func(x0, o0 int)) {
	dev.Parallel(p.images*p.oh, float64(p.ow*p.kh*p.kw*p.c), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			image, oh := r/p.oh, r%p.oh
			x0 := ((image*p.h + oh*p.sh) * p.w) * p.c
			if band != nil {
				end := (oh + 1) * p.sh
				if oh == p.oh-1 {
					end = p.h
				}
				band(x0, ((image*p.h+end)*p.w)*p.c)
			}
			for ow := range p.ow {
				fn(x0+ow*p.sw*p.c, (r*p.ow+ow)*p.c)
			}
		}
	})
}

// chanReduce is ReduceWindow's kernel on a channel window (padded or
// not: a padding tap counts as init).
func chanReduce[T tensor.Num](dev *device.CPUDevice, p chanWindow, x, out []T, init T, kind ops.ReduceKind) {
	p.clipped(dev, 0, 1, func(o0 int, taps []int) {
		o := out[o0 : o0+p.c]
		whole := len(taps) == p.kh*p.kw
		switch {
		case whole && kind == ops.ReduceMax && p.kh == 2 && p.kw == 2:
			reduceMax2x2Chan(o, x, taps[0], p.c, p.w*p.c, init)
			return
		case kind == ops.ReduceMax && len(taps) > 0:
			reduceMaxChan(o, x, taps, init)
			return
		}
		for k := range o {
			o[k] = init
		}
		if kind == ops.ReduceSum && init != 0 { // init once more for each padding tap
			for range p.kh*p.kw - len(taps) {
				for k := range o {
					o[k] += init
				}
			}
		}
		for _, tap := range taps { // a min or a sum (max went above)
			tap := x[tap:][:p.c]
			if kind == ops.ReduceMin {
				for k, v := range tap {
					o[k] = min(o[k], v)
				}
				continue
			}
			addInto(o, tap)
		}
	})
}

// reduceMaxChan sets o[k] to the largest of init and channel k of the
// taps at the given offsets of x (at least one).
func reduceMaxChan[T tensor.Num](o, x []T, taps []int, init T) {
	n := len(o)
	loop := func(lo, hi int) {
		copy(o[lo:hi], x[taps[0]+lo:taps[0]+hi])
		for k := lo; k < hi; k++ {
			o[k] = max(o[k], init)
		}
		for _, tap := range taps[1:] {
			t := x[tap:]
			for k := lo; k < hi; k++ {
				o[k] = max(o[k], t[k])
			}
		}
	}
	o32, ok := any(o).([]float32)
	if !ok || !haveVecKernels || init != init {
		loop(0, n)
		return
	}
	x32, i32 := any(x).([]float32), any(init).(float32)
	_ = x32[slices.Max(taps)+n-1] // every tap in range
	k := 0
	for n-k >= 8 {
		k += smaxchantaps(&o32[k], &x32[k], &taps[0], len(taps), i32, n-k)
		if n-k < 8 {
			break
		}
		loop(k, k+8) // a block with a NaN
		k += 8
	}
	loop(k, n)
}

// reduceMax2x2Chan sets o[k] to the largest of init and channel k's four
// taps (at x0, the next column cs on, the next row rs on, and both).
func reduceMax2x2Chan[T tensor.Num](o, x []T, x0, cs, rs int, init T) {
	n := len(o)
	a, b, c, d := x[x0:x0+n], x[x0+cs:x0+cs+n], x[x0+rs:x0+rs+n], x[x0+rs+cs:x0+rs+cs+n]
	loop := func(lo, hi int) {
		for k := lo; k < hi; k++ {
			o[k] = max(max(max(a[k], b[k]), max(c[k], d[k])), init)
		}
	}
	o32, ok := any(o).([]float32)
	if !ok || !haveVecKernels || init != init {
		loop(0, n)
		return
	}
	// Eight channels at a time, up to a block with a NaN, which the loop
	// takes before the vector kernel goes on.
	a32, b32, c32, d32, i32 := any(a).([]float32), any(b).([]float32), any(c).([]float32), any(d).([]float32), any(init).(float32)
	k := 0
	for n-k >= 8 {
		k += smaxchan2x2(&o32[k], &a32[k], &b32[k], &c32[k], &d32[k], i32, n-k)
		if n-k < 8 {
			break
		}
		loop(k, k+8)
		k += 8
	}
	loop(k, n)
}

// chanScatter is SelectAndScatter's kernel on a channel window of 2x2
// max windows whose rows do not overlap: fill initialises out band by
// band, then each source value goes to its window's first largest tap in
// that channel, the first NaN if any.
func chanScatter[T tensor.Num](dev *device.CPUDevice, p chanWindow, x, src, out []T, fill func([]T)) {
	cs, rs := p.c, p.w*p.c // the steps to the next column and row of taps
	p.windows(dev, func(lo, hi int) { fill(out[lo:hi]) }, func(x0, o0 int) {
		scatterMax2x2Chan(x, src[o0:o0+p.c], out, x0, cs, rs)
	})
}

// chanScatterClipped is SelectAndScatter's kernel on any channel window,
// padded or overlapping (a padding tap is never chosen; a window on
// padding alone drops its source value): fill initialises out, then each
// source value goes to its window's first largest (ge) or smallest tap in
// that channel, the first NaN if any. The rows of windows go in passes of
// rows every ⌈kh/sh⌉ apart, whose windows share no tap, so that a pass's
// rows run in parallel.
func chanScatterClipped[T tensor.Num](dev *device.CPUDevice, p chanWindow, x, src, out []T, ge bool, fill func([]T)) {
	image := p.h * p.w * p.c
	dev.Parallel(p.images, float64(image), func(lo, hi int) { fill(out[lo*image : hi*image]) })
	every := (p.kh + p.sh - 1) / p.sh
	for first := range min(every, p.oh) {
		p.clipped(dev, first, every, func(o0 int, taps []int) {
			if len(taps) > 0 {
				scatterChan(x, src[o0:o0+p.c], out, taps, ge)
			}
		})
	}
}

// scatterChan adds src[k] to out at the first largest (ge) or smallest of
// channel k's taps (at the given offsets of x and out, at least one), the
// first NaN if any.
func scatterChan[T tensor.Num](x, src, out []T, taps []int, ge bool) {
	n := len(src)
	loop := func(lo, hi int) {
		for k := lo; k < hi; k++ {
			out[firstExtreme(x[k:], taps, ge)+k] += src[k]
		}
	}
	x32, ok := any(x).([]float32)
	if !ok || !ge || !haveVecKernels {
		loop(0, n)
		return
	}
	s32, o32 := any(src).([]float32), any(out).([]float32)
	last := slices.Max(taps) + n - 1
	_, _ = x32[last], o32[last] // every tap and output in range
	k := 0
	for n-k >= 8 {
		k += smaxscatterchantaps(&o32[k], &x32[k], &s32[k], &taps[0], len(taps), n-k)
		if n-k < 8 {
			break
		}
		loop(k, k+8) // a block with a NaN
		k += 8
	}
	loop(k, n)
}

// scatterMax2x2Chan is chanScatter's loop for 2x2 max windows: the taps of
// channel k are a[k], b[k] (next column), c[k] (next row), d[k].
func scatterMax2x2Chan[T tensor.Num](x, src, out []T, x0, cs, rs int) {
	n := len(src)
	x32, ok := any(x).([]float32)
	if !ok || !haveVecKernels {
		scatterMax2x2ChanGo(x, src, out, x0, cs, rs, 0, n)
		return
	}
	s32, o32 := any(src).([]float32), any(out).([]float32)
	_, _ = x32[x0+rs+cs+n-1], o32[x0+rs+cs+n-1] // every tap and output in range
	k := 0
	for n-k >= 8 {
		at := x0 + k
		k += smaxscatterchan2x2(&o32[at], &o32[at+cs], &o32[at+rs], &o32[at+rs+cs],
			&x32[at], &x32[at+cs], &x32[at+rs], &x32[at+rs+cs], &s32[k], n-k)
		if n-k < 8 {
			break
		}
		scatterMax2x2ChanGo(x, src, out, x0, cs, rs, k, k+8) // a block with a NaN
		k += 8
	}
	scatterMax2x2ChanGo(x, src, out, x0, cs, rs, k, n)
}

// scatterMax2x2ChanGo is scatterMax2x2Chan's loop in Go, over channels
// [lo, hi).
func scatterMax2x2ChanGo[T tensor.Num](x, src, out []T, x0, cs, rs, lo, hi int) {
	n := len(src)
	a, b, c, d := x[x0:x0+n], x[x0+cs:x0+cs+n], x[x0+rs:x0+rs+n], x[x0+rs+cs:x0+rs+cs+n]
	for k := lo; k < hi; k++ {
		v := src[k]
		ta, tb, tc, td := a[k], b[k], c[k], d[k]
		best := max(max(ta, tb), max(tc, td))
		var step int
		if best != best { // NaN: the first NaN tap
			switch {
			case ta != ta:
				step = 0
			case tb != tb:
				step = cs
			case tc != tc:
				step = rs
			default:
				step = rs + cs
			}
		} else {
			// The first tap equal to the maximum, without branches (which
			// tap wins is unpredictable).
			w := 3 - b2i(tc == best)
			w -= (w - 1) * b2i(tb == best)
			w *= 1 - b2i(ta == best)
			step = (w>>1)*rs + (w&1)*cs
		}
		out[x0+k+step] += v
	}
}
