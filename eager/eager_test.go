package eager_test

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

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
func (otherDevice) Synchronize() error { return nil }

func TestInputsOnTwoDevicesFail(t *testing.T) {
	a := tensor.FromSlice([]float32{1, 2})
	b, err := a.To(otherDevice{})
	if err != nil {
		t.Fatal(err)
	}
	err = eager.Catch(func() { ops.Add(a, b) })
	if !errors.Is(err, tensor.ErrDevice) || !strings.Contains(err.Error(), "cpu:0 and test:0") {
		t.Errorf("got %v", err)
	}
	// A device without kernels for the op says so, and where they are.
	err = eager.Catch(func() { ops.Add(b, b) })
	if !errors.Is(err, tensor.ErrNoKernel) || !strings.Contains(err.Error(), "no float32 kernel on test:0 (gpu); devices with one: cpu") {
		t.Errorf("got %v", err)
	}
	// Copying back gives the values.
	back, err := b.To(device.Host())
	if err != nil || tensor.ToSlice[float32](back)[1] != 2 {
		t.Errorf("round trip: %v %v", back, err)
	}
}

func TestCatchPassesOtherPanics(t *testing.T) {
	defer func() {
		if r := recover(); r != "boom" {
			t.Errorf("recovered %v", r)
		}
	}()
	_ = eager.Catch(func() { panic("boom") })
}

func TestFailedOpLeavesInputsUnchanged(t *testing.T) {
	x := tensor.FromSlice([]float32{1, 2, 3})
	_ = eager.Catch(func() { ops.Concatenate(0, x, tensor.Zeros(tensor.Float32, 2, 2)) })
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
		err := eager.Catch(func() { eager.Run1(op, nil, x) })
		if !errors.Is(err, tensor.ErrInternal) || !strings.Contains(err.Error(), ": its cpu float32 kernel failed: runtime error") ||
			!strings.Contains(err.Error(), "eager_test.go") {
			t.Errorf("parallel=%v: got %v", parallel, err)
		}
	}
}
