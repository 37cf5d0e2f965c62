package tensor

import (
	"math"
	"unsafe"

	"github.com/eagerflow/eagerflow/device"
)

func checkShape(op string, shape Shape) {
	if !shape.valid() {
		Panicf("tensor", op, ErrShape, nil, "", "negative dimension in shape %v", shape)
	}
}

// fromHost allocates a tensor on the default device and fills it with the
// row-major bytes produced by fill (which writes exactly the tensor's size).
func fromHost(dt DType, shape Shape, fill func(b []byte)) *Tensor {
	dev := device.Default()
	if cpu, ok := dev.(*device.CPUDevice); ok {
		t, err := Empty(cpu, dt, shape)
		if err != nil {
			panic(err)
		}
		fill(t.HostBytes())
		return t
	}
	b := make([]byte, shape.NumElements()*dt.Size())
	fill(b)
	t, err := Empty(dev, dt, shape)
	if err != nil {
		panic(err)
	}
	if err := dev.CopyFromHost(t.buf, 0, b); err != nil {
		panic(err)
	}
	return t
}

func asBytes[T Elem](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(z)))
}

// FromSlice returns a tensor holding a copy of data with the given shape (a
// vector of len(data) when no shape is given). It panics with an *Error if
// the shape does not hold len(data) elements.
func FromSlice[T Elem](data []T, shape ...int) *Tensor {
	s := Shape(shape)
	if len(shape) == 0 {
		s = Shape{len(data)}
	} else {
		s = s.Clone()
	}
	return withShape(data, s)
}

// withShape is FromSlice for an exact shape (nil is a scalar).
func withShape[T Elem](data []T, s Shape) *Tensor {
	checkShape("FromSlice", s)
	if s.NumElements() != len(data) {
		Panicf("tensor", "FromSlice", ErrShape, nil, "", "shape %v holds %d elements, got %d", s, s.NumElements(), len(data))
	}
	src := asBytes(data)
	return fromHost(DTypeOf[T](), s, func(b []byte) { copy(b, src) })
}

// Scalar returns a rank-0 tensor holding v.
func Scalar[T Elem](v T) *Tensor {
	return fromHost(DTypeOf[T](), nil, func(b []byte) { copy(b, asBytes([]T{v})) })
}

// Full returns a tensor of the given shape with every element v.
func Full[T Elem](v T, shape ...int) *Tensor {
	s := Shape(shape).Clone()
	checkShape("Full", s)
	return fromHost(DTypeOf[T](), s, func(b []byte) {
		if len(b) == 0 {
			return
		}
		fill(unsafe.Slice((*T)(unsafe.Pointer(&b[0])), s.NumElements()), v)
	})
}

// Zeros returns a tensor of dtype dt and the given shape filled with zeros
// (false for Bool).
func Zeros(dt DType, shape ...int) *Tensor {
	s := Shape(shape).Clone()
	checkShape("Zeros", s)
	if !dt.Valid() {
		Panicf("tensor", "Zeros", ErrDType, nil, "", "invalid dtype %v", dt)
	}
	return fromHost(dt, s, func(b []byte) { clear(b) })
}

// Ones returns a tensor of dtype dt and the given shape filled with ones
// (true for Bool).
func Ones(dt DType, shape ...int) *Tensor { return FullOf(dt, 1, shape...) }

// FullOf returns a tensor of dtype dt filled with v converted to dt (for
// Bool, v != 0).
func FullOf(dt DType, v float64, shape ...int) *Tensor {
	switch dt {
	case Float32:
		return Full(float32(v), shape...)
	case Float64:
		return Full(v, shape...)
	case Int32:
		return Full(int32(v), shape...)
	case Int64:
		return Full(int64(v), shape...)
	case Uint8:
		return Full(uint8(v), shape...)
	case Bool:
		return Full(v != 0, shape...)
	}
	Panicf("tensor", "FullOf", ErrDType, nil, "", "invalid dtype %v", dt)
	return nil
}

// Arange returns the vector start, start+step, ... up to but excluding
// stop. It panics with an *Error if step is zero.
func Arange[T Num](start, stop, step T) *Tensor {
	if step == 0 {
		Panicf("tensor", "Arange", ErrValue, nil, "", "step is zero")
	}
	// The count is ceil((stop-start)/step), as NumPy computes it.
	n := int(math.Ceil((float64(stop) - float64(start)) / float64(step)))
	data := make([]T, max(n, 0))
	for i := range data {
		data[i] = start + T(i)*step
	}
	return FromSlice(data)
}

// Linspace returns n evenly spaced values from start to stop inclusive.
// It panics with an *Error if n is negative.
func Linspace[T Float](start, stop T, n int) *Tensor {
	if n < 0 {
		Panicf("tensor", "Linspace", ErrValue, nil, "", "negative count %d", n)
	}
	data := make([]T, n)
	for i := range data {
		if n == 1 {
			data[i] = start
			continue
		}
		data[i] = T(float64(start) + (float64(stop)-float64(start))*float64(i)/float64(n-1))
	}
	return FromSlice(data)
}
