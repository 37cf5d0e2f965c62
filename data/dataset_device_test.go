package data

import (
	"context"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/tensor"
)

// To copies each component to the device, leaves those already there as
// they are, and reports a nil device at the first element.
func TestToDevice(t *testing.T) {
	other := device.NewHostDevice("cpu:7", device.CPU)
	ds, err := FromSlices(tensor.Arange[float32](0, 6, 1), tensor.Arange[int32](0, 6, 1))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for e, err := range ds.Batch(4, false).To(other).All(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		for i, c := range e {
			if c.Device() != other {
				t.Errorf("batch %d component %d is on %s, want cpu:7", n, i, c.Device())
			}
		}
		if got := tensor.ToSlice[float32](e[0]); got[0] != float32(4*n) {
			t.Errorf("batch %d starts at %v", n, got[0])
		}
		n++
	}
	if n != 2 {
		t.Errorf("%d batches, want 2", n)
	}
	for e, err := range ds.To(device.Host()).Take(1).All(context.Background()) {
		if err != nil || e[0].Device() != device.Host() {
			t.Errorf("to the host: %v on %v", err, e[0].Device())
		}
	}
	for _, err := range ds.To(nil).All(context.Background()) {
		if err == nil || !strings.Contains(err.Error(), "data: To: the device is nil") {
			t.Errorf("a nil device: %v", err)
		}
		break
	}
}
