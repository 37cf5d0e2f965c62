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

// fromGo converts a default given as a Go number or bool to a dt value
// by tensor.ScalarOf's rule (floats round, integers must fit exactly).
func fromGo(dt tensor.DType, v any) (value, error) {
	if _, isBool := v.(bool); isBool && dt != tensor.Bool {
		return value{}, fmt.Errorf("a bool for a %v column", dt)
	}
	t, err := tensor.ScalarOf(dt, v)
	if err != nil {
		return value{}, err
	}
	switch x := t.Item().(type) {
	case bool:
		return value{b: x, ok: true}, nil
	case float32:
		return value{f: float64(x), ok: true}, nil
	case float64:
		return value{f: x, ok: true}, nil
	case tensor.BF16:
		return value{f: float64(x.Float32()), ok: true}, nil
	case tensor.F16:
		return value{f: float64(x.Float32()), ok: true}, nil
	case int32:
		return value{i: int64(x), ok: true}, nil
	case uint8:
		return value{i: int64(x), ok: true}, nil
	}
	return value{i: t.Item().(int64), ok: true}, nil
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
	case tensor.BFloat16, tensor.Float16:
		return tensor.FromFloat32s(dt, convert[float32](b.f), len(b.f))
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
	case tensor.BFloat16, tensor.Float16:
		return tensor.FromFloat32s(dt, []float32{float32(v.f)}).View(nil, nil)
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
