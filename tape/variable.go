package tape

import (
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Variable is the one mutable kind of tensor: a named buffer that optimizers
// update in place. Every tape watches variables without being asked. Ops
// read the variable's value when they run; views of it (Reshape, Transpose,
// Identity) are snapshot copies, so later assignments do not change them.
//
// Assignments are not recorded on tapes and are not synchronized: do not
// assign while another goroutine runs ops on the variable.
type Variable struct {
	name string
	t    *tensor.Tensor
}

// NewVariable returns a variable named name holding a copy of init, on
// init's device.
func NewVariable(name string, init *tensor.Tensor) *Variable {
	t, err := tensor.Empty(init.Device(), init.DType(), init.Shape().Clone())
	if err != nil {
		panic(err)
	}
	writeInto(t, init.Contiguous())
	t.SetFlags(tensor.FlagVariable)
	return &Variable{name: name, t: t}
}

// Name returns the variable's name.
func (v *Variable) Name() string { return v.name }

// Value returns the tensor that holds the variable. It is the same tensor
// for the variable's whole life (so tapes and traced functions can refer to
// it); its elements change on assignment.
func (v *Variable) Value() *tensor.Tensor { return v.t }

// String formats the variable's name and value.
func (v *Variable) String() string { return v.name + " = " + v.t.String() }

func (v *Variable) check(op string, x *tensor.Tensor) {
	in := []*tensor.Tensor{v.t, x}
	switch {
	case x.DType() != v.t.DType():
		tensor.Panicf("tape", op, tensor.ErrDType, in, "", "variable %q is %v, value is %v", v.name, v.t.DType(), x.DType())
	case !x.Shape().Equal(v.t.Shape()):
		tensor.Panicf("tape", op, tensor.ErrShape, in, "", "variable %q has shape %v, value has %v", v.name, v.t.Shape(), x.Shape())
	case x.Device() != v.t.Device():
		tensor.Panicf("tape", op, tensor.ErrDevice, in, "", "variable %q is on %s, value on %s", v.name, v.t.Device().Name(), x.Device().Name())
	}
}

// writeInto copies src's elements into dst's buffer (same device).
func writeInto(dst, src *tensor.Tensor) {
	if n := src.NumElements() * src.DType().Size(); n > 0 {
		host := make([]byte, n)
		if err := src.Device().CopyToHost(host, src.Buffer(), 0); err != nil {
			panic(err)
		}
		if err := dst.Device().CopyFromHost(dst.Buffer(), 0, host); err != nil {
			panic(err)
		}
	}
}

// Assign sets the variable to x (same dtype, shape and device; panics with a
// *tensor.Error otherwise, leaving the variable unchanged).
func (v *Variable) Assign(x *tensor.Tensor) {
	v.check("Assign", x)
	writeInto(v.t, x.Contiguous())
}

// AssignAdd adds x to the variable in place.
func (v *Variable) AssignAdd(x *tensor.Tensor) { v.AssignScaled(1, x) }

// AssignSub subtracts x from the variable in place.
func (v *Variable) AssignSub(x *tensor.Tensor) { v.AssignScaled(-1, x) }

// AssignScaled adds alpha*x to the variable in place (the SGD update with
// alpha = -learning rate), without allocating on the CPU for float dtypes.
func (v *Variable) AssignScaled(alpha float64, x *tensor.Tensor) {
	v.check("AssignScaled", x)
	x = x.Contiguous()
	if _, onHost := v.t.Buffer().(interface{ Bytes() []byte }); onHost {
		switch v.t.DType() {
		case tensor.Float32:
			ops.AxpyInPlace(tensor.HostData[float32](v.t), float32(alpha), tensor.HostData[float32](x))
			return
		case tensor.Float64:
			ops.AxpyInPlace(tensor.HostData[float64](v.t), alpha, tensor.HostData[float64](x))
			return
		}
	}
	writeInto(v.t, ops.Add(v.t, ops.Mul(x, ops.ScalarLike(x, alpha))))
}
