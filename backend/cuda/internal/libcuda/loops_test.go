//go:build linux && (amd64 || arm64)

package libcuda

import (
	"testing"
	"unsafe"
)

// condNodeParams lays CUgraphNodeParams out as cuda.h does: the node type
// at 0, the union at 16 (CUDA_CONDITIONAL_NODE_PARAMS: handle, type,
// size, the body graphs' array, the context), 256 bytes in all.
func TestConditionalNodeParamsLayout(t *testing.T) {
	var p condNodeParams
	for _, f := range []struct {
		name      string
		got, want uintptr
	}{
		{"type", unsafe.Offsetof(p.typ), 0},
		{"conditional.handle", unsafe.Offsetof(p.handle), 16},
		{"conditional.type", unsafe.Offsetof(p.condType), 24},
		{"conditional.size", unsafe.Offsetof(p.size), 28},
		{"conditional.phGraph_out", unsafe.Offsetof(p.bodies), 32},
		{"conditional.ctx", unsafe.Offsetof(p.ctx), 40},
		{"sizeof", unsafe.Sizeof(p), 256},
	} {
		if f.got != f.want {
			t.Errorf("%s at %d, want %d", f.name, f.got, f.want)
		}
	}
}
