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

// asmGemmKernelSets lists the assembly micro-kernels for T this CPU runs,
// one set per instruction set, the preferred set first (AVX-512, then
// AVX2+FMA); within a set, in the order pickGemmKernel prefers them
// (largest tile first; the half-width tile after the large one serves its
// last column panels, see gemmKernel.edge). Tests run every set.
func asmGemmKernelSets[T gemmElem]() [][]gemmKernel[T] {
	var sets [][]any
	switch any(*new(T)).(type) {
	case float32:
		if haveAVX512 {
			sets = append(sets, []any{
				gemmKernel[float32]{name: "sgemmAVX512x12", mr: 12, nr: 32, asm: sgemmAVX512x12},
				gemmKernel[float32]{name: "sgemmAVX512x12n16", mr: 12, nr: 16, asm: sgemmAVX512x12n16},
				gemmKernel[float32]{name: "sgemmAVX512x4", mr: 4, nr: 32, asm: sgemmAVX512x4},
				gemmKernel[float32]{name: "sgemmAVX512x1", mr: 1, nr: 64, asm: sgemmAVX512x1},
			})
		}
		if haveVecKernels {
			sets = append(sets, []any{
				gemmKernel[float32]{name: "sgemmAVX2x6", mr: 6, nr: 16, asm: sgemmAVX2x6},
				gemmKernel[float32]{name: "sgemmAVX2x6n8", mr: 6, nr: 8, asm: sgemmAVX2x6n8},
				gemmKernel[float32]{name: "sgemmAVX2x1", mr: 1, nr: 32, asm: sgemmAVX2x1},
			})
		}
	case float64:
		if haveAVX512 {
			sets = append(sets, []any{
				gemmKernel[float64]{name: "dgemmAVX512x12", mr: 12, nr: 16, asm: dgemmAVX512x12},
				gemmKernel[float64]{name: "dgemmAVX512x12n8", mr: 12, nr: 8, asm: dgemmAVX512x12n8},
				gemmKernel[float64]{name: "dgemmAVX512x4", mr: 4, nr: 16, asm: dgemmAVX512x4},
				gemmKernel[float64]{name: "dgemmAVX512x1", mr: 1, nr: 32, asm: dgemmAVX512x1},
			})
		}
		if haveVecKernels {
			sets = append(sets, []any{
				gemmKernel[float64]{name: "dgemmAVX2x6", mr: 6, nr: 8, asm: dgemmAVX2x6},
				gemmKernel[float64]{name: "dgemmAVX2x6n4", mr: 6, nr: 4, asm: dgemmAVX2x6n4},
				gemmKernel[float64]{name: "dgemmAVX2x1", mr: 1, nr: 16, asm: dgemmAVX2x1},
			})
		}
	}
	out := make([][]gemmKernel[T], len(sets))
	for i, set := range sets {
		for _, k := range set {
			out[i] = append(out[i], k.(gemmKernel[T]))
		}
		linkEdgeKernels(out[i])
	}
	return out
}

//go:noescape
func sgemmAVX512x12n16(kc int, a, b *float32, ldb int, c *float32, ldc int, accumulate int)

//go:noescape
func sgemmAVX512x12(kc int, a, b *float32, ldb int, c *float32, ldc int, accumulate int)

//go:noescape
func sgemmAVX512x4(kc int, a, b *float32, ldb int, c *float32, ldc int, accumulate int)

//go:noescape
func sgemmAVX512x1(kc int, a, b *float32, ldb int, c *float32, ldc int, accumulate int)

//go:noescape
func dgemmAVX512x12n8(kc int, a, b *float64, ldb int, c *float64, ldc int, accumulate int)

//go:noescape
func dgemmAVX512x12(kc int, a, b *float64, ldb int, c *float64, ldc int, accumulate int)

//go:noescape
func dgemmAVX512x4(kc int, a, b *float64, ldb int, c *float64, ldc int, accumulate int)

//go:noescape
func dgemmAVX512x1(kc int, a, b *float64, ldb int, c *float64, ldc int, accumulate int)

//go:noescape
func sgemmAVX2x6n8(kc int, a, b *float32, ldb int, c *float32, ldc int, accumulate int)

//go:noescape
func sgemmAVX2x6(kc int, a, b *float32, ldb int, c *float32, ldc int, accumulate int)

//go:noescape
func sgemmAVX2x1(kc int, a, b *float32, ldb int, c *float32, ldc int, accumulate int)

//go:noescape
func dgemmAVX2x6n4(kc int, a, b *float64, ldb int, c *float64, ldc int, accumulate int)

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

//go:noescape
func smaxscatter2x2(out0, out1, r0, r1, src *float32, n int) int

//go:noescape
func smaxpool2x2(o, r0, r1 *float32, init float32, n int) int
