//go:build amd64 && !purego

package ops

import xcpu "golang.org/x/sys/cpu"

//go:generate go run ./internal/asmgen -out gemm_amd64.s

// The vector kernels (vec_amd64.s, tanh_amd64.s) need AVX2 and FMA; the
// GEMM micro-kernels (gemm_amd64.s) come in AVX-512 and AVX2+FMA builds,
// chosen once at start-up from the CPU's features.
var (
	haveVecKernels = xcpu.X86.HasAVX2 && xcpu.X86.HasFMA
	haveAVX512     = xcpu.X86.HasAVX512F
)

// asmGemmKernels lists the assembly micro-kernels for T this CPU runs, in
// the order gemmKernelsFor prefers them (largest tile first).
func asmGemmKernels[T gemmElem]() []gemmKernel[T] {
	var ks []any
	switch any(*new(T)).(type) {
	case float32:
		switch {
		case haveAVX512:
			ks = []any{
				gemmKernel[float32]{"sgemmAVX512x12", 12, 32, sgemmAVX512x12},
				gemmKernel[float32]{"sgemmAVX512x4", 4, 32, sgemmAVX512x4},
				gemmKernel[float32]{"sgemmAVX512x1", 1, 64, sgemmAVX512x1},
			}
		case haveVecKernels:
			ks = []any{
				gemmKernel[float32]{"sgemmAVX2x6", 6, 16, sgemmAVX2x6},
				gemmKernel[float32]{"sgemmAVX2x1", 1, 32, sgemmAVX2x1},
			}
		}
	case float64:
		switch {
		case haveAVX512:
			ks = []any{
				gemmKernel[float64]{"dgemmAVX512x12", 12, 16, dgemmAVX512x12},
				gemmKernel[float64]{"dgemmAVX512x4", 4, 16, dgemmAVX512x4},
				gemmKernel[float64]{"dgemmAVX512x1", 1, 32, dgemmAVX512x1},
			}
		case haveVecKernels:
			ks = []any{
				gemmKernel[float64]{"dgemmAVX2x6", 6, 8, dgemmAVX2x6},
				gemmKernel[float64]{"dgemmAVX2x1", 1, 16, dgemmAVX2x1},
			}
		}
	}
	out := make([]gemmKernel[T], len(ks))
	for i, k := range ks {
		out[i] = k.(gemmKernel[T])
	}
	return out
}

//go:noescape
func sgemmAVX512x12(kc int, a, b *float32, ldb int, c *float32, ldc int, accumulate int)

//go:noescape
func sgemmAVX512x4(kc int, a, b *float32, ldb int, c *float32, ldc int, accumulate int)

//go:noescape
func sgemmAVX512x1(kc int, a, b *float32, ldb int, c *float32, ldc int, accumulate int)

//go:noescape
func dgemmAVX512x12(kc int, a, b *float64, ldb int, c *float64, ldc int, accumulate int)

//go:noescape
func dgemmAVX512x4(kc int, a, b *float64, ldb int, c *float64, ldc int, accumulate int)

//go:noescape
func dgemmAVX512x1(kc int, a, b *float64, ldb int, c *float64, ldc int, accumulate int)

//go:noescape
func sgemmAVX2x6(kc int, a, b *float32, ldb int, c *float32, ldc int, accumulate int)

//go:noescape
func sgemmAVX2x1(kc int, a, b *float32, ldb int, c *float32, ldc int, accumulate int)

//go:noescape
func dgemmAVX2x6(kc int, a, b *float64, ldb int, c *float64, ldc int, accumulate int)

//go:noescape
func dgemmAVX2x1(kc int, a, b *float64, ldb int, c *float64, ldc int, accumulate int)

//go:noescape
func sdot(x, y *float32, n int) float32

//go:noescape
func sadd(dst, a, b *float32, n int)

//go:noescape
func stanh8(dst, x *float32, n int)

//go:noescape
func smuls(dst, a *float32, s float32, n int)

//go:noescape
func sadds(dst, a *float32, s float32, n int)

//go:noescape
func saxpy(dst, x *float32, a float32, n int)

//go:noescape
func saddnt(dst, a, b *float32, n int)

//go:noescape
func ssum(x *float32, n int) float32

//go:noescape
func srelu(dst, x *float32, n int)

//go:noescape
func sreluGrad(dst, x, dy *float32, n int)

//go:noescape
func sexp8(dst, x *float32, n int)

//go:noescape
func ssigmoid8(dst, x *float32, n int)

//go:noescape
func stanh16(dst, x *float32, n int)

//go:noescape
func slog8(dst, x *float32, n int)

//go:noescape
func serf8(dst, x *float32, n int)

//go:noescape
func sphi8(dst, x *float32, n int)
