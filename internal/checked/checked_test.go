package checked

import (
	"math"
	"testing"
)

func TestAddAndMul(t *testing.T) {
	for _, c := range []struct {
		xs   []int
		want int
		ok   bool
	}{
		{nil, 0, true},
		{[]int{1, 2, -4}, -1, true},
		{[]int{math.MaxInt, 1}, 0, false},
		{[]int{math.MinInt, -1}, 0, false},
		{[]int{math.MaxInt, math.MinInt}, -1, true},
		{[]int{math.MaxInt, -1, 1}, math.MaxInt, true},
	} {
		if got, ok := Add(c.xs...); got != c.want || ok != c.ok {
			t.Errorf("Add(%v) = %d, %v; want %d, %v", c.xs, got, ok, c.want, c.ok)
		}
	}
	for _, c := range []struct {
		a, b, want int
		ok         bool
	}{
		{0, math.MaxInt, 0, true},
		{3, 5, 15, true},
		{1 << 31, 1 << 31, 1 << 62, true},
		{1 << 32, 1 << 31, 0, false},
		{math.MaxInt, 2, 0, false},
		{-1, 2, 0, false},
	} {
		if got, ok := Mul(c.a, c.b); got != c.want || ok != c.ok {
			t.Errorf("Mul(%d, %d) = %d, %v; want %d, %v", c.a, c.b, got, ok, c.want, c.ok)
		}
	}
}
