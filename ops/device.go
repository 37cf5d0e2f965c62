package ops

import (
	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/plumb"
	"github.com/eagerflow/eagerflow/tensor"
)

// DeviceAttrs names the device ToDevice copies to.
//
// Deprecated: a backend's (package backend/opattr); ops' own calls build it.
type DeviceAttrs = opattr.DeviceAttrs

var toDeviceOp *eager.Op

func init() {
	toDeviceOp = eager.Register(&eager.Op{
		Name: "ToDevice", Inputs: 1, AnyLayout: true, ViewOwns: true,
		Infer: func(c *eager.Call) []eager.Out {
			if a, ok := c.Attrs.(opattr.DeviceAttrs); !ok || a.Device == nil {
				c.Fail(tensor.ErrAttr, "needs a device to copy to")
			}
			return c.Out1(c.Inputs[0].DType(), c.Inputs[0].Shape())
		},
		// The copy is the op's whole work, on whichever devices it joins,
		// so it is a view of its own: a fresh buffer on the target.
		View: func(c *eager.Call, specs []eager.Out) []*tensor.Tensor {
			x, dev := c.Inputs[0], c.Attrs.(opattr.DeviceAttrs).Device
			if dev == x.Device() { // a copy all the same: the output is not x
				return []*tensor.Tensor{sameDeviceCopy(c, x)}
			}
			out, err := plumb.Tensor.Move(x, dev)
			if err != nil {
				c.Fail(err, "copying %v from %s to %s: %v", x.Shape(), x.Device().Name(), dev.Name(), err)
			}
			return []*tensor.Tensor{out.(*tensor.Tensor)}
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			return []*tensor.Tensor{ToDevice(g.OutGrads[0], g.Inputs[0].Device())}
		},
		GradReads: eager.ReadsNothing,
	})
	plumb.RecordedContiguous = func(t any) any { return Identity(t.(*tensor.Tensor)) } // dispatch copies it row-major
	plumb.RecordedTo = func(t, dev any) (out any, err error) {
		err = tensor.Catch(func() { out = ToDevice(t.(*tensor.Tensor), dev.(device.Device)) })
		return out, err
	}
}

// ToDevice returns x copied to dev, in x's layout: x.To(dev) as an op, so
// that a tape differentiates through it (the gradient is copied back to
// x's device) and a trace records it (tensor.Tensor.To calls it for the
// tensors tapes and traces follow). x itself when it is on dev already.
// Errors of the devices (out of memory, a copy that failed) panic with a
// *tensor.Error wrapping them.
func ToDevice(x *tensor.Tensor, dev device.Device) *tensor.Tensor {
	if x != nil && x.Device() == dev {
		return x
	}
	return eager.Run1(toDeviceOp, opattr.DeviceAttrs{Device: dev}, x)
}

// sameDeviceCopy is a row-major copy of x on its own device.
func sameDeviceCopy(c *eager.Call, x *tensor.Tensor) *tensor.Tensor {
	dev := x.Device()
	out, err := tensor.Empty(dev, x.DType(), x.Shape())
	if err != nil {
		c.Fail(err, "cannot allocate its output %v%v on %s: %v", x.DType(), x.Shape(), dev.Name(), err)
	}
	src, dst := tensor.Strides(x.Shape(), x.Layout()), tensor.Strides(x.Shape(), nil)
	if err := dev.Copy(out.Buffer(), 0, dst, x.Buffer(), 0, src, x.Shape(), x.DType().Size()); err != nil {
		out.Release()
		c.Fail(err, "copying %v on %s: %v", x.Shape(), dev.Name(), err)
	}
	return out
}
