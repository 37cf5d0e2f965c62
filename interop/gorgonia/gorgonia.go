// Package gorgonia converts between eagerflow tensors and the Dense arrays of
// gorgonia.org/tensor, the ndarray type Gorgonia users already hold. It is a
// package of its own so that programs that do not need it do not link
// Gorgonia.
//
// Conversions share memory whenever they can: a row-major CPU tensor with
// elements becomes a Dense over the same bytes, and a contiguous Dense
// becomes a tensor over the same bytes. A shared buffer must then not be
// changed through the Dense while eagerflow uses it (eagerflow tensors are
// immutable, and nothing in eagerflow writes into a tensor it did not
// allocate). Scalars, empty tensors, non-row-major tensors and Dense views
// that need an iterator are copied.
package gorgonia

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/eagerflow/eagerflow/backend"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/tensor"
	gt "gorgonia.org/tensor"
)

// ErrUnsupported reports a dtype or placement that has no counterpart.
var ErrUnsupported = errors.New("gorgonia: unsupported conversion")

// ToDense returns a Dense with t's dtype, shape and elements. It shares
// t's memory when t is a row-major CPU tensor with at least one element and
// rank at least one. t must be on the CPU.
func ToDense(t *tensor.Tensor) (*gt.Dense, error) {
	if t == nil {
		return nil, errors.New("gorgonia: ToDense: the tensor is nil")
	}
	if t.Device().Kind() != device.CPU {
		return nil, fmt.Errorf("%w: tensor is on %s; copy it to the CPU first", ErrUnsupported, t.Device().Name())
	}
	t = t.Contiguous()
	if t.Rank() == 0 {
		return gt.New(gt.FromScalar(t.Item())), nil
	}
	var backing any
	switch t.DType() {
	case tensor.Float32:
		backing = shared[float32](t)
	case tensor.Float64:
		backing = shared[float64](t)
	case tensor.Int32:
		backing = shared[int32](t)
	case tensor.Int64:
		backing = shared[int64](t)
	case tensor.Uint8:
		backing = shared[uint8](t)
	case tensor.Bool:
		backing = shared[bool](t)
	default:
		return nil, fmt.Errorf("%w: dtype %v", ErrUnsupported, t.DType())
	}
	return gt.New(gt.WithShape(t.Shape().Clone()...), gt.WithBacking(backing)), nil
}

// shared returns t's elements without copying (a fresh slice when empty),
// read as the user's (HostBytes: a trace learns of the read).
func shared[T tensor.Elem](t *tensor.Tensor) []T {
	if t.NumElements() == 0 {
		return []T{}
	}
	t.HostBytes()
	return backend.HostData[T](t)
}

// FromDense returns a CPU tensor with d's dtype, shape and elements,
// sharing d's memory when d is contiguous and needs no iterator.
func FromDense(d *gt.Dense) (*tensor.Tensor, error) {
	if d == nil {
		return nil, errors.New("gorgonia: FromDense: the Dense is nil")
	}
	var dt tensor.DType
	switch d.Dtype() {
	case gt.Float32:
		dt = tensor.Float32
	case gt.Float64:
		dt = tensor.Float64
	case gt.Int32:
		dt = tensor.Int32
	case gt.Int64:
		dt = tensor.Int64
	case gt.Uint8:
		dt = tensor.Uint8
	case gt.Bool:
		dt = tensor.Bool
	default:
		return nil, fmt.Errorf("%w: dtype %v", ErrUnsupported, d.Dtype())
	}
	shape := tensor.Shape(d.Shape().Clone())
	if d.IsScalar() {
		shape = nil
	}
	if d.IsScalar() || d.RequiresIterator() {
		c := d.Materialize().(*gt.Dense)
		if d.IsScalar() {
			c = d
		}
		return copied(dt, shape, c)
	}
	raw, err := rawBytes(d.Data(), dt)
	if err != nil {
		return nil, err
	}
	return backend.FromBuffer(device.Host().WrapHost(raw), dt, shape)
}

func copied(dt tensor.DType, shape tensor.Shape, d *gt.Dense) (*tensor.Tensor, error) {
	var data any = d.Data()
	if d.IsScalar() {
		data = scalarSlice(d.Data())
	}
	raw, err := rawBytes(data, dt)
	if err != nil {
		return nil, err
	}
	out, err := tensor.Empty(device.Host(), dt, shape)
	if err != nil {
		return nil, err
	}
	copy(out.HostBytes(), raw)
	return out, nil
}

func scalarSlice(v any) any {
	switch x := v.(type) {
	case float32:
		return []float32{x}
	case float64:
		return []float64{x}
	case int32:
		return []int32{x}
	case int64:
		return []int64{x}
	case uint8:
		return []uint8{x}
	case bool:
		return []bool{x}
	}
	return v
}

func rawBytes(data any, dt tensor.DType) ([]byte, error) {
	switch s := data.(type) {
	case []float32:
		return bytesOf(s), nil
	case []float64:
		return bytesOf(s), nil
	case []int32:
		return bytesOf(s), nil
	case []int64:
		return bytesOf(s), nil
	case []uint8:
		return s, nil
	case []bool:
		return bytesOf(s), nil
	}
	return nil, fmt.Errorf("%w: backing %T for dtype %v", ErrUnsupported, data, dt)
}

func bytesOf[T tensor.Elem](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(z)))
}
