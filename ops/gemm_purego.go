//go:build !amd64 || purego

package ops

// Without assembly, gemm uses its pure-Go loops everywhere.
var haveGemmKernels = false

func sgemm4x16(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int) {
	panic("ops: no gemm micro-kernel in this build")
}

func dgemm4x8(k int, a *float64, lda int, b *float64, ldb int, c *float64, ldc int) {
	panic("ops: no gemm micro-kernel in this build")
}

func sgemm4x8(k int, a *float32, lda int, b *float32, ldb int, c *float32, ldc int) {
	panic("ops: no gemm micro-kernel in this build")
}

func sdot(x, y *float32, n int) float32 { panic("ops: no vector kernel in this build") }

func sadd(dst, a, b *float32, n int) { panic("ops: no vector kernel in this build") }

func stanh4(dst, x *float32, n int) { panic("ops: no vector kernel in this build") }

func smuls(dst, a *float32, s float32, n int) { panic("ops: no vector kernel in this build") }

func sadds(dst, a *float32, s float32, n int) { panic("ops: no vector kernel in this build") }
