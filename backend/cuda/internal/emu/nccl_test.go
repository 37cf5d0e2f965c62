package emu

import (
	"slices"
	"testing"
	"unsafe"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
)

func bytesOf[T number](v ...T) []byte {
	var z T
	return append([]byte(nil), unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(unsafe.Sizeof(z)))...)
}

// The emulated reductions fold the ranks' parts in rank order, as
// written out here for each type and operation.
func TestNCCLReduce(t *testing.T) {
	f := [][]byte{bytesOf[float32](1, -2, 3), bytesOf[float32](4, 5, -6), bytesOf[float32](0.5, 2, 9)}
	for _, c := range []struct {
		op   cu.NCCLOp
		want []float32
	}{
		{cu.NCCLSum, []float32{5.5, 5, 6}}, {cu.NCCLProd, []float32{2, -20, -162}},
		{cu.NCCLMax, []float32{4, 5, 9}}, {cu.NCCLMin, []float32{0.5, -2, -6}}, {cu.NCCLAvg, []float32{5.5 / 3, 5.0 / 3, 2}},
	} {
		if got := elems[float32](reduce(f, cu.NCCLFloat32, c.op)); !slices.Equal(got, c.want) {
			t.Errorf("float32 op %d = %v, want %v", c.op, got, c.want)
		}
	}
	i := [][]byte{bytesOf[int64](7, -3), bytesOf[int64](2, -4)}
	if got := elems[int64](reduce(i, cu.NCCLInt64, cu.NCCLAvg)); !slices.Equal(got, []int64{4, -3}) {
		t.Errorf("int64 average = %v, want the truncated [4 -3]", got)
	}
	u := [][]byte{bytesOf[uint8](200, 1), bytesOf[uint8](100, 2)}
	if got := elems[uint8](reduce(u, cu.NCCLUint8, cu.NCCLSum)); !slices.Equal(got, []uint8{44, 3}) {
		t.Errorf("uint8 sum = %v, want [44 3] (wrapping)", got)
	}
	d := [][]byte{bytesOf[float64](1.5), bytesOf[float64](-2.25)}
	if got := elems[float64](reduce(d, cu.NCCLFloat64, cu.NCCLMin)); got[0] != -2.25 {
		t.Errorf("float64 min = %v", got)
	}
	if !slices.Equal(f[0], bytesOf[float32](1, -2, 3)) {
		t.Error("reduce changed its first part")
	}
}
