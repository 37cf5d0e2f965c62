package tensor

import "fmt"

// DType is a tensor's element type: Float32, Float64, Int32, Int64, Uint8,
// Bool, BFloat16, Float16, Float8E4M3 or Float8E5M2. The zero value,
// Invalid, is none of them.
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
	// The half-precision floats (half.go), Go types BF16 and F16: stored
	// in two bytes, computed in float32 and rounded once. Ops take them
	// where their doc says so (Cast, the layout ops); elsewhere Cast to
	// Float32 first.
	BFloat16
	Float16
	// The 8-bit floats (fp8.go), Go types F8E4M3 and F8E5M2: stored,
	// cast and moved; ops.ScaledMatMul multiplies them.
	Float8E4M3
	Float8E5M2
	numDTypes
)

// NumDTypes bounds the DType values, for tables indexed by dtype.
const NumDTypes = int(numDTypes)

var dtypeNames = [...]string{"invalid", "float32", "float64", "int32", "int64", "uint8", "bool", "bfloat16", "float16", "float8_e4m3fn", "float8_e5m2"}
var dtypeSizes = [...]int{0, 4, 8, 4, 8, 1, 1, 2, 2, 1, 1}

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

// IsFloat reports whether d is a floating-point dtype: Float32, Float64,
// BFloat16 or Float16.
func (d DType) IsFloat() bool { return d == Float32 || d == Float64 || d.IsHalf() }

// IsHalf reports whether d is BFloat16 or Float16.
func (d DType) IsHalf() bool { return d == BFloat16 || d == Float16 }

// IsFloat8 reports whether d is Float8E4M3 or Float8E5M2. They are not
// IsFloat: ops compute on them only through ScaledMatMul and Cast.
func (d DType) IsFloat8() bool { return d == Float8E4M3 || d == Float8E5M2 }

// IsInt reports whether d is a signed or unsigned integer type.
func (d DType) IsInt() bool { return d == Int32 || d == Int64 || d == Uint8 }

// IsNumeric reports whether d supports arithmetic (every dtype but Bool).
func (d DType) IsNumeric() bool { return d.IsFloat() || d.IsInt() }

// Elem is the set of Go types that back a DType.
type Elem interface {
	float32 | float64 | int32 | int64 | uint8 | bool | BF16 | F16 | F8E4M3 | F8E5M2
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
	case BF16:
		return BFloat16
	case F16:
		return Float16
	case F8E4M3:
		return Float8E4M3
	case F8E5M2:
		return Float8E5M2
	}
	return Invalid
}
