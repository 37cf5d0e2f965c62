package cpu

import (
	"math/rand/v2"
	"testing"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// A pooling's gradient asked as ops asks it (a window sum over dy dilated
// by the strides) is recognised in both layouts and gives each element
// the sum of dy over the pooling's windows that hold it, as adding each
// window's value to its taps does: strides below, at and above the
// window, padding on both sides.
func TestSpreadSumsAddEachWindowToItsTaps(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	dev := device.Host()
	for trial := range 400 {
		nhwc := trial%2 == 0
		n, h, w, c := 1+r.IntN(2), 1+r.IntN(9), 1+r.IntN(20), 1+r.IntN(5)
		kh, kw := 1+r.IntN(3), 1+r.IntN(3)
		sh, sw := 1+r.IntN(3), 1+r.IntN(3)
		ph, pw := [2]int{r.IntN(kh), r.IntN(kh)}, [2]int{r.IntN(kw), r.IntN(kw)}
		oh, ow := (h+ph[0]+ph[1]-kh)/sh+1, (w+pw[0]+pw[1]-kw)/sw+1
		if oh <= 0 || ow <= 0 {
			continue
		}
		// The transposed window over dy [n oh ow c] (or [n c oh ow]).
		tw := func(k, s, lo, size, out int) (dim, stride, dil int, pad [2]int) {
			dilated := (out-1)*s + 1
			l := k - 1 - lo
			return k, 1, s, [2]int{l, (size - 1) + k - dilated - l}
		}
		kh2, _, dh, padH := tw(kh, sh, ph[0], h, oh)
		kw2, _, dw, padW := tw(kw, sw, pw[0], w, ow)
		win := ops.Window{Dims: []int{1, kh2, kw2, 1}, Strides: []int{1, 1, 1, 1}, BaseDilation: []int{1, dh, dw, 1},
			WindowDilation: []int{1, 1, 1, 1}, Padding: [][2]int{{}, padH, padW, {}}}
		dyShape, outShape := tensor.Shape{n, oh, ow, c}, tensor.Shape{n, h, w, c}
		at := func(img, y, x, k, hh, ww int) int { return ((img*hh+y)*ww+x)*c + k }
		if !nhwc {
			win.Dims, win.BaseDilation, win.Padding = []int{1, 1, kh2, kw2}, []int{1, 1, dh, dw}, [][2]int{{}, {}, padH, padW}
			dyShape, outShape = tensor.Shape{n, c, oh, ow}, tensor.Shape{n, c, h, w}
			at = func(img, y, x, k, hh, ww int) int { return ((img*c+k)*hh+y)*ww + x }
		}
		p, ok := ops.ReduceWindowAttrs{Kind: ops.ReduceSum, Window: win, IdentityInit: true}.SpreadOf(dyShape, outShape)
		if !ok {
			t.Fatalf("trial %d: %v over %v not recognised", trial, win, dyShape)
		}
		dy := make([]float64, dyShape.NumElements())
		for i := range dy {
			dy[i] = float64(r.IntN(9)) - 4
		}
		got, want := make([]float64, outShape.NumElements()), make([]float64, outShape.NumElements())
		spreadSums(dev, p, dy, got, 0)
		dy32, got32 := make([]float32, len(dy)), make([]float32, len(got)) // the vector kernels'
		for i, v := range dy {
			dy32[i] = float32(v)
		}
		spreadSums(dev, p, dy32, got32, 0)
		for img := range n {
			for k := range c {
				for y := range oh {
					for x := range ow {
						for i := range kh {
							for j := range kw {
								iy, ix := y*sh-ph[0]+i, x*sw-pw[0]+j
								if iy >= 0 && iy < h && ix >= 0 && ix < w {
									want[at(img, iy, ix, k, h, w)] += dy[at(img, y, x, k, oh, ow)]
								}
							}
						}
					}
				}
			}
		}
		for i := range want {
			if got[i] != want[i] || float64(got32[i]) != want[i] {
				t.Fatalf("trial %d (nhwc %v, %dx%d windows at %dx%d, padding %v %v over %v): element %d is %v (float32 %v), want %v",
					trial, nhwc, kh, kw, sh, sw, ph, pw, outShape, i, got[i], got32[i], want[i])
			}
		}
	}
}
