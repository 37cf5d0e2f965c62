package cpu

import (
	"math"
	"slices"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/tensor"
)

// SelectAndScatter over plane windows that pad or overlap (NCHW SAME max
// pooling's gradient): columns first, then windows, a row of windows at a
// time, eight columns and eight windows a vector where the kernels take
// them (float32, largest).

// planeScatterClipped is SelectAndScatter's kernel on any plane window,
// padded or overlapping (a padding tap is never chosen; a window on
// padding alone drops its source value): fill initialises out, then each
// window's source value goes to its first largest (ge) or smallest tap in
// row-major order, the first NaN if any. A plane at a time (its windows
// may share taps), an output row at a time: each column's extreme over
// the window rows and the first row holding it, then each window's
// extreme over its columns and, among the columns holding it, the one
// whose row comes first.
func planeScatterClipped[T tensor.Num](dev *device.CPUDevice, p planeWindow, x, src, out []T, ge bool, fill func([]T)) {
	plane := p.h * p.w
	dev.Parallel(p.planes, float64(plane*p.kh*4), func(lo, hi int) {
		fill(out[lo*plane : hi*plane])
		best, first := make([]T, p.w), make([]int, p.w) // per column: its extreme, where it first is
		rows, tap := make([]int, 0, p.kh), make([]int32, p.w)
		var ph *phases
		if _, ok := any(x).([]float32); ok && ge && haveVecKernels && plane <= math.MaxInt32 {
			ph = p.phases()
		}
		for pl := lo; pl < hi; pl++ {
			xp, op := x[pl*plane:][:plane], out[pl*plane:][:plane]
			for oh := range p.oh {
				top := oh*p.sh - p.pt
				i0, i1 := max(0, -top), min(p.kh, p.h-top)
				if i0 >= i1 {
					continue
				}
				rows = rows[:0]
				for i := i0; i < i1; i++ {
					rows = append(rows, (top+i)*p.w)
				}
				columnExtremes(xp, rows, best, first, tap, ge)
				s := src[(pl*p.oh+oh)*p.ow:][:p.ow]
				pick := func(lo, hi int) {
					for ow := lo; ow < hi; ow++ {
						left := ow*p.sw - p.pl
						c0, c1 := left+max(0, -left), left+min(p.kw, p.w-left)
						if c0 >= c1 {
							continue
						}
						// Among columns as extreme, the tap first in
						// row-major order: the least offset.
						b, at := best[c0], first[c0]
						for c := c0 + 1; c < c1; c++ {
							e, f := best[c], first[c]
							at += (min(at, f) - at) * (b2i(e == b) | b2i(e != e)&b2i(b != b))
							at += (f - at) * wins(e, b, ge)
							b = extremeOf(b, e, ge)
						}
						op[at] += s[ow]
					}
				}
				if ph == nil {
					pick(0, p.ow)
					continue
				}
				pick(0, ph.lo)
				ph.pick(any(best).([]float32), first, any(s).([]float32), any(op).([]float32), pick)
				pick(ph.hi, p.ow)
			}
		}
	})
}

// phases lays a row of column extremes out for the vector kernel of a
// plane window's windows (spickwin): the columns c = sw*i + r of phase r
// side by side at r*n + i, so that tap j of the windows inside the plane
// [lo, hi) is a run of that layout (windows ow at taps[j] + ow - lo).
type phases struct {
	n, lo, hi int
	sw        int
	taps      []int
	best      []float32
	first, at []int32
}

// phases returns p's layout, of a worker's own.
func (p planeWindow) phases() *phases {
	n := (p.w + p.sw - 1) / p.sw
	// Window ow is inside when sw*ow - pl >= 0 and sw*ow - pl + kw <= w.
	last, _ := floorDiv(p.w-p.kw+p.pl, p.sw)
	ph := &phases{n: n, sw: p.sw, lo: min(p.ow, (p.pl+p.sw-1)/p.sw), hi: min(p.ow, last+1),
		best: make([]float32, p.sw*n), first: make([]int32, p.sw*n), at: make([]int32, p.ow)}
	ph.hi = max(ph.hi, ph.lo)
	for j := range p.kw {
		q, r := floorDiv(j-p.pl, p.sw)
		ph.taps = append(ph.taps, r*n+q+ph.lo)
	}
	return ph
}

// floorDiv returns a = q*b + r with 0 <= r < b.
func floorDiv(a, b int) (q, r int) {
	q, r = a/b, a%b
	if r < 0 {
		q, r = q-1, r+b
	}
	return q, r
}

// pick adds src[ow] to out at the window's choice for the windows [lo,
// hi), eight at a time, from the columns' extremes best and where each
// first is; blocks with a NaN go to scalar.
func (ph *phases) pick(best []float32, first []int, src, out []float32, scalar func(lo, hi int)) {
	for c := range best {
		i := (c%ph.sw)*ph.n + c/ph.sw
		ph.best[i], ph.first[i] = best[c], int32(first[c])
	}
	k := ph.lo
	for ph.hi-k >= 8 {
		done := spickwin(&ph.at[k], &ph.best[k-ph.lo], &ph.first[k-ph.lo], &ph.taps[0], len(ph.taps), ph.hi-k)
		for ow := k; ow < k+done; ow++ {
			out[ph.at[ow]] += src[ow]
		}
		if k += done; ph.hi-k < 8 {
			break
		}
		scalar(k, k+8) // a block with a NaN
		k += 8
	}
	scalar(k, ph.hi)
}

// columnExtremes sets best[c] to the largest (ge) or smallest of column
// c of the rows of x at offsets rows (at least one), NaN if one is, and
// first[c] to the offset of the first holding it; tap is scratch. Without
// branches (which row wins is unpredictable); eight columns at a time
// where the vector kernel takes them (float32, largest).
func columnExtremes[T tensor.Num](x []T, rows []int, best []T, first []int, tap []int32, ge bool) {
	loop := func(lo, hi int) {
		for c := lo; c < hi; c++ {
			at := rows[0] + c
			b := x[at]
			for _, r := range rows[1:] {
				v := x[r+c]
				at += (r + c - at) * wins(v, b, ge)
				b = extremeOf(b, v, ge)
			}
			best[c], first[c] = b, at
		}
	}
	x32, ok := any(x).([]float32)
	if !ok || !ge || !haveVecKernels {
		loop(0, len(best))
		return
	}
	b32, n := any(best).([]float32), len(best)
	_ = x32[slices.Max(rows)+n-1] // every row in range
	c := 0
	for n-c >= 8 {
		done := smaxcols(&b32[c], &tap[c], &x32[c], &rows[0], len(rows), n-c)
		for k := c; k < c+done; k++ {
			first[k] = rows[tap[k]] + k
		}
		if c += done; n-c < 8 {
			break
		}
		loop(c, c+8) // a block with a NaN
		c += 8
	}
	loop(c, n)
}

// wins is 1 where v beats b (larger, ge, or smaller; a NaN beats a
// number), else 0, without a branch.
func wins[T tensor.Num](v, b T, ge bool) int {
	nan := b2i(v != v) & b2i(b == b)
	if ge {
		return b2i(v > b) | nan
	}
	return b2i(v < b) | nan
}

// extremeOf is the larger (ge) or smaller of a and b, NaN if either is.
func extremeOf[T tensor.Num](a, b T, ge bool) T {
	if ge {
		return max(a, b)
	}
	return min(a, b)
}
