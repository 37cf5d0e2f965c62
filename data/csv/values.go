package csv

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/eagerflow/eagerflow/tensor"
)

// value is one parsed cell: a float for float columns, an integer for
// integer columns, a bool for bool columns.
type value struct {
	f  float64
	i  int64
	b  bool
	ok bool
}

// intRange is the range of each integer dtype.
func intRange(dt tensor.DType) (lo, hi int64) {
	switch dt {
	case tensor.Int32:
		return math.MinInt32, math.MaxInt32
	case tensor.Uint8:
		return 0, math.MaxUint8
	}
	return math.MinInt64, math.MaxInt64
}

// parse reads text (trimmed, not missing) as a dt.
func parse(dt tensor.DType, text string) (value, error) {
	switch {
	case dt == tensor.Bool:
		b, err := strconv.ParseBool(strings.ToLower(text))
		return value{b: b, ok: true}, err
	case dt.IsFloat():
		bits := 64
		if dt == tensor.Float32 {
			bits = 32
		}
		f, err := strconv.ParseFloat(text, bits)
		return value{f: f, ok: true}, err
	}
	i, err := strconv.ParseInt(text, 10, 64)
	if lo, hi := intRange(dt); err == nil && (i < lo || i > hi) {
		err = strconv.ErrRange
	}
	return value{i: i, ok: true}, err
}

// fromGo converts a default given as a Go number or bool to a dt value,
// refusing one the dtype does not hold exactly.
func fromGo(dt tensor.DType, v any) (value, error) {
	var f float64
	var isInt bool
	var i int64
	switch x := v.(type) {
	case bool:
		if dt != tensor.Bool {
			return value{}, fmt.Errorf("a bool for a %v column", dt)
		}
		return value{b: x, ok: true}, nil
	case int:
		i, isInt = int64(x), true
	case int32:
		i, isInt = int64(x), true
	case int64:
		i, isInt = x, true
	case uint8:
		i, isInt = int64(x), true
	case float32:
		f = float64(x)
	case float64:
		f = x
	default:
		return value{}, fmt.Errorf("%T is not a number or bool", v)
	}
	switch {
	case dt == tensor.Bool:
		return value{}, fmt.Errorf("%v for a bool column", v)
	case dt.IsFloat():
		if isInt {
			f = float64(i)
		}
		if dt == tensor.Float32 {
			f = float64(float32(f)) // rounded, as a float32 cell is
		}
		return value{f: f, ok: true}, nil
	}
	if !isInt {
		if f != math.Trunc(f) || math.Abs(f) > 1<<62 {
			return value{}, fmt.Errorf("%v is not an integer", v)
		}
		i = int64(f)
	}
	if lo, hi := intRange(dt); i < lo || i > hi {
		return value{}, fmt.Errorf("%v is outside %v's range", v, dt)
	}
	return value{i: i, ok: true}, nil
}

// builder collects one column's values.
type builder struct {
	f []float64
	i []int64
	b []bool
}

func (b *builder) add(dt tensor.DType, v value) {
	switch {
	case dt == tensor.Bool:
		b.b = append(b.b, v.b)
	case dt.IsFloat():
		b.f = append(b.f, v.f)
	default:
		b.i = append(b.i, v.i)
	}
}

// tensor is the column as a dt tensor of shape [rows].
func (b *builder) tensor(dt tensor.DType) *tensor.Tensor {
	switch dt {
	case tensor.Bool:
		return tensor.FromSlice(nonNil(b.b), len(b.b))
	case tensor.Float64:
		return tensor.FromSlice(nonNil(b.f), len(b.f))
	case tensor.Float32:
		return tensor.FromSlice(convert[float32](b.f), len(b.f))
	case tensor.Int64:
		return tensor.FromSlice(nonNil(b.i), len(b.i))
	case tensor.Int32:
		return tensor.FromSlice(convert[int32](b.i), len(b.i))
	}
	return tensor.FromSlice(convert[uint8](b.i), len(b.i))
}

// scalar is v as a rank-0 dt tensor.
func scalar(dt tensor.DType, v value) *tensor.Tensor {
	switch dt {
	case tensor.Bool:
		return tensor.Scalar(v.b)
	case tensor.Float64:
		return tensor.Scalar(v.f)
	case tensor.Float32:
		return tensor.Scalar(float32(v.f))
	case tensor.Int64:
		return tensor.Scalar(v.i)
	case tensor.Int32:
		return tensor.Scalar(int32(v.i))
	}
	return tensor.Scalar(uint8(v.i))
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func convert[T int32 | uint8 | float32, S int64 | float64](s []S) []T {
	out := make([]T, len(s))
	for i, v := range s {
		out[i] = T(v)
	}
	return out
}
