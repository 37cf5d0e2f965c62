package tensor

// Layout is XLA's minor_to_major: the dimensions ordered from the one that
// varies fastest in memory to the one that varies slowest. For rank 3,
// {2, 1, 0} is row-major (the default) and {0, 1, 2} is column-major. A nil
// Layout means row-major.
type Layout []int

// RowMajor returns the default layout {rank-1, ..., 1, 0}.
func RowMajor(rank int) Layout {
	l := make(Layout, rank)
	for i := range l {
		l[i] = rank - 1 - i
	}
	return l
}

// IsRowMajor reports whether l (for a shape of the given rank) is the
// default layout.
func (l Layout) IsRowMajor(rank int) bool {
	if l == nil {
		return true
	}
	for i, d := range l {
		if d != rank-1-i {
			return false
		}
	}
	return true
}

// valid reports whether l is a permutation of 0..rank-1.
func (l Layout) valid(rank int) bool {
	if l == nil {
		return true
	}
	if len(l) != rank {
		return false
	}
	seen := make([]bool, rank)
	for _, d := range l {
		if d < 0 || d >= rank || seen[d] {
			return false
		}
		seen[d] = true
	}
	return true
}

// Strides returns, for each dimension of shape, the distance in elements
// between neighbours along it under layout l (nil means row-major).
func Strides(shape Shape, l Layout) []int {
	st := make([]int, len(shape))
	step := 1
	if l == nil {
		for d := len(shape) - 1; d >= 0; d-- {
			st[d] = step
			step *= shape[d]
		}
		return st
	}
	for _, d := range l {
		st[d] = step
		step *= shape[d]
	}
	return st
}

// LinearIndex returns the position in memory of the element at the
// multi-dimensional index idx (one entry per dimension, each within range).
func LinearIndex(shape Shape, l Layout, idx []int) int {
	lin := 0
	for d, s := range Strides(shape, l) {
		lin += idx[d] * s
	}
	return lin
}

// MultiIndex is the inverse of LinearIndex: it writes into idx (of length
// rank) the index of the element stored at position lin, and returns idx.
func MultiIndex(shape Shape, l Layout, lin int, idx []int) []int {
	if l == nil {
		l = RowMajor(len(shape))
	}
	for _, d := range l {
		if shape[d] == 0 {
			idx[d] = 0
			continue
		}
		idx[d] = lin % shape[d]
		lin /= shape[d]
	}
	return idx
}
