// Package checked does integer arithmetic on sizes that reports overflow
// instead of wrapping around, for shape rules whose operands come from
// users (padding, repetitions, depths) or from files (checkpoints, specs).
package checked

import (
	"math"
	"math/bits"
)

// Add returns the sum of xs and whether it fits in an int.
func Add(xs ...int) (int, bool) {
	s := 0
	for _, x := range xs {
		r := s + x
		// Overflow: both operands of one sign and the result of the other.
		if (s >= 0) == (x >= 0) && (r >= 0) != (s >= 0) {
			return 0, false
		}
		s = r
	}
	return s, true
}

// Mul returns a*b for a, b >= 0 and whether it fits in an int (false for a
// negative operand).
func Mul(a, b int) (int, bool) {
	if a < 0 || b < 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt {
		return 0, false
	}
	return int(lo), true
}
