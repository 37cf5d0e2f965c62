package tensor

import "testing"

// A stand-in without values keeps dtype, shape and device, refuses reads
// with ErrDropped, and ignores Release.
func TestWithoutValues(t *testing.T) {
	x := Full(float32(3), 2, 3)
	d := x.withoutValues()
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
