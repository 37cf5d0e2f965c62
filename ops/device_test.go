package ops_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// ToDevice copies values and layout to the target; on the tensor's own
// device it is the tensor itself.
func TestToDeviceValues(t *testing.T) {
	other := device.SecondCPU()
	x := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	if ops.ToDevice(x, x.Device()) != x {
		t.Error("ToDevice to x's own device is not x")
	}
	y := ops.ToDevice(x, other)
	if y.Device() != other || !slices.Equal(tensor.ToSlice[float32](y), []float32{1, 2, 3, 4, 5, 6}) {
		t.Errorf("ToDevice = %v on %s", tensor.ToSlice[float32](y), y.Device().Name())
	}
	xt := x.View(tensor.Shape{3, 2}, tensor.Layout{0, 1})
	yt := ops.ToDevice(xt, other)
	if !slices.Equal(yt.Layout(), xt.Layout()) || !slices.Equal(tensor.ToSlice[float32](yt), tensor.ToSlice[float32](xt)) {
		t.Errorf("a transposed view: layout %v values %v", yt.Layout(), tensor.ToSlice[float32](yt))
	}
	// Replayed on its own device (as a graph replays it), the op copies.
	again := eager.Run1(eager.Lookup("ToDevice"), opattr.DeviceAttrs{Device: other}, y)
	if again == y || again.Buffer() == y.Buffer() || !slices.Equal(tensor.ToSlice[float32](again), tensor.ToSlice[float32](y)) {
		t.Errorf("the op on the target device itself: %v, a copy of its input wanted", again)
	}
}

// The gradient crosses back: a loss computed on cpu:1 from x on cpu:0
// gives x's gradient on cpu:0, through ops.ToDevice and through
// tensor.To alike (To records the op for tensors a tape follows), for a
// variable too.
func TestToDeviceGradient(t *testing.T) {
	other := device.SecondCPU()
	x := tensor.FromSlice([]float64{1, -2, 3})
	v := tape.NewVariable("v", tensor.FromSlice([]float64{0.5, 4}))
	for _, viaTo := range []bool{false, true} {
		tp := tape.New()
		tp.Watch(x)
		move := func(a *tensor.Tensor) *tensor.Tensor {
			if !viaTo {
				return ops.ToDevice(a, other)
			}
			b, err := a.To(other)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		loss := ops.Add(ops.Sum(ops.Square(move(x))), ops.Sum(ops.Mul(move(v.Value()), tensor.Scalar(3.0))))
		if loss.Device() != other {
			t.Fatalf("loss on %s", loss.Device().Name())
		}
		g := tp.Gradient(loss, x, v.Value())
		if g[0].Device() != device.Host() || !slices.Equal(tensor.ToSlice[float64](g[0]), []float64{2, -4, 6}) {
			t.Errorf("via To %v: d/dx = %v on %s", viaTo, tensor.ToSlice[float64](g[0]), g[0].Device().Name())
		}
		if g[1] == nil || !slices.Equal(tensor.ToSlice[float64](g[1]), []float64{3, 3}) {
			t.Errorf("via To %v: d/dv = %v", viaTo, g[1])
		}
	}
	if r := tape.CheckGradient(func(xs []*tensor.Tensor) *tensor.Tensor {
		return ops.ToDevice(ops.Sum(ops.Tanh(ops.ToDevice(xs[0], other))), device.Host())
	}, []*tensor.Tensor{x}, 1e-6); r.MaxError > 1e-6 {
		t.Errorf("gradient check: %v", r)
	}
}

func TestToDeviceBadInput(t *testing.T) {
	err := tensor.Catch(func() { eager.Run1(eager.Lookup("ToDevice"), opattr.DeviceAttrs{}, tensor.FromSlice([]float32{1})) })
	if !errors.Is(err, tensor.ErrAttr) {
		t.Errorf("no device: %v, want ErrAttr", err)
	}
	if err := tensor.Catch(func() { ops.ToDevice(nil, device.SecondCPU()) }); !errors.Is(err, tensor.ErrArity) {
		t.Errorf("nil input: %v, want ErrArity", err)
	}
}
