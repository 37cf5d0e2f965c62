package tensor

import (
	"slices"
	"strconv"
	"strings"
)

// Shape is the size of each dimension, major first. A nil or empty Shape is a
// scalar (rank 0). Shapes are treated as immutable once given to a tensor.
type Shape []int

// Rank returns the number of dimensions.
func (s Shape) Rank() int { return len(s) }

// NumElements returns the product of the dimensions (1 for a scalar).
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
