package cpu

import (
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Windows that move over the last two dimensions only, with no dilation:
// NCHW pooling. ReduceWindow and SelectAndScatter run them as plain loops
// over each plane's rows instead of through the general window geometry
// (offset tables, per-window callbacks). ReduceWindow takes them padded
// too (SAME pooling: a border window's taps cut to the plane).

// planeWindow is such a window over planes of h x w elements, padded by
// pt rows above and pl columns to the left (padded: any padding).
type planeWindow struct {
	planes, h, w int
	kh, kw       int
	sh, sw       int
	oh, ow       int
	pt, pl       int
	padded       bool
}

// planeOf returns the plane form of a normalized window over shape, and
// whether the window has one: no padding (SelectAndScatter's).
func planeOf(shape tensor.Shape, win ops.Window) (planeWindow, bool) {
	p, ok := paddedPlaneOf(shape, win)
	return p, ok && !p.padded
}

// paddedPlaneOf is planeOf of a window that may pad the plane's rows and
// columns (by nothing negative): ReduceWindow's, whose padding taps count
// as init.
func paddedPlaneOf(shape tensor.Shape, win ops.Window) (planeWindow, bool) {
	r := shape.Rank()
	if r < 2 {
		return planeWindow{}, false
	}
	for d := 0; d < r; d++ {
		if win.BaseDilation[d] != 1 || win.WindowDilation[d] != 1 || win.Padding[d][0] < 0 || win.Padding[d][1] < 0 {
			return planeWindow{}, false
		}
		if d < r-2 && (win.Dims[d] != 1 || win.Strides[d] != 1 || win.Padding[d] != [2]int{}) {
			return planeWindow{}, false
		}
	}
	pv, pw := win.Padding[r-2], win.Padding[r-1]
	p := planeWindow{planes: shape[:r-2].NumElements(), h: shape[r-2], w: shape[r-1],
		kh: win.Dims[r-2], kw: win.Dims[r-1], sh: win.Strides[r-2], sw: win.Strides[r-1],
		pt: pv[0], pl: pw[0], padded: pv != [2]int{} || pw != [2]int{}}
	hp, wp := p.h+pv[0]+pv[1], p.w+pw[0]+pw[1]
	if p.kh > hp || p.kw > wp || p.h == 0 || p.w == 0 {
		return planeWindow{}, false
	}
	p.oh, p.ow = (hp-p.kh)/p.sh+1, (wp-p.kw)/p.sw+1
	return p, true
}

// rows calls fn for every output row (plane, oh), split across workers;
// x0 is the offset of the row's first window's first tap, o0 of its first
// output. Before it calls band (when not nil) with the operand's elements
// the row owns: its stride of rows, to the plane's end for the last.
func (p planeWindow) rows(dev *device.CPUDevice, band func(lo, hi int), fn func(x0, o0 int)) {
	dev.Parallel(p.planes*p.oh, float64(p.ow*p.kh*p.kw), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			plane, oh := r/p.oh, r%p.oh
			x0 := (plane*p.h + oh*p.sh) * p.w
			if band != nil {
				end := (oh + 1) * p.sh
				if oh == p.oh-1 {
					end = p.h
				}
				band(x0, (plane*p.h+end)*p.w)
			}
			fn(x0, r*p.ow)
		}
	})
}

// planeReduce is ReduceWindow's kernel on a plane window (padded or not:
// a padding tap counts as init). Unpadded 2x2 max windows take their
// vector kernel; the rest reduce each output row's window rows into one
// row first (whole rows, vector kernels for float32), then along it, so
// that windows side by side share the rows' work.
func planeReduce[T tensor.Num](dev *device.CPUDevice, p planeWindow, x, out []T, init T, kind ops.ReduceKind) {
	dev.Parallel(p.planes*p.oh, float64(p.ow*p.kh*p.kw), func(lo, hi int) {
		v := make([]T, p.w) // the output row's window rows, reduced
		taps := make([]int, 0, p.kh)
		for r := lo; r < hi; r++ {
			plane, oh := r/p.oh, r%p.oh
			top := oh*p.sh - p.pt
			o := out[r*p.ow : (r+1)*p.ow]
			if !p.padded && kind == ops.ReduceMax && p.kh == 2 && p.kw == 2 {
				x0 := (plane*p.h + top) * p.w
				reduceMax2x2(o, x[x0:x0+p.w], x[x0+p.w:x0+2*p.w], init, p.sw)
				continue
			}
			taps = taps[:0]
			for i := max(0, -top); i < min(p.kh, p.h-top); i++ {
				taps = append(taps, (plane*p.h+top+i)*p.w)
			}
			reduceRows(v, x, taps, init, kind)
			for j := range o {
				left := j*p.sw - p.pl
				j0, j1 := max(0, -left), min(p.kw, p.w-left)
				acc := init
				if kind == ops.ReduceSum && init != 0 { // init once more for each padding tap
					for range p.kh*p.kw - len(taps)*max(j1-j0, 0) {
						acc += init
					}
				}
				if len(taps) > 0 && j0 < j1 {
					for _, e := range v[left+j0 : left+j1] {
						acc = fold(kind, acc, e)
					}
				}
				o[j] = acc
			}
		}
	})
}

// reduceRows sets v (len(v) elements) to the rows of x at offsets taps
// reduced elementwise by kind: max with init too, a sum or min of the
// rows alone (nothing where taps is empty).
func reduceRows[T tensor.Num](v, x []T, taps []int, init T, kind ops.ReduceKind) {
	if len(taps) == 0 {
		return
	}
	n := len(v)
	if kind == ops.ReduceMax {
		reduceMaxChan(v, x, taps, init)
		return
	}
	copy(v, x[taps[0]:][:n])
	for _, tap := range taps[1:] {
		row := x[tap:][:n]
		if kind == ops.ReduceMin {
			for k, e := range row {
				v[k] = min(v[k], e)
			}
			continue
		}
		addInto(v, row)
	}
}

// reduceMax2x2 sets o[j] to the largest of init and the 2x2 window at
// column j*sw of rows r0 and r1.
func reduceMax2x2[T tensor.Num](o, r0, r1 []T, init T, sw int) {
	if o32, ok := any(o).([]float32); ok && haveVecKernels && sw == 2 && init == init {
		// The vector kernel, up to a block of eight windows with a NaN,
		// which the Go loop takes before the kernel goes on.
		a, b, in := any(r0).([]float32), any(r1).([]float32), any(init).(float32)
		for len(o32) > 0 {
			_, _ = a[2*len(o32)-1], b[2*len(o32)-1]
			done := smaxpool2x2(&o32[0], &a[0], &b[0], in, len(o32))
			o32, a, b = o32[done:], a[2*done:], b[2*done:]
			k := min(8, len(o32))
			reduceMax2x2Go(o32[:k], a, b, in, sw)
			o32, a, b = o32[k:], a[2*k:], b[2*k:]
		}
		return
	}
	reduceMax2x2Go(o, r0, r1, init, sw)
}

// reduceMax2x2Go is reduceMax2x2's loop in Go.
func reduceMax2x2Go[T tensor.Num](o, r0, r1 []T, init T, sw int) {
	for j := range o {
		c := j * sw
		o[j] = max(init, max(r0[c], r0[c+1]), max(r1[c], r1[c+1]))
	}
}

// planeScatter is SelectAndScatter's kernel on a plane window whose windows
// do not overlap (so rows can run in parallel): fill initialises out band
// by band, then each window's source value goes to its first largest (ge)
// or smallest tap, the first NaN if any.
func planeScatter[T tensor.Num](dev *device.CPUDevice, p planeWindow, x, src, out []T, ge bool, fill func([]T)) {
	p.rows(dev, func(lo, hi int) { fill(out[lo:hi]) }, func(x0, o0 int) {
		s := src[o0 : o0+p.ow]
		if ge && p.kh == 2 && p.kw == 2 {
			scatterMax2x2(x, s, out, x0, p.w, p.sw)
			return
		}
		for j, v := range s {
			at, best := -1, T(0)
			for i := 0; i < p.kh; i++ {
				base := x0 + i*p.w + j*p.sw
				for k, t := range x[base : base+p.kw] {
					if at < 0 || beats(t, best, ge) {
						at, best = base+k, t
					}
				}
			}
			out[at] += v
		}
	})
}

// scatterMax2x2 is planeScatter's loop for 2x2 max windows over one
// output row: each source value goes to its window's first largest tap
// (the first NaN if any).
func scatterMax2x2[T tensor.Num](x, src, out []T, x0, w, sw int) {
	if x32, ok := any(x).([]float32); ok && haveVecKernels && sw == 2 {
		// The vector kernel, up to a block of eight windows with a NaN,
		// which the Go loop takes before the kernel goes on.
		s32, o32 := any(src).([]float32), any(out).([]float32)
		for len(s32) > 0 {
			_ = x32[x0+w+2*len(s32)-1]
			_ = o32[x0+w+2*len(s32)-1]
			done := smaxscatter2x2(&o32[x0], &o32[x0+w], &x32[x0], &x32[x0+w], &s32[0], len(s32))
			s32, x0 = s32[done:], x0+2*done
			k := min(8, len(s32))
			scatterMax2x2Go(x32, s32[:k], o32, x0, w, sw)
			s32, x0 = s32[k:], x0+2*k
		}
		return
	}
	scatterMax2x2Go(x, src, out, x0, w, sw)
}

// scatterMax2x2Go is scatterMax2x2's loop in Go.
func scatterMax2x2Go[T tensor.Num](x, src, out []T, x0, w, sw int) {
	for j, v := range src {
		at := x0 + j*sw
		a, b, c, d := x[at], x[at+1], x[at+w], x[at+w+1]
		best := max(max(a, b), max(c, d))
		if best != best { // NaN: the first NaN tap
			out[firstNaN(x, at, w)] += v
			continue
		}
		// The first tap equal to the maximum, as an index computed without
		// branches (which tap wins is unpredictable).
		k := 3 - b2i(c == best)
		k -= (k - 1) * b2i(b == best)
		k *= 1 - b2i(a == best)
		out[at+(k>>1)*w+(k&1)] += v
	}
}

// b2i is 1 for true and 0 for false; the compiler turns it into a flag
// read, not a branch.
func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// firstNaN returns the offset of the first NaN among the 2x2 taps at at
// (row stride w).
func firstNaN[T tensor.Num](x []T, at, w int) int {
	for _, off := range [4]int{at, at + 1, at + w, at + w + 1} {
		if x[off] != x[off] {
			return off
		}
	}
	return at
}
