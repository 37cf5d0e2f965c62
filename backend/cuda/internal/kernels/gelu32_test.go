package kernels

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"testing"
)

// cpuConsts reads the CONST8 constants (float32 bits) of a CPU assembly
// file of backend/cpu, by name.
func cpuConsts(t *testing.T, file string) map[string]uint32 {
	t.Helper()
	src, err := os.ReadFile("../../../cpu/" + file)
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]uint32{}
	for _, m := range regexp.MustCompile(`CONST8\((\w+), 0x([0-9a-f]{8})\)`).FindAllStringSubmatch(string(src), -1) {
		v, _ := strconv.ParseUint(m[2], 16, 32)
		consts[m[1]] = uint32(v)
	}
	return consts
}

// checkConsts fails t where a want constant is not the CPU's.
func checkConsts(t *testing.T, file string, want map[string]uint32) {
	t.Helper()
	consts := cpuConsts(t, file)
	for name, w := range want {
		if got, ok := consts[name]; !ok || got != w {
			t.Errorf("%s: the CPU's %#08x (found %v), the GPU's %#08x", name, got, ok, w)
		}
	}
}

// named is a coefficient list's names, prefix0, prefix1, ...
func named(prefix string, c []uint32, into map[string]uint32) map[string]uint32 {
	for i, v := range c {
		into[fmt.Sprintf("%s%d", prefix, i)] = v
	}
	return into
}

// The GPU's float32 Φ takes the CPU's vector Φ's constants (sphi8 in
// backend/cpu/math_erf_amd64.s), read from there.
func TestPhi32ConstantsAreTheCPUs(t *testing.T) {
	want := map[string]uint32{"phiScale": phi32Scale, "phiShift": phi32Shift,
		"phiSplit": math.Float32bits(phi32Split), "phiClamp": math.Float32bits(phi32Clamp)}
	checkConsts(t, "math_erf_amd64.s", named("phiR", phi32R, named("phiP", phi32P, want)))
}

// The GPU's float32 tanh takes the CPU's vector tanh's (stanh8 in
// backend/cpu/math_tanh_amd64.s).
func TestTanh32ConstantsAreTheCPUs(t *testing.T) {
	want := map[string]uint32{"tanhSmall": math.Float32bits(tanh32Small), "tanhClamp": math.Float32bits(tanh32Clamp)}
	checkConsts(t, "math_tanh_amd64.s", named("tanhP", tanh32P, want))
}

// The GPU's float32 erf takes the CPU's vector erf's (serf8 in
// backend/cpu/math_erf_amd64.s).
func TestErf32ConstantsAreTheCPUs(t *testing.T) {
	want := map[string]uint32{"erfClamp": math.Float32bits(erf32Clamp)}
	checkConsts(t, "math_erf_amd64.s", named("erfB", erf32B, named("erfS", erf32S, want)))
}

// The GPU's float32 log takes the CPU's two parts of ln 2
// (backend/cpu/math_amd64.h).
func TestLog32ConstantsAreTheCPUs(t *testing.T) {
	checkConsts(t, "math_amd64.h", map[string]uint32{"expLn2Hi": log32Ln2Hi, "expLn2Lo": log32Ln2Lo})
}
