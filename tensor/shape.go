package tensor

import (
	"math"
	"math/bits"
	"slices"
	"strconv"
	"strings"
)

// Shape is the size of each dimension, major first. A nil or empty Shape is a
// scalar (rank 0). Shapes are treated as immutable once given to a tensor.
type Shape []int

// Rank returns the number of dimensions.
func (s Shape) Rank() int { return len(s) }

// NumElements returns the product of the dimensions (1 for a scalar). It
// does not check for overflow: shapes given to tensors have been checked
// with Size.
func (s Shape) NumElements() int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// Equal reports whether s and o have the same dimensions.
func (s Shape) Equal(o Shape) bool { return slices.Equal(s, o) }

// Clone returns a copy of s.
func (s Shape) Clone() Shape { return slices.Clone(s) }

// String formats s as "[2 3]" ("[]" for a scalar).
func (s Shape) String() string {
	var b strings.Builder
	b.WriteByte('[')
	for i, d := range s {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(strconv.Itoa(d))
	}
	b.WriteByte(']')
	return b.String()
}

// valid reports whether every dimension is non-negative.
func (s Shape) valid() bool {
	for _, d := range s {
		if d < 0 {
			return false
		}
	}
	return true
}

// Size returns the number of elements, and false when a dimension is
// negative or the product of the non-zero dimensions overflows an int
// (such a shape is refused even when another dimension is 0, so that
// strides never overflow).
func (s Shape) Size() (int, bool) {
	n, zero := uint64(1), false
	for _, d := range s {
		switch {
		case d < 0:
			return 0, false
		case d == 0:
			zero = true
			continue
		}
		hi, lo := bits.Mul64(n, uint64(d))
		if hi != 0 || lo > math.MaxInt {
			return 0, false
		}
		n = lo
	}
	if zero {
		return 0, true
	}
	return int(n), true
}

// ByteSize returns the bytes of a tensor of dtype dt and shape s, and
// false when the shape is invalid (see Size) or the byte count overflows an
// int.
func ByteSize(dt DType, s Shape) (int, bool) {
	n, ok := s.Size()
	if !ok || (dt.Size() > 0 && n > math.MaxInt/dt.Size()) {
		return 0, false
	}
	return n * dt.Size(), true
}
