package tensor

import (
	"testing"

	"github.com/eagerflow/eagerflow/device"
)

// fill, through Full and FillElems, over lengths around its hand-filled
// prefix and its copy block, for each element size.
func TestFillLengths(t *testing.T) {
	for _, n := range []int{0, 1, 15, 16, 17, 1023, 1024, 1025, 5000, 100003} {
		f32 := ToSlice[float32](Full(float32(2.5), n))
		u8 := make([]byte, n)
		device.FillElems(u8, []byte{7})
		i64 := ToSlice[int64](Full(int64(-3), n))
		for i := 0; i < n; i++ {
			if f32[i] != 2.5 || u8[i] != 7 || i64[i] != -3 {
				t.Fatalf("n=%d element %d: %v %v %v", n, i, f32[i], u8[i], i64[i])
			}
		}
	}
}
