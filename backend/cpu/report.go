package cpu

import (
	"bufio"
	"fmt"
	"os"
	"strings"
)

// Kernels describes what the CPU backend chose for this machine at
// start-up: the processor (its model and family, where the system says),
// the instruction sets the assembly kernels use, the GEMM micro-kernels
// for float32 and float64 in the order they are preferred, how the half
// types multiply, and the GEMM's blocking. Setting EAGERFLOW_DEBUG=kernels prints it to standard error
// when the package starts, so that a benchmark's log records which kernels
// produced its figures.
func Kernels() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cpu: %s\n", processor())
	fmt.Fprintf(&b, "  vector kernels (AVX2+FMA): %v; AVX-512F: %v\n", haveVecKernels, haveAVX512)
	fmt.Fprintf(&b, "  gemm float32: %s\n", kernelNames(gemmKernels[float32]()))
	fmt.Fprintf(&b, "  gemm float64: %s\n", kernelNames(gemmKernels[float64]()))
	bf16 := "through float32 (no AVX512_BF16)"
	switch {
	case useVDPBF16PS:
		bf16 = fmt.Sprintf("sbf16gemmAVX512x12 (%dx%d, VDPBF16PS)", bf16MR, bf16NR)
	case haveAVX512BF16:
		bf16 = "through float32 (an Intel core: VDPBF16PS at FMA's rate at best, slower measured)"
	}
	fmt.Fprintf(&b, "  gemm bfloat16: %s\n", bf16)
	f16 := "float32 GEMM, conversions in Go (no AVX-512)"
	if haveAVX512 {
		f16 = "float32 GEMM, conversions by VCVTPH2PS/VCVTPS2PH"
	}
	fmt.Fprintf(&b, "  gemm float16: %s\n", f16)
	fmt.Fprintf(&b, "  gemm blocking: depth %d bytes per row (float64 %d), B blocks %d KiB, A chunks %d MiB", gemmKCBytes, gemmKCBytes64, gemmNCBytes>>10, gemmMCBytes>>20)
	return b.String()
}

func kernelNames[T gemmElem](ks []gemmKernel[T]) string {
	names := make([]string, len(ks))
	for i, k := range ks {
		names[i] = fmt.Sprintf("%s (%dx%d)", k.name, k.mr, k.nr)
	}
	return strings.Join(names, ", ")
}

// cpuVendor is the processor's vendor as /proc/cpuinfo names it
// ("GenuineIntel", "AuthenticAMD"), or "" where the system does not say.
func cpuVendor() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "vendor_id" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// processor reads the model name and family from /proc/cpuinfo (Linux);
// elsewhere it says it does not know.
func processor() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return "unknown (no /proc/cpuinfo)"
	}
	defer f.Close()
	var model, family string
	sc := bufio.NewScanner(f)
	for sc.Scan() && (model == "" || family == "") {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		switch strings.TrimSpace(k) {
		case "model name":
			model = strings.TrimSpace(v)
		case "cpu family":
			family = strings.TrimSpace(v)
		}
	}
	if model == "" {
		return "unknown (/proc/cpuinfo names no model)"
	}
	if family != "" {
		return fmt.Sprintf("%s, family %s", model, family)
	}
	return model
}

func init() {
	if strings.Contains(os.Getenv("EAGERFLOW_DEBUG"), "kernels") {
		fmt.Fprintln(os.Stderr, Kernels())
	}
}
