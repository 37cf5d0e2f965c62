package eager

import (
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/plumb"
	"github.com/eagerflow/eagerflow/tensor"
)

// promoteWeak gives each weakly typed scalar among c's inputs (see
// tensor.IsWeak) the device of the first strong input and, where the op
// requires its inputs to share a dtype, that of the first strong input
// among those. When every input is weak, they meet at the highest kind
// among them (bool < integer < float, as JAX joins weak types) and, within
// it, at the narrowest dtype present: a Go value typed float32 or int32
// decides over a literal's default float64 or int64, so Scalar(float32(2))
// times Scalar(0.5) is float32; they take the first one's device. Inputs all strong are left as they are, and so is a
// weak scalar that a tape watches or a trace follows: converting it would
// cut it from its gradient or its graph.
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
	if !weak {
		return
	}
	if dev == nil { // all weak: they meet at the widest dtype among them
		if !op.SameDTypes {
			return
		}
		dev = c.Inputs[0].Device()
		for _, x := range c.Inputs[op.SameFrom:] {
			dt := x.DType()
			if group == tensor.Invalid || weakKind(dt) > weakKind(group) ||
				(weakKind(dt) == weakKind(group) && dt.Size() < group.Size()) {
				group = dt
			}
		}
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
		c.Fail(tensor.ErrDType, "input %d, the scalar %v (%v), is not exactly %s, the dtype of the inputs beside it", i, x.Item(), x.DType(), plumb.WithArticle(dt.String()))
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

// weakKind orders the kinds of dtype for joining weak scalars: bool,
// integers, floats.
func weakKind(dt tensor.DType) int {
	switch {
	case dt == tensor.Bool:
		return 0
	case dt.IsFloat():
		return 2
	}
	return 1
}
