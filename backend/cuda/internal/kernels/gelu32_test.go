package kernels

import (
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"testing"
)

// The GPU's float32 Φ takes the CPU's vector Φ's constants (sphi8 in
// backend/cpu/math_erf_amd64.s), read from there.
func TestPhi32ConstantsAreTheCPUs(t *testing.T) {
	src, err := os.ReadFile("../../../cpu/math_erf_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	consts := map[string]uint32{}
	for _, m := range regexp.MustCompile(`CONST8\((phi\w+), 0x([0-9a-f]{8})\)`).FindAllStringSubmatch(string(src), -1) {
		v, _ := strconv.ParseUint(m[2], 16, 32)
		consts[m[1]] = uint32(v)
	}
	want := map[string]uint32{"phiScale": phi32Scale, "phiShift": phi32Shift,
		"phiSplit": math.Float32bits(phi32Split), "phiClamp": math.Float32bits(phi32Clamp)}
	for i, c := range phi32P {
		want[fmt.Sprintf("phiP%d", i)] = c
	}
	for i, c := range phi32R {
		want[fmt.Sprintf("phiR%d", i)] = c
	}
	for name, w := range want {
		if got, ok := consts[name]; !ok || got != w {
			t.Errorf("%s: the CPU's %#08x (found %v), the GPU's %#08x", name, got, ok, w)
		}
	}
}
