package eager

import (
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/tensor"
)

// promoteWeak gives each weakly typed scalar among c's inputs (see
// tensor.IsWeak) the device of the first strong input and, where the op
// requires its inputs to share a dtype, that of the first strong input
// among those. Inputs all weak, or all strong, are left as they are, and
// so is a weak scalar that a tape watches or a trace follows: converting
// it would cut it from its gradient or its graph.
func promoteWeak(c *Call) {
	op := c.Op
	var dev device.Device
	group := tensor.Invalid
	weak := false
	for i, x := range c.Inputs {
		if x.IsWeak() {
			weak = true
			continue
		}
		if dev == nil {
			dev = x.Device()
		}
		if op.SameDTypes && i >= op.SameFrom && group == tensor.Invalid {
			group = x.DType()
		}
	}
	if !weak || dev == nil {
		return
	}
	for i, x := range c.Inputs {
		if !x.IsWeak() || x.Autodiff() != nil || x.Traced() != nil {
			continue
		}
		dt := x.DType()
		if op.SameDTypes && i >= op.SameFrom && group != tensor.Invalid {
			dt = group
		}
		if dt == x.DType() && x.Device() == dev {
			continue
		}
		c.Inputs[i] = weakAs(c, i, x, dt, dev)
	}
}

// weakAs is the weak scalar x (input i of c) as a strong dt scalar on dev,
// or fails c when dt cannot hold its value exactly (tensor.ScalarOf's
// rule).
func weakAs(c *Call, i int, x *tensor.Tensor, dt tensor.DType, dev device.Device) *tensor.Tensor {
	t, err := tensor.ScalarOf(dt, x.Item())
	if err != nil {
		c.Fail(tensor.ErrDType, "input %d, the scalar %v (%v), is not exactly a %v, the dtype of the inputs beside it", i, x.Item(), x.DType(), dt)
	}
	return onDevice(c, t, dev)
}

// onDevice copies t to dev unless it is there.
func onDevice(c *Call, t *tensor.Tensor, dev device.Device) *tensor.Tensor {
	if t.Device() == dev {
		return t
	}
	moved, err := t.To(dev)
	if err != nil {
		c.Fail(err, "cannot copy a scalar input to %s: %v", dev.Name(), err)
	}
	return moved
}
