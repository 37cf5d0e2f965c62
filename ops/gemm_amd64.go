//go:build amd64 && !purego

package ops

import xcpu "golang.org/x/sys/cpu"

//go:generate go run ./internal/asmgen -out gemm_amd64.s -go gemm_kernels_amd64.go

// The vector kernels (vec_amd64.s, tanh_amd64.s) need AVX2 and FMA; the
// GEMM micro-kernels (gemm_amd64.s, listed in gemm_kernels_amd64.go, both
// generated) come in AVX-512 and AVX2+FMA builds, chosen once at start-up
// from the CPU's features.
var (
	haveVecKernels = xcpu.X86.HasAVX2 && xcpu.X86.HasFMA
	haveAVX512     = xcpu.X86.HasAVX512F
)

// linkEdgeKernels sets each kernel's edge from the others of its set.
func linkEdgeKernels[T gemmElem](set []gemmKernel[T]) {
	for i := range set {
		for j := range set {
			if set[j].mr == set[i].mr && 2*set[j].nr == set[i].nr {
				set[i].edge = &set[j]
			}
		}
	}
}

// kernelSets turns the generated lists of kernels (gemm_kernels_amd64.go)
// into typed sets with their edge kernels linked.
func kernelSets[T gemmElem](sets [][]any) [][]gemmKernel[T] {
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
