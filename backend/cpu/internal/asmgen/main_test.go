package main

import (
	"bytes"
	"os"
	"testing"
)

// The committed assembly and Go declarations are what the generator
// writes: an edit to either alone fails here (run `go generate ./backend/cpu`).
func TestCommittedFilesAreGenerated(t *testing.T) {
	for file, want := range map[string][]byte{"gemm_amd64.s": generate(), "gemm_kernels_amd64.go": generateGo(), "gemm_bf16_amd64.s": generateBF16(), "half_amd64.s": generateHalf()} {
		committed, err := os.ReadFile("../../" + file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(committed, want) {
			t.Errorf("backend/cpu/%s differs from the generator's output; run `go generate ./backend/cpu`", file)
		}
	}
}

// VDPBF16PS's encoding, against GNU as's for registers that set every
// extension bit (AT&T order there: src2, src1, dst).
func TestVDPBF16PSEncoding(t *testing.T) {
	for _, c := range []struct {
		dst, src1, src2 int
		want            []byte
	}{
		{0, 26, 5, []byte{0x62, 0xf2, 0x2e, 0x40, 0x52, 0xc5}},   // vdpbf16ps %zmm5,%zmm26,%zmm0
		{23, 30, 31, []byte{0x62, 0x82, 0x0e, 0x40, 0x52, 0xff}}, // vdpbf16ps %zmm31,%zmm30,%zmm23
		{10, 9, 8, []byte{0x62, 0x52, 0x36, 0x48, 0x52, 0xd0}},   // vdpbf16ps %zmm8,%zmm9,%zmm10
	} {
		if got := vdpbf16ps(c.dst, c.src1, c.src2); !bytes.Equal(got, c.want) {
			t.Errorf("VDPBF16PS Z%d, Z%d, Z%d: % x, want % x", c.src2, c.src1, c.dst, got, c.want)
		}
	}
	for _, c := range []struct {
		dst, src int
		want     []byte
	}{
		{1, 0, []byte{0x62, 0xf2, 0x7e, 0x48, 0x72, 0xc8}},   // vcvtneps2bf16 %zmm0,%ymm1
		{20, 17, []byte{0x62, 0xa2, 0x7e, 0x48, 0x72, 0xe1}}, // vcvtneps2bf16 %zmm17,%ymm20
		{8, 9, []byte{0x62, 0x52, 0x7e, 0x48, 0x72, 0xc1}},   // vcvtneps2bf16 %zmm9,%ymm8
	} {
		if got := vcvtneps2bf16(c.dst, c.src); !bytes.Equal(got, c.want) {
			t.Errorf("VCVTNEPS2BF16 Z%d, Y%d: % x, want % x", c.src, c.dst, got, c.want)
		}
	}
}
