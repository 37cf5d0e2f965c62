//go:build amd64 && !purego

package cpu

// The 2x2 stride-2 max pooling kernels of window_plane_amd64.s (AVX2).

//go:noescape
func smaxscatter2x2(out0, out1, r0, r1, src *float32, n int) int

//go:noescape
func smaxpool2x2(o, r0, r1 *float32, init float32, n int) int
