//go:build amd64 && !purego

package cpu

// The max pooling kernels of window_plane_amd64.s (AVX2): 2x2 at a
// stride of 2, and the columns of any window.

//go:noescape
func smaxscatter2x2(out0, out1, r0, r1, src *float32, n int) int

//go:noescape
func smaxpool2x2(o, r0, r1 *float32, init float32, n int) int

//go:noescape
func smaxcols(best *float32, first *int32, x *float32, taps *int, ntaps, n int) int

//go:noescape
func spickwin(at *int32, best *float32, first *int32, taps *int, ntaps, n int) int
