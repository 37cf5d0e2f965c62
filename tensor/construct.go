package tensor

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/plumb"
)

// checkShape panics with an *Error unless shape is valid (see Shape.Size)
// and a tensor of it fits on the default device (one of dtype dt, or of 8
// bytes per element when dt is Invalid: the constructors build float64 or
// int64 values on the host first). It returns the element count.
func checkShape(op string, shape Shape, dt DType) int {
	return checkShapeOn(op, device.Default(), shape, dt)
}

// checkShapeOn is checkShape for a tensor on dev.
func checkShapeOn(op string, dev device.Device, shape Shape, dt DType) int {
	if dev == nil {
		panicf("tensor", op, ErrDevice, nil, "", "the device is nil")
	}
	n, ok := shape.Size()
	if !ok {
		panicf("tensor", op, ErrShape, nil, "", "%s", shapeProblem(shape))
	}
	if !dt.Valid() {
		dt = Float64
	}
	nbytes, ok := ByteSize(dt, shape)
	if !ok {
		nbytes = -1
	}
	if err := device.CheckAlloc(dev, nbytes); err != nil {
		panic(allocError(op, dt, shape, err))
	}
	return n
}

// shapeProblem says what is wrong with a shape Size refuses.
func shapeProblem(shape Shape) string {
	if !shape.valid() {
		return fmt.Sprintf("negative dimension in shape %v", shape)
	}
	return fmt.Sprintf("shape %v has more elements than an int can count", shape)
}

// allocError is the *Error of a failed allocation: its Kind is the
// device's error (wrapping device.ErrOutOfMemory), so errors.Is finds it.
func allocError(op string, dt DType, shape Shape, err error) *Error {
	return &Error{Pkg: "tensor", Op: op, Kind: err, Detail: fmt.Sprintf("cannot allocate %v%v: %v", dt, shape, err), Caller: Caller()}
}

// fromHost returns a tensor of dtype dt and shape on the default device
// holding the row-major bytes src (exactly the tensor's size).
func fromHost(op string, dt DType, shape Shape, src []byte) *Tensor {
	return fromHostOn(op, device.Default(), dt, shape, src)
}

// fromHostOn is fromHost onto dev.
func fromHostOn(op string, dev device.Device, dt DType, shape Shape, src []byte) *Tensor {
	t, err := Empty(dev, dt, shape)
	if err != nil {
		panic(allocError(op, dt, shape, err))
	}
	if len(src) > 0 {
		if err := dev.CopyFromHost(t.buf, 0, src); err != nil {
			panic(err)
		}
	}
	return t
}

// filled returns a tensor of dtype dt and shape on dev with every element
// elem (its bytes), which the device writes itself.
func filled(op string, dev device.Device, dt DType, shape Shape, elem []byte) *Tensor {
	t, err := Empty(dev, dt, shape)
	if err != nil {
		panic(allocError(op, dt, shape, err))
	}
	if err := dev.Fill(t.buf, 0, shape.NumElements(), elem); err != nil {
		panic(err)
	}
	return t
}

// elemBytes returns v converted to dt (Bool: v != 0) as its bytes.
func elemBytes(dt DType, v float64) []byte {
	switch dt {
	case Float32:
		return asBytes([]float32{float32(v)})
	case Float64:
		return asBytes([]float64{v})
	case Int32:
		return asBytes([]int32{int32(v)})
	case Int64:
		return asBytes([]int64{int64(v)})
	case Uint8:
		return []byte{uint8(v)}
	case Bool:
		return asBytes([]bool{v != 0})
	case BFloat16:
		return asBytes([]BF16{ToBF16(float32(v))})
	case Float16:
		return asBytes([]F16{ToF16(float32(v))})
	case Float8E4M3:
		return asBytes([]F8E4M3{ToF8E4M3(float32(v))})
	case Float8E5M2:
		return asBytes([]F8E5M2{ToF8E5M2(float32(v))})
	}
	return nil
}

func asBytes[T Elem](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	var z T
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(z)))
}

// FromSlice returns a tensor on the default device holding a copy of data
// with the given shape (a vector of len(data) when no shape is given). It
// panics with an *Error if the shape does not hold len(data) elements.
func FromSlice[T Elem](data []T, shape ...int) *Tensor {
	return FromSliceOn(device.Default(), data, shape...)
}

// FromSliceOn is FromSlice on dev.
func FromSliceOn[T Elem](dev device.Device, data []T, shape ...int) *Tensor {
	s := Shape(shape)
	if len(shape) == 0 {
		s = Shape{len(data)}
	} else {
		s = s.Clone()
	}
	if n := checkShapeOn("FromSlice", dev, s, DTypeOf[T]()); n != len(data) {
		panicf("tensor", "FromSlice", ErrShape, nil, "", "shape %v holds %d elements, got %d", s, n, len(data))
	}
	return fromHostOn("FromSlice", dev, DTypeOf[T](), s, asBytes(data))
}

// withShape is FromSlice for an exact shape (nil is a scalar).
func withShape[T Elem](data []T, s Shape) *Tensor {
	if n := checkShape("FromSlice", s, DTypeOf[T]()); n != len(data) {
		panicf("tensor", "FromSlice", ErrShape, nil, "", "shape %v holds %d elements, got %d", s, n, len(data))
	}
	return fromHost("FromSlice", DTypeOf[T](), s, asBytes(data))
}

// ScalarValue is what Scalar takes: a value of an element type, or a Go
// int (an int64 scalar), so that Scalar(2) and Scalar(0.5) need no
// conversion.
type ScalarValue interface {
	Elem | int
}

// Scalar returns a rank-0 tensor holding v (an int as int64), on the
// default device. It is weakly typed (see IsWeak): beside a tensor of
// another dtype or device in an op, it takes theirs.
func Scalar[T ScalarValue](v T) *Tensor {
	var t *Tensor
	switch v := any(v).(type) {
	case int:
		t = scalarOf(int64(v))
	case int64:
		t = scalarOf(v)
	case int32:
		t = scalarOf(v)
	case uint8:
		t = scalarOf(v)
	case float32:
		t = scalarOf(v)
	case float64:
		t = scalarOf(v)
	case bool:
		t = scalarOf(v)
	}
	t.flags |= FlagWeak
	return t
}

// ScalarOf returns a strong rank-0 dt tensor holding v, a Go number (int,
// int32, int64, uint8, float32, float64) or bool, on the default device.
// A float dtype takes any number (rounded to float32 for Float32); an
// integer dtype takes an integral value in its range; Bool takes a bool
// only. Anything else is an error wrapping ErrDType that says what was
// wrong ("256 is outside uint8's range").
func ScalarOf(dt DType, v any) (*Tensor, error) {
	t, msg := scalarExact(dt, v)
	if msg != "" {
		return nil, valueError{msg}
	}
	return t, nil
}

// valueError is ScalarOf's error: its text alone, wrapping ErrDType.
type valueError struct{ msg string }

func (e valueError) Error() string { return e.msg }
func (e valueError) Unwrap() error { return ErrDType }

// scalarExact is ScalarOf, with what was wrong as text.
func scalarExact(dt DType, v any) (*Tensor, string) {
	var f float64
	var n int64
	isInt := true
	switch x := v.(type) {
	case bool:
		if dt != Bool {
			return nil, fmt.Sprintf("a bool is not %s", plumb.WithArticle(dt.String()))
		}
		return scalarOf(x), ""
	case int:
		n = int64(x)
	case int32:
		n = int64(x)
	case int64:
		n = x
	case uint8:
		n = int64(x)
	case float32:
		f, isInt = float64(x), false
	case float64:
		f, isInt = x, false
	case BF16:
		f, isInt = float64(x.Float32()), false
	case F16:
		f, isInt = float64(x.Float32()), false
	case F8E4M3:
		f, isInt = float64(x.Float32()), false
	case F8E5M2:
		f, isInt = float64(x.Float32()), false
	default:
		return nil, fmt.Sprintf("%T is not a number or bool", v)
	}
	switch {
	case dt == Bool:
		return nil, fmt.Sprintf("%v is not a bool", v)
	case dt == Float32:
		if isInt {
			f = float64(n)
		}
		return scalarOf(float32(f)), ""
	case dt == Float64:
		if isInt {
			f = float64(n)
		}
		return scalarOf(f), ""
	case dt.IsHalf() || dt.IsFloat8():
		if isInt {
			f = float64(n)
		}
		return fromHost("Scalar", dt, nil, elemBytes(dt, f)), ""
	case !dt.Valid():
		return nil, fmt.Sprintf("invalid dtype %v", dt)
	}
	if !isInt {
		if f != math.Trunc(f) || math.Abs(f) > 1<<62 {
			return nil, fmt.Sprintf("%v is not an integer", v)
		}
		n = int64(f)
	}
	switch {
	case dt == Int32 && n == int64(int32(n)):
		return scalarOf(int32(n)), ""
	case dt == Uint8 && n == int64(uint8(n)):
		return scalarOf(uint8(n)), ""
	case dt == Int64:
		return scalarOf(n), ""
	}
	return nil, fmt.Sprintf("%v is outside %v's range", v, dt)
}

func scalarOf[T Elem](v T) *Tensor {
	return fromHost("Scalar", DTypeOf[T](), nil, asBytes([]T{v}))
}

// Full returns a tensor of the given shape with every element v, on the
// default device.
//
// Deprecated: use FullOf(dt, v, shape...), the one signature of the
// constructors (the dtype first, the shape last; FullOn is FullOf on a
// device).
func Full[T Elem](v T, shape ...int) *Tensor {
	s := Shape(shape).Clone()
	checkShape("Full", s, DTypeOf[T]())
	return filled("Full", device.Default(), DTypeOf[T](), s, asBytes([]T{v}))
}

// Zeros returns a tensor of dtype dt and the given shape filled with zeros
// (false for Bool), on the default device.
func Zeros(dt DType, shape ...int) *Tensor { return fullOn("Zeros", device.Default(), dt, 0, shape) }

// Ones returns a tensor of dtype dt and the given shape filled with ones
// (true for Bool), on the default device.
func Ones(dt DType, shape ...int) *Tensor { return fullOn("Ones", device.Default(), dt, 1, shape) }

// FullOf returns a tensor of dtype dt filled with v converted to dt (for
// Bool, v != 0), on the default device.
func FullOf(dt DType, v float64, shape ...int) *Tensor {
	return fullOn("FullOf", device.Default(), dt, v, shape)
}

// FullOn is FullOf on dev: the device fills the tensor itself, with no
// host data. Constants that ops make beside their inputs (ops.ScalarLike
// and the like) come from here, on their inputs' device.
func FullOn(dev device.Device, dt DType, v float64, shape ...int) *Tensor {
	return fullOn("FullOn", dev, dt, v, shape)
}

func fullOn(op string, dev device.Device, dt DType, v float64, shape []int) *Tensor {
	if !dt.Valid() {
		panicf("tensor", op, ErrDType, nil, "", "invalid dtype %v", dt)
	}
	s := Shape(shape).Clone()
	checkShapeOn(op, dev, s, dt)
	return filled(op, dev, dt, s, elemBytes(dt, v))
}

// Eye returns the n×n identity matrix of dtype dt (ones on the diagonal,
// zeros elsewhere; true and false for Bool) on the default device, as
// torch.eye and np.eye. It panics with an *Error for an invalid dtype or
// a negative n.
func Eye(dt DType, n int) *Tensor {
	if !dt.Valid() {
		panicf("tensor", "Eye", ErrDType, nil, "", "invalid dtype %v", dt)
	}
	s := Shape{n, n}
	checkShape("Eye", s, dt)
	one, size := elemBytes(dt, 1), dt.Size()
	data := make([]byte, n*n*size)
	for i := range n {
		copy(data[(i*n+i)*size:], one)
	}
	return fromHost("Eye", dt, s, data)
}

// Arange returns the vector start, start+step, ... up to but excluding
// stop. It panics with an *Error if step is zero, a bound or the step is
// NaN or infinite, or the count does not fit on the default device.
func Arange[T Num](start, stop, step T) *Tensor {
	if step == 0 {
		panicf("tensor", "Arange", ErrValue, nil, "", "step is zero")
	}
	for _, v := range []float64{float64(start), float64(stop), float64(step)} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			panicf("tensor", "Arange", ErrValue, nil, "", "start %v, stop %v and step %v must be finite", start, stop, step)
		}
	}
	// The count is ceil((stop-start)/step), as NumPy computes it.
	f := max(math.Ceil((float64(stop)-float64(start))/float64(step)), 0)
	if f >= math.MaxInt {
		panicf("tensor", "Arange", ErrShape, nil, "", "%v to %v by %v is more elements than an int can count", start, stop, step)
	}
	n := int(f)
	checkShape("Arange", Shape{n}, DTypeOf[T]())
	data := make([]T, n)
	for i := range data {
		data[i] = start + T(i)*step
	}
	return FromSlice(data)
}

// Linspace returns n evenly spaced values from start to stop inclusive.
// It panics with an *Error if n is negative.
func Linspace[T Float](start, stop T, n int) *Tensor {
	if n < 0 {
		panicf("tensor", "Linspace", ErrValue, nil, "", "negative count %d", n)
	}
	checkShape("Linspace", Shape{n}, DTypeOf[T]())
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
