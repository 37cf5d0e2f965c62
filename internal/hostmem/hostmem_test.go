package hostmem

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// MoveElems agrees with an element-by-element copy on random boxes: ranks
// 0-5, dimensions of size 1 anywhere, broadcasts (source strides of 0),
// reversed dimensions (negative strides), transposes, offsets, and every
// element size; the boxes' simplified forms (merged and dropped
// dimensions) copy what the boxes say.
func TestMoveElemsAgreesWithAnElementCopy(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 1))
	for i := range 3000 {
		r := rng.IntN(6)
		shape := make([]int, r)
		for d := range shape {
			shape[d] = []int{1, 1, 2, 3, 4, 5}[rng.IntN(6)]
		}
		if r > 0 && i%50 == 0 {
			shape[rng.IntN(r)] = 0
		}
		dSt, sSt := layout(rng, shape, false), layout(rng, shape, true)
		esize := []int{1, 2, 4, 8}[rng.IntN(4)]
		dOff, dLen := span(shape, dSt)
		sOff, sLen := span(shape, sSt)
		dOff, sOff = dOff+rng.IntN(3), sOff+rng.IntN(3)
		src := make([]byte, (sLen+sOff+3)*esize)
		for j := range src {
			src[j] = byte(rng.IntN(256))
		}
		got, want := make([]byte, (dLen+dOff+3)*esize), make([]byte, (dLen+dOff+3)*esize)
		MoveElems(esize, got, dOff, dSt, src, sOff, sSt, shape)
		each(shape, func(idx []int) {
			d, s := dOff, sOff
			for k, v := range idx {
				d, s = d+v*dSt[k], s+v*sSt[k]
			}
			copy(want[d*esize:(d+1)*esize], src[s*esize:(s+1)*esize])
		})
		if !slices.Equal(got, want) {
			t.Fatalf("box %d: shape %v, dst strides %v offset %d, src strides %v offset %d, %d-byte elements: the copy differs", i, shape, dSt, dOff, sSt, sOff, esize)
		}
	}
}

// layout is strides for shape: row-major or a permutation of it, some
// dimensions reversed, and (for a source) some broadcast.
func layout(rng *rand.Rand, shape []int, source bool) []int {
	perm := rng.Perm(len(shape))
	st, step := make([]int, len(shape)), 1
	for _, d := range slices.Backward(perm) {
		st[d], step = step, step*max(shape[d], 1)
	}
	for d := range st {
		switch {
		case source && rng.IntN(4) == 0:
			st[d] = 0
		case rng.IntN(5) == 0:
			st[d] = -st[d]
		}
	}
	return st
}

// span is the offset that keeps every element of the box at index 0 or
// above (the negative strides' reach) and the elements it spans.
func span(shape, st []int) (off, n int) {
	hi := 0
	for d, size := range shape {
		if size == 0 {
			return 0, 1
		}
		if st[d] < 0 {
			off -= st[d] * (size - 1)
		} else {
			hi += st[d] * (size - 1)
		}
	}
	return off, off + hi + 1
}

// each calls fn with every index of shape, in row-major order.
func each(shape []int, fn func(idx []int)) {
	if slices.Contains(shape, 0) {
		return
	}
	idx := make([]int, len(shape))
	for {
		fn(idx)
		d := len(shape) - 1
		for ; d >= 0; d-- {
			if idx[d]++; idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
		if d < 0 {
			return
		}
	}
}

func TestSimplifyMergesAndDrops(t *testing.T) {
	for _, c := range []struct {
		dSt, sSt, shape    []int
		wantD, wantS, want []int
	}{
		// A broadcast over trailing windows: [C 1 3 3 1] from [C 1 1 1 1].
		{[]int{9, 9, 3, 1, 1}, []int{1, 0, 0, 0, 0}, []int{4, 1, 3, 3, 1}, []int{9, 1}, []int{1, 0}, []int{4, 9}},
		// Row-major on both sides: one run.
		{[]int{12, 4, 1}, []int{12, 4, 1}, []int{2, 3, 4}, []int{1}, []int{1}, []int{24}},
		// A transpose keeps its two dimensions.
		{[]int{3, 1}, []int{1, 2}, []int{2, 3}, []int{3, 1}, []int{1, 2}, []int{2, 3}},
		// Every dimension of size 1: one element.
		{[]int{1, 1}, []int{5, 7}, []int{1, 1}, []int{}, []int{}, []int{}},
	} {
		d, s, n := simplify(c.dSt, c.sSt, c.shape, nil, nil, nil)
		if !slices.Equal(d, c.wantD) || !slices.Equal(s, c.wantS) || !slices.Equal(n, c.want) {
			t.Errorf("simplify(%v, %v, %v) = %v, %v, %v; want %v, %v, %v", c.dSt, c.sSt, c.shape, d, s, n, c.wantD, c.wantS, c.want)
		}
	}
}

// A transpose of the last two dimensions takes the tiles; a source
// broadcast along the last (a column's, [n 1] to [n m]) fills rows
// instead, and a row-major copy neither.
func TestTransposesNotBroadcasts(t *testing.T) {
	for _, c := range []struct {
		dSt, sSt []int
		want     bool
	}{
		{[]int{1000, 1}, []int{1, 4096}, true}, // [4096 1000] from its transpose
		{[]int{1000, 1}, []int{1, 0}, false},   // a column broadcast along rows
		{[]int{1000, 1}, []int{1000, 1}, false},
		{[]int{1000, 1}, []int{0, 1}, false}, // a row broadcast down columns
		{[]int{1}, []int{0}, false},
	} {
		if got := transposes(c.dSt, c.sSt); got != c.want {
			t.Errorf("transposes(%v, %v) = %v, want %v", c.dSt, c.sSt, got, c.want)
		}
	}
}
