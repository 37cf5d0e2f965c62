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
	// useVDPBF16PS: bfloat16 products (MatMul, FusedMatMul, the
	// convolutions) run on VDPBF16PS. AMD's Zen 4 and 5 issue it at twice
	// float32's FMA rate (1.9x float32's GFLOP/s measured, bench/README.md);
	// Intel's cores at one port, FMA's rate at best: a Xeon with
	// AVX512_BF16 and AVX512_FP16 (2026-11-28) multiplied 1024 matrices
	// at 148-170 GFLOP/s on it against 284 widened to float32 and 306 in
	// float32. There bfloat16 products widen to float32 (as float16's do).
	useVDPBF16PS = haveAVX512BF16 && cpuVendor() != "GenuineIntel"
)
