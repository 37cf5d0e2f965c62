package tensor

import (
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/device"
)

// FromSliceOn and MustEmptyHost place their tensors where they say,
// whatever the default device.
func TestPlacedConstructors(t *testing.T) {
	other := device.SecondCPU()
	x := FromSliceOn(other, []float32{1, 2, 3, 4}, 2, 2)
	if x.Device() != other || !slices.Equal(ToSlice[float32](x), []float32{1, 2, 3, 4}) || !slices.Equal(x.Shape(), Shape{2, 2}) {
		t.Errorf("FromSliceOn: %v on %s", ToSlice[float32](x), x.Device().Name())
	}
	defer device.SetDefault(other)()
	if h := MustEmptyHost(Int32, Shape{3}); h.Device() != device.Host() {
		t.Errorf("MustEmptyHost on %s", h.Device().Name())
	}
	if d := FromSlice([]int64{5}); d.Device() != other {
		t.Errorf("FromSlice on %s, want the default %s", d.Device().Name(), other.Name())
	}
}
