package tensor

import "testing"

// fill, through Full and FillElems, over lengths around its hand-filled
// prefix and its copy block, for each element size.
func TestFillLengths(t *testing.T) {
	for _, n := range []int{0, 1, 15, 16, 17, 1023, 1024, 1025, 5000, 100003} {
		f32 := ToSlice[float32](Full(float32(2.5), n))
		u8 := make([]byte, n)
		FillElems(Uint8, u8, []byte{7})
		i64 := ToSlice[int64](Full(int64(-3), n))
		for i := 0; i < n; i++ {
			if f32[i] != 2.5 || u8[i] != 7 || i64[i] != -3 {
				t.Fatalf("n=%d element %d: %v %v %v", n, i, f32[i], u8[i], i64[i])
			}
		}
	}
}

// A stand-in without values keeps dtype, shape and device, refuses reads
// with ErrDropped, and ignores Release.
func TestWithoutValues(t *testing.T) {
	x := Full(float32(3), 2, 3)
	d := x.WithoutValues()
	if !d.ValuesDropped() || x.ValuesDropped() {
		t.Fatal("ValuesDropped is wrong")
	}
	if !d.Shape().Equal(x.Shape()) || d.DType() != x.DType() || d.Device() != x.Device() {
		t.Fatalf("stand-in %v %v on %v, tensor %v %v on %v", d.DType(), d.Shape(), d.Device().Name(), x.DType(), x.Shape(), x.Device().Name())
	}
	d.Release()
	func() {
		defer func() {
			e, ok := recover().(*Error)
			if !ok || e.Kind != ErrDropped {
				t.Errorf("reading a stand-in: %v, want an ErrDropped *Error", e)
			}
		}()
		HostData[float32](d)
	}()
	if got := ToSlice[float32](x); got[5] != 3 {
		t.Errorf("the tensor itself lost its values: %v", got)
	}
}
