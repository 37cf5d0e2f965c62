//go:build amd64 && !purego

package ops

import xcpu "golang.org/x/sys/cpu"

// The AVX2+FMA micro-kernels in gemm_amd64.s, chosen once at start-up.
var haveGemmKernels = xcpu.X86.HasAVX2 && xcpu.X86.HasFMA

//go:noescape
func sgemm4x16(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int)

//go:noescape
func dgemm4x8(k int, a *float64, lda int, b *float64, ldb int, c *float64, ldc int)

//go:noescape
func sgemm4x8(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int)

//go:noescape
func sdot(x, y *float32, n int) float32

//go:noescape
func sadd(dst, a, b *float32, n int)

//go:noescape
func stanh4(dst, x *float32, n int)

//go:noescape
func smuls(dst, a *float32, s float32, n int)

//go:noescape
func sadds(dst, a *float32, s float32, n int)
