package tensor

import "fmt"

// DType is a tensor's element type: Float32, Float64, Int32, Int64, Uint8
// or Bool. The zero value, Invalid, is none of them.
type DType uint8

// The element types. Bool is XLA's PRED and is stored one byte per element.
const (
	Invalid DType = iota
	Float32
	Float64
	Int32
	Int64
	Uint8
	Bool
	numDTypes
)

// NumDTypes bounds the DType values, for tables indexed by dtype.
const NumDTypes = int(numDTypes)

var dtypeNames = [...]string{"invalid", "float32", "float64", "int32", "int64", "uint8", "bool"}
var dtypeSizes = [...]int{0, 4, 8, 4, 8, 1, 1}

// String returns the NumPy name: "float32", "int64", "bool"...
func (d DType) String() string {
	if int(d) < len(dtypeNames) {
		return dtypeNames[d]
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// Size returns the bytes per element.
func (d DType) Size() int {
	if int(d) < len(dtypeSizes) {
		return dtypeSizes[d]
	}
	return 0
}

// Valid reports whether d is one of the defined dtypes.
func (d DType) Valid() bool { return d > Invalid && d < numDTypes }

// IsFloat reports whether d is Float32 or Float64.
func (d DType) IsFloat() bool { return d == Float32 || d == Float64 }

// IsInt reports whether d is a signed or unsigned integer type.
func (d DType) IsInt() bool { return d == Int32 || d == Int64 || d == Uint8 }

// IsNumeric reports whether d supports arithmetic (every dtype but Bool).
func (d DType) IsNumeric() bool { return d.IsFloat() || d.IsInt() }

// Elem is the set of Go types that back a DType.
type Elem interface {
	float32 | float64 | int32 | int64 | uint8 | bool
}

// Num is the set of Go types with arithmetic.
type Num interface {
	float32 | float64 | int32 | int64 | uint8
}

// Float is the set of Go floating-point types.
type Float interface {
	float32 | float64
}

// DTypeOf returns the DType backed by T.
func DTypeOf[T Elem]() DType {
	var z T
	switch any(z).(type) {
	case float32:
		return Float32
	case float64:
		return Float64
	case int32:
		return Int32
	case int64:
		return Int64
	case uint8:
		return Uint8
	case bool:
		return Bool
	}
	return Invalid
}
