package kernels

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
)

// The copy kernel moves every element of strided and broadcast
// geometries where the offsets say, on the narrow path and on the wide
// one (forced here by clearing the flag: tensors of 2^31 elements do not
// fit the emulator).
func TestStridedCopyBothPaths(t *testing.T) {
	e := newEmuEnv(t)
	f := e.kernel("copy", "copy_b32")
	cases := []struct {
		shape   []int
		dst     []int
		src     []int
		offsets []int
	}{
		{[]int{3, 4, 5}, []int{20, 5, 1}, []int{1, 3, 12}, []int{2, 5}},                                           // a transpose
		{[]int{3, 4, 5}, []int{20, 5, 1}, []int{0, 1, 0}, []int{0, 1}},                                            // a broadcast
		{[]int{2, 1, 3, 2}, []int{6, 6, 2, 1}, []int{1, 7, 2, 9}, nil},                                            // a unit dimension
		{[]int{2, 3, 2, 2, 2, 2, 2, 2}, []int{96, 32, 16, 8, 4, 2, 1, 0}, []int{1, 2, 6, 12, 24, 48, 96, 0}, nil}, // rank 8
		{[]int{7}, []int{2}, []int{3}, []int{1, 0}},
	}
	for _, c := range cases {
		for _, narrow := range []bool{true, false} {
			checkCopy(e, f, c.shape, c.dst, c.src, c.offsets, narrow)
		}
	}
}

// checkCopy runs copy_b32 over the geometry and compares with the copy
// Go computes from the unmerged strides.
func checkCopy(e *emuEnv, f cu.Function, shape, dstSt, srcSt, offs []int, narrow bool) {
	e.t.Helper()
	n := 1
	for _, d := range shape {
		n *= d
	}
	o := append(offs, 0, 0)[:2]
	span := func(st []int, off int) int { // the elements a buffer needs
		hi := off
		for d, size := range shape {
			hi += (size - 1) * st[d]
		}
		return hi + 1
	}
	src := make([]uint32, span(srcSt, o[1]))
	for i := range src {
		src[i] = uint32(1000 + i)
	}
	want := make([]uint32, span(dstSt, o[0]))
	for i := range want {
		want[i] = math.MaxUint32
	}
	dp, sp := e.upload(want), e.upload(src)
	for i := range n {
		di, si, rem := o[0], o[1], i
		for d := len(shape) - 1; d >= 0; d-- {
			c := rem % shape[d]
			rem /= shape[d]
			di += c * dstSt[d]
			si += c * srcSt[d]
		}
		want[di] = src[si]
	}
	g := Geometry(shape, [][]int{dstSt, srcSt}, offs)
	if !narrow {
		binary.LittleEndian.PutUint64(g[geomNarrow:], 0)
	}
	e.launch(f, cu.Dim3{X: 2, Y: 1, Z: 1}, cu.Dim3{X: 32, Y: 1, Z: 1}, new(cu.Args).Ptr(dp).Ptr(sp).U64(uint64(n)).Bytes(g, 8))
	for i, got := range e.download(dp, len(want)) {
		if got != want[i] {
			e.t.Fatalf("shape %v, dst strides %v, src strides %v, narrow %v: dst[%d] = %d, want %d", shape, dstSt, srcSt, narrow, i, got, want[i])
		}
	}
}
