package eager

import (
	"math"

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
// or fails c when dt cannot hold its value exactly.
func weakAs(c *Call, i int, x *tensor.Tensor, dt tensor.DType, dev device.Device) *tensor.Tensor {
	v := x.Item()
	fail := func() {
		c.Fail(tensor.ErrDType, "input %d, the scalar %v (%v), is not exactly a %v, the dtype of the inputs beside it", i, v, x.DType(), dt)
	}
	if b, ok := v.(bool); ok || dt == tensor.Bool {
		if !ok || dt != tensor.Bool {
			fail()
		}
		return onDevice(c, tensor.Full(b), dev)
	}
	var f float64
	var n int64
	isInt := true
	switch v := v.(type) {
	case float32:
		f, isInt = float64(v), false
	case float64:
		f, isInt = v, false
	case int32:
		n = int64(v)
	case int64:
		n = v
	case uint8:
		n = int64(v)
	}
	if dt.IsFloat() {
		if isInt {
			f = float64(n)
		}
		return tensor.FullOn(dev, dt, f) // rounded to float32 there
	}
	if !isInt {
		if f != math.Trunc(f) || math.Abs(f) > 1<<62 {
			fail()
		}
		n = int64(f)
	}
	switch dt {
	case tensor.Int32:
		if n != int64(int32(n)) {
			fail()
		}
		return onDevice(c, tensor.Full(int32(n)), dev)
	case tensor.Uint8:
		if n != int64(uint8(n)) {
			fail()
		}
		return onDevice(c, tensor.Full(uint8(n)), dev)
	}
	return onDevice(c, tensor.Full(n), dev)
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
