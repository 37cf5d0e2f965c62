//go:build amd64 && !purego

package cpu

import xcpu "golang.org/x/sys/cpu"

// The CPU features the assembly kernels need, read once at start-up: the
// vector kernels (vec, math_*, window_plane, window_chan) need AVX2 and
// FMA; stanh16 and the larger GEMM micro-kernels AVX-512.
var (
	haveVecKernels = xcpu.X86.HasAVX2 && xcpu.X86.HasFMA
	haveAVX512     = xcpu.X86.HasAVX512F
	// haveAVX512BF16: VDPBF16PS, the bfloat16 GEMM's kernel (gemm_bf16.go).
	haveAVX512BF16 = xcpu.X86.HasAVX512F && xcpu.X86.HasAVX512BF16
)
