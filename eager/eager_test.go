package eager_test

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	_ "github.com/eagerflow/eagerflow/backend/cpu" // the kernels of the ops below
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// otherDevice is a stand-in second device holding plain byte buffers.
type otherDevice struct{}

type otherBuffer struct {
	b    []byte
	refs *atomic.Int32
}

func (otherBuffer) Device() device.Device { return otherDevice{} }
func (o otherBuffer) Size() int           { return len(o.b) }
func (o otherBuffer) Refs() *atomic.Int32 { return o.refs }

func (otherDevice) Name() string      { return "test:0" }
func (otherDevice) Kind() device.Kind { return device.GPU }
func (otherDevice) Alloc(n int) (device.Buffer, error) {
	return otherBuffer{make([]byte, n), new(atomic.Int32)}, nil
}
func (otherDevice) Free(device.Buffer) {}
func (otherDevice) CopyToHost(dst []byte, src device.Buffer, off int) error {
	copy(dst, src.(otherBuffer).b[off:])
	return nil
}
func (otherDevice) CopyFromHost(dst device.Buffer, off int, src []byte) error {
	copy(dst.(otherBuffer).b[off:], src)
	return nil
}
func (otherDevice) Copy(dst device.Buffer, dOff int, dSt []int, src device.Buffer, sOff int, sSt []int, shape []int, esize int) error {
	s, ok := src.(otherBuffer)
	if !ok {
		return device.ErrCopy
	}
	device.MoveElems(esize, dst.(otherBuffer).b, dOff, dSt, s.b, sOff, sSt, shape)
	return nil
}
func (otherDevice) Fill(dst device.Buffer, off, n int, v []byte) error {
	device.FillElems(dst.(otherBuffer).b[off*len(v):(off+n)*len(v)], v)
	return nil
}
func (otherDevice) Synchronize() error { return nil }

func TestInputsOnTwoDevicesFail(t *testing.T) {
	a := tensor.FromSlice([]float32{1, 2})
	b, err := a.To(otherDevice{})
	if err != nil {
		t.Fatal(err)
	}
	err = tensor.Catch(func() { ops.Add(a, b) })
	if !errors.Is(err, tensor.ErrDevice) || !strings.Contains(err.Error(), "cpu:0 and test:0") {
		t.Errorf("got %v", err)
	}
	// A device without kernels for the op says so, and where they are.
	err = tensor.Catch(func() { ops.Add(b, b) })
	if !errors.Is(err, tensor.ErrNoKernel) || !strings.Contains(err.Error(), "no float32 kernel on test:0 (gpu); devices with one: cpu") {
		t.Errorf("got %v", err)
	}
	// Copying back gives the values.
	back, err := b.To(device.Host())
	if err != nil || tensor.ToSlice[float32](back)[1] != 2 {
		t.Errorf("round trip: %v %v", back, err)
	}
}

// An op no device has a kernel for says so where the device's backend is
// linked in, and names the backend to link where it is not (this test
// binary links the CPU's and no GPU's; a portable kernel registered for
// one op, as control/trace registers its guards, links no backend).
func TestNoKernelNamesAMissingBackend(t *testing.T) {
	op := eager.Register(&eager.Op{
		Name: "NoKernelsForTest", Inputs: 1, NonDifferentiable: true,
		Infer: func(c *eager.Call) []eager.Out { return c.Out1(c.Inputs[0].DType(), c.Inputs[0].Shape()) },
	})
	eager.RegisterPortable("PortableForTest", tensor.Bool, func(*eager.Call, []*tensor.Tensor) {})
	a := tensor.FromSlice([]float32{1, 2})
	b, err := a.To(otherDevice{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		x    *tensor.Tensor
		want string
	}{
		{a, "no float32 kernel on cpu:0 (cpu); no device has one"},
		{b, "no float32 kernel on test:0 (gpu); no gpu backend is linked into this program"},
	} {
		err := tensor.Catch(func() { eager.Run1(op, nil, c.x) })
		if !errors.Is(err, tensor.ErrNoKernel) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("on %s: got %v, want %q", c.x.Device().Name(), err, c.want)
		}
	}
}

func TestCatchPassesOtherPanics(t *testing.T) {
	defer func() {
		if r := recover(); r != "boom" {
			t.Errorf("recovered %v", r)
		}
	}()
	_ = tensor.Catch(func() { panic("boom") })
}

func TestFailedOpLeavesInputsUnchanged(t *testing.T) {
	x := tensor.FromSlice([]float32{1, 2, 3})
	_ = tensor.Catch(func() { ops.Concatenate(0, x, tensor.Zeros(tensor.Float32, 2, 2)) })
	if got := tensor.ToSlice[float32](x); got[0] != 1 || got[2] != 3 {
		t.Errorf("input changed: %v", got)
	}
}

// A kernel that fails with a runtime error (a bug, here on purpose, on
// the calling goroutine or on a worker of the CPU device) gives a typed
// ErrInternal that Catch recovers, naming the op, with the kernel's stack.
func TestKernelRuntimeErrorIsRecoverable(t *testing.T) {
	for _, parallel := range []bool{false, true} {
		op := eager.Register(&eager.Op{
			Name: fmt.Sprintf("BrokenForTest%v", parallel), Inputs: 1, NonDifferentiable: true,
			Infer: func(c *eager.Call) []eager.Out { return c.Out1(c.Inputs[0].DType(), c.Inputs[0].Shape()) },
		})
		eager.RegisterKernel(op.Name, device.CPU, tensor.Float32, func(c *eager.Call, outs []*tensor.Tensor) {
			o := tensor.HostData[float32](outs[0])
			if !parallel {
				_ = o[len(o)+1-1+len(c.Inputs)] // out of range
				return
			}
			device.Host().Parallel(len(o), 1e5, func(lo, hi int) {
				if hi == len(o) {
					var p *int
					_ = *p
				}
			})
		})
		x := tensor.Zeros(tensor.Float32, 1000)
		err := tensor.Catch(func() { eager.Run1(op, nil, x) })
		if !errors.Is(err, tensor.ErrInternal) || !strings.Contains(err.Error(), ": its cpu float32 kernel failed: runtime error") ||
			!strings.Contains(err.Error(), "eager_test.go") {
			t.Errorf("parallel=%v: got %v", parallel, err)
		}
	}
}

// Tensors on the second CPU device run there: results, constants and
// layout copies stay on cpu:1, mixing the two devices is a placement
// error, and values cross between them exactly.
func TestSecondCPUDevicePlacement(t *testing.T) {
	cpu1 := device.SecondCPU()
	x0 := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	x1, err := x0.To(cpu1)
	if err != nil || x1.Device() != device.Device(cpu1) {
		t.Fatalf("To(cpu:1): %v on %v", err, x1.Device().Name())
	}
	y := ops.Add(ops.Transpose(x1), ops.ScalarLike(x1, 10))
	if y.Device() != device.Device(cpu1) {
		t.Errorf("result on %s", y.Device().Name())
	}
	if got := tensor.ToSlice[float32](y); got[1] != 14 || got[5] != 16 {
		t.Errorf("values %v", got)
	}
	if c := ops.Transpose(x1).Contiguous(); c.Device() != device.Device(cpu1) {
		t.Errorf("Contiguous moved to %s", c.Device().Name())
	}
	err = tensor.Catch(func() { ops.Add(x0, x1) })
	if !errors.Is(err, tensor.ErrDevice) || !strings.Contains(err.Error(), "inputs are on cpu:0 and cpu:1") {
		t.Errorf("mixed devices: %v", err)
	}
	back, err := y.To(device.Host())
	if err != nil || back.Device() != device.Device(device.Host()) || tensor.ToSlice[float32](back)[5] != 16 {
		t.Errorf("back to cpu:0: %v", err)
	}
}
