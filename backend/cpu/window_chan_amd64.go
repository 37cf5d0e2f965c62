//go:build amd64 && !purego

package cpu

// The 2x2 max pooling kernels of window_chan_amd64.s (AVX2), over channels.

//go:noescape
func smaxchan2x2(o, a, b, c, d *float32, init float32, n int) int

//go:noescape
func smaxscatterchan2x2(oa, ob, oc, od, a, b, c, d, src *float32, n int) int

//go:noescape
func smaxchantaps(o, x *float32, taps *int, ntaps int, init float32, n int) int

//go:noescape
func smaxscatterchantaps(out, x, src *float32, taps *int, ntaps, n int) int
