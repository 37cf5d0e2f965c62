package cpu

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// The channel windows (NHWC pooling) give what the general geometry gives,
// for max, min and sum, selections with ties and NaNs, odd sizes and
// strides, on one goroutine and on the workers.
func TestChanWindowsMatchGeneral(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	dev := device.Host()
	for trial := range 300 {
		n, h, w, c := 1+r.IntN(3), 1+r.IntN(9), 1+r.IntN(9), 1+r.IntN(19)
		kh, kw := 1+r.IntN(min(h, 3)), 1+r.IntN(min(w, 3))
		sh, sw := kh+r.IntN(2), 1+r.IntN(3) // rows never overlap; columns may
		shape := tensor.Shape{n, h, w, c}
		win := ops.Window{Dims: []int{1, kh, kw, 1}, Strides: []int{1, sh, sw, 1},
			Padding: make([][2]int, 4), BaseDilation: []int{1, 1, 1, 1}, WindowDilation: []int{1, 1, 1, 1}}
		p, ok := chanOf(shape, win)
		if !ok {
			t.Fatalf("trial %d: %v %v has no channel form", trial, shape, win)
		}
		x := make([]float32, shape.NumElements())
		for i := range x {
			x[i] = float32(r.IntN(4)) // many ties
			if r.IntN(40) == 0 {
				x[i] = float32(math.NaN())
			}
		}
		g := kernelGeometry(shape, win)
		outN := n * p.oh * p.ow * c
		init := float32(r.IntN(3)) - 0.5 // may win a window's reduction
		for _, kind := range []ops.ReduceKind{ops.ReduceMax, ops.ReduceMin, ops.ReduceSum} {
			got, want := make([]float32, outN), make([]float32, outN)
			chanReduce(dev, p, x, got, init, kind)
			ro := g.offs[g.rowDim]
			g.rows(dev, true, func(i0 int, o []int, outer int, kb []int) {
				for rr := range g.out[g.rowDim] {
					acc := init
					for _, off := range g.woff {
						acc = fold(kind, acc, x[outer+ro[rr]+off])
					}
					want[i0+rr] = acc
				}
			})
			for i := range got {
				if got[i] != want[i] && !(got[i] != got[i] && want[i] != want[i]) {
					t.Fatalf("trial %d %v window %v, %v: output %d is %v, want %v", trial, shape, win.Dims, kind, i, got[i], want[i])
				}
			}
		}
		src := make([]float32, outN)
		for i := range src {
			src[i] = float32(1 + r.IntN(100))
		}
		for _, kind := range []ops.SelectKind{ops.SelectGE, ops.SelectLE} {
			got, want := make([]float32, len(x)), make([]float32, len(x))
			for i := range got {
				got[i], want[i] = 999, 0.25 // the fill must reach every element
			}
			fill := func(s []float32) { fillWith(s, 0.25) }
			if kind == ops.SelectGE && kh == 2 && kw == 2 {
				chanScatter(dev, p, x, src, got, fill)
			} else {
				chanScatterClipped(dev, p, x, src, got, kind == ops.SelectGE, fill)
			}
			selected(dev, g, false, x, kind, func(i, at int) { want[at] += src[i] })
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("trial %d %v window %v strides %v, select %v: element %d got %v, want %v", trial, shape, win.Dims, win.Strides, kind, i, got[i], want[i])
				}
			}
		}
	}
}

// Padded and overlapping channel windows (NHWC) and plane windows (NCHW),
// SAME pooling's backward, scatter as the general geometry does: ties,
// NaNs, signed zeros, windows on padding alone, channels and columns past
// the vector kernels' blocks, float32 (vector kernels) and float64,
// largest and smallest.
func TestClippedScattersMatchGeneral(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 800 {
		nhwc := trial%2 == 0
		n, h, w, c := 1+r.IntN(3), 1+r.IntN(9), 1+r.IntN(12), 1+r.IntN(21)
		kh, kw := 1+r.IntN(4), 1+r.IntN(4)
		ph, pw := [2]int{r.IntN(kh + 1), r.IntN(kh + 1)}, [2]int{r.IntN(kw + 1), r.IntN(kw + 1)}
		sh, sw := 1+r.IntN(3), 1+r.IntN(3)
		shape := tensor.Shape{n, h, w, c}
		win := ops.Window{Dims: []int{1, kh, kw, 1}, Strides: []int{1, sh, sw, 1},
			Padding: [][2]int{{}, ph, pw, {}}, BaseDilation: []int{1, 1, 1, 1}, WindowDilation: []int{1, 1, 1, 1}}
		var cw chanWindow
		var pl planeWindow
		ok, outs := false, 0
		if nhwc {
			cw, ok = paddedChanOf(shape, win)
			outs = n * cw.oh * cw.ow * c
		} else {
			c, w = 1+r.IntN(3), 1+r.IntN(40) // rows of windows past the vector kernels' blocks, at every stride
			shape = tensor.Shape{n, c, h, w}
			win.Dims, win.Strides, win.Padding = []int{1, 1, kh, kw}, []int{1, 1, sh, sw}, [][2]int{{}, {}, ph, pw}
			pl, ok = paddedPlaneOf(shape, win)
			outs = n * c * pl.oh * pl.ow
		}
		if !ok {
			continue // no window fits
		}
		x := make([]float32, shape.NumElements())
		for i := range x {
			x[i] = float32(r.IntN(4)) - 1.5 // many ties
			switch r.IntN(50) {
			case 0:
				x[i] = float32(math.NaN())
			case 1:
				x[i] = float32(math.Copysign(0, float64(r.IntN(2)*2-1)))
			}
		}
		src := make([]float32, outs)
		for i := range src {
			src[i] = float32(1 + r.IntN(100))
		}
		g := kernelGeometry(shape, win)
		for _, kind := range []ops.SelectKind{ops.SelectGE, ops.SelectLE} {
			want := make([]float32, len(x))
			fillWith(want, 0.25)
			selected(device.Host(), g, false, x, kind, func(i, at int) { want[at] += src[i] })
			got := make([]float32, len(x))
			fillWith(got, 999) // the fill must reach every element
			scatterClipped(nhwc, cw, pl, x, src, got, kind == ops.SelectGE, func(s []float32) { fillWith(s, 0.25) })
			got64 := make([]float64, len(x))
			scatterClipped(nhwc, cw, pl, widen(x), widen(src), got64, kind == ops.SelectGE, func(s []float64) { fillWith(s, 0.25) })
			for i := range got {
				if got[i] != want[i] || float32(got64[i]) != want[i] {
					t.Fatalf("trial %d %v window %v strides %v padding %v, select %v: element %d got %v (float64 %v), want %v",
						trial, shape, win.Dims, win.Strides, win.Padding, kind, i, got[i], got64[i], want[i])
				}
			}
		}
	}
}

// scatterClipped runs the clipped scatter of the channel window cw
// (nhwc) or of the plane window pw.
func scatterClipped[T tensor.Num](nhwc bool, cw chanWindow, pw planeWindow, x, src, out []T, ge bool, fill func([]T)) {
	if nhwc {
		chanScatterClipped(device.Host(), cw, x, src, out, ge, fill)
		return
	}
	planeScatterClipped(device.Host(), pw, x, src, out, ge, fill)
}

// widen returns s as float64s.
func widen(s []float32) []float64 {
	w := make([]float64, len(s))
	for i, v := range s {
		w[i] = float64(v)
	}
	return w
}

// The NCHW plane scatter fills and scatters as the general geometry does,
// including the rows no window covers (odd sizes, strides beyond the
// window).
func TestPlaneScatterFillsEveryRow(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	dev := device.Host()
	for trial := range 200 {
		n, c, h, w := 1+r.IntN(2), 1+r.IntN(3), 2+r.IntN(8), 2+r.IntN(8)
		kh, kw := 1+r.IntN(2), 1+r.IntN(2)
		sh, sw := kh+r.IntN(2), kw+r.IntN(2)
		shape := tensor.Shape{n, c, h, w}
		win := ops.Window{Dims: []int{1, 1, kh, kw}, Strides: []int{1, 1, sh, sw},
			Padding: make([][2]int, 4), BaseDilation: []int{1, 1, 1, 1}, WindowDilation: []int{1, 1, 1, 1}}
		p, ok := planeOf(shape, win)
		if !ok {
			t.Fatalf("trial %d: no plane form", trial)
		}
		x := make([]float32, shape.NumElements())
		for i := range x {
			x[i] = float32(r.IntN(4))
		}
		src := make([]float32, n*c*p.oh*p.ow)
		for i := range src {
			src[i] = float32(1 + r.IntN(100))
		}
		got, want := make([]float32, len(x)), make([]float32, len(x))
		for i := range got {
			got[i], want[i] = 999, 0.25
		}
		planeScatter(dev, p, x, src, got, true, func(s []float32) { fillWith(s, 0.25) })
		g := kernelGeometry(shape, win)
		selected(dev, g, false, x, ops.SelectGE, func(i, at int) { want[at] += src[i] })
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("trial %d %v window %dx%d strides %d,%d: element %d got %v, want %v", trial, shape, kh, kw, sh, sw, i, got[i], want[i])
			}
		}
	}
}

// Padded channel windows (NHWC) and plane windows (NCHW), SAME pooling,
// reduce as the definition says: a padding tap counts as init; windows
// wholly on padding give init (and, for a sum, init for every tap); a
// NaN tap makes its window NaN.
func TestPaddedPoolingWindowsReduce(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	dev := device.Host()
	for trial := range 600 {
		nhwc := trial%2 == 0
		n, h, w, c := 1+r.IntN(2), 1+r.IntN(8), 1+r.IntN(8), 1+r.IntN(11)
		if !nhwc {
			w = 1 + r.IntN(20) // rows past the vector kernels' blocks
		}
		kh, kw := 1+r.IntN(4), 1+r.IntN(4)
		sh, sw := 1+r.IntN(3), 1+r.IntN(3)
		ph, pw := [2]int{r.IntN(kh + 2), r.IntN(kh + 2)}, [2]int{r.IntN(kw + 2), r.IntN(kw + 2)}
		shape := tensor.Shape{n, h, w, c}
		win := ops.Window{Dims: []int{1, kh, kw, 1}, Strides: []int{1, sh, sw, 1},
			Padding: [][2]int{{}, ph, pw, {}}, BaseDilation: []int{1, 1, 1, 1}, WindowDilation: []int{1, 1, 1, 1}}
		at := func(img, y, x, k int) int { return ((img*h+y)*w+x)*c + k }
		if !nhwc {
			shape = tensor.Shape{n, c, h, w}
			win.Dims, win.Strides, win.Padding = []int{1, 1, kh, kw}, []int{1, 1, sh, sw}, [][2]int{{}, {}, ph, pw}
			at = func(img, y, x, k int) int { return ((img*c+k)*h+y)*w + x }
		}
		hasWindows := h+ph[0]+ph[1] >= kh && w+pw[0]+pw[1] >= kw
		reduce := func(x, out []float32, init float32, kind ops.ReduceKind) (oh, ow int, ok bool) {
			if nhwc {
				p, ok := paddedChanOf(shape, win)
				if ok {
					chanReduce(dev, p, x, out, init, kind)
				}
				return p.oh, p.ow, ok
			}
			p, ok := paddedPlaneOf(shape, win)
			if ok {
				planeReduce(dev, p, x, out, init, kind)
			}
			return p.oh, p.ow, ok
		}
		x := make([]float32, shape.NumElements())
		for i := range x {
			x[i] = float32(r.IntN(7)) - 3
			if r.IntN(50) == 0 {
				x[i] = float32(math.NaN())
			}
		}
		init := float32(r.IntN(3)) - 1
		oh, ow := (h+ph[0]+ph[1]-kh)/sh+1, (w+pw[0]+pw[1]-kw)/sw+1
		for _, kind := range []ops.ReduceKind{ops.ReduceMax, ops.ReduceMin, ops.ReduceSum} {
			got := make([]float32, max(n*c*oh*ow, 0))
			goh, gow, ok := reduce(x, got, init, kind)
			if ok != hasWindows || (ok && (goh != oh || gow != ow)) {
				t.Fatalf("trial %d: %v %v: a form %v of %dx%d windows, want %v of %dx%d", trial, shape, win, ok, goh, gow, hasWindows, oh, ow)
			}
			if !ok {
				continue
			}
			outAt := func(img, y, xx, k int) int { return ((img*oh+y)*ow+xx)*c + k }
			if !nhwc {
				outAt = func(img, y, xx, k int) int { return ((img*c+k)*oh+y)*ow + xx }
			}
			for img := range n {
				for y := range oh {
					for xx := range ow {
						for k := range c {
							acc := init
							for i := range kh {
								for j := range kw {
									iy, ix := y*sh-ph[0]+i, xx*sw-pw[0]+j
									v := init
									if iy >= 0 && iy < h && ix >= 0 && ix < w {
										v = x[at(img, iy, ix, k)]
									}
									acc = fold(kind, acc, v)
								}
							}
							if g := got[outAt(img, y, xx, k)]; g != acc && !(g != g && acc != acc) {
								t.Fatalf("trial %d %v %v, %v: window (%d %d %d) channel %d is %v, want %v", trial, shape, win, kind, img, y, xx, k, g, acc)
							}
						}
					}
				}
			}
		}
	}
}
