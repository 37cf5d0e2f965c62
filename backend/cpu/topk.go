package cpu

import (
	"math"
	"slices"

	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// ArgTopK (ops/sort.go's TopK): the first k places of each last-axis
// line's stable descending order (NaN first, the largest, as ArgMax
// takes it). Where k is small beside the
// line (selectBelow), a heap of the k best seen so far, which most
// elements of a line pass by with one comparison against its worst, then
// the k sorted; else the line's whole sort (sort_keys.go, sort.go).

// selectBelow: a line of n selects its top k by a heap where k·16 < n.
func selectBelow(k, n int) bool { return k*16 < n }

// siftDown restores the max-heap order (by less) of h below i.
func siftDown[E any](h []E, i int, less func(a, b E) bool) {
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && less(h[c], h[c+1]) {
			c++
		}
		if !less(h[i], h[c]) {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// heapify makes h a max-heap by less.
func heapify[E any](h []E, less func(a, b E) bool) {
	for i := len(h)/2 - 1; i >= 0; i-- {
		siftDown(h, i, less)
	}
}

// topWords returns the packed keys (packKeys', descending) of line's k
// first places in its stable descending order, ascending, in heap
// (capacity k or more). An element is packed only where it may enter:
// above the heap's worst value, or a NaN (the largest; a later NaN loses
// to the heap's by place, so a heap of NaNs takes nothing more).
func topWords[T float32 | int32 | uint8](line []T, k int, heap []uint64) []uint64 {
	heap = heap[:k]
	packKeys(heap, line[:k], true)
	for i := k/2 - 1; i >= 0; i-- {
		siftDownWords(heap, i)
	}
	worst := line[heap[0]&math.MaxUint32]
	j := k
	for ; j+4 <= len(line); j += 4 { // most fours have none to offer
		q := line[j : j+4 : j+4]
		// A NaN among the four makes their sum NaN (so may a sum of
		// infinities: then they are offered for nothing).
		if s := q[0] + q[1] + q[2] + q[3]; q[0] > worst || q[1] > worst || q[2] > worst || q[3] > worst || s != s {
			for i := j; i < j+4; i++ {
				worst = offerWord(heap, line, i, worst)
			}
		}
	}
	for ; j < len(line); j++ {
		worst = offerWord(heap, line, j, worst)
	}
	slices.Sort(heap)
	return heap
}

// offerWord puts line[j] in topWords' heap if it beats the worst there,
// returning the heap's worst value.
func offerWord[T float32 | int32 | uint8](heap []uint64, line []T, j int, worst T) T {
	if v := line[j]; v > worst || v != v {
		if w := packKey(v, j); w < heap[0] {
			heap[0] = w
			siftDownWords(heap, 0)
			worst = line[heap[0]&math.MaxUint32]
		}
	}
	return worst
}

// packKey is packKeys' word for v at place j, descending.
func packKey[T float32 | int32 | uint8](v T, j int) uint64 {
	var key uint32
	switch v := any(v).(type) {
	case float32:
		key = ^floatKey(v)
	case int32:
		key = ^int32Key(v)
	case uint8:
		key = ^uint8Key(v)
	}
	return uint64(key)<<32 | uint64(j)
}

// siftDownWords is siftDown for a max-heap of words.
func siftDownWords(h []uint64, i int) {
	for {
		c := 2*i + 1
		if c >= len(h) {
			return
		}
		if c+1 < len(h) && h[c] < h[c+1] {
			c++
		}
		if h[i] >= h[c] {
			return
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
}

// packedArgTopK is ArgTopK's kernel for elements of 4 bytes or fewer:
// the keys packed above their places as ArgSort's (packKeys), the k
// smallest words taken.
func packedArgTopK[T float32 | int32 | uint8](c *eager.Call, outs []*tensor.Tensor) {
	x, k := c.Inputs[0], c.Attrs.(opattr.TopKAttrs).K
	n := x.Dim(-1)
	if k == 0 || n > math.MaxUint32 {
		keyedArgTopK[T](c, outs)
		return
	}
	xv, ov := data[T](x), data[int64](outs[0])
	cost := float64(n)
	if !selectBelow(k, n) {
		cost = float64(n) * 8
	}
	lineShards(c, x.Shape(), x.Rank()-1, cost, func(lo, hi int, _ func(l, k int) int) {
		packed, tmp := make([]uint64, n), make([]uint64, n)
		for l := lo; l < hi; l++ {
			line := xv[l*n:][:n]
			var best []uint64
			if selectBelow(k, n) {
				best = topWords(line, k, tmp)
			} else {
				packKeys(packed, line, true)
				best = sortPacked(packed, tmp)[:k]
			}
			for j, p := range best {
				ov[l*k+j] = int64(p & math.MaxUint32)
			}
		}
	})
}

// keyedArgTopK is ArgTopK's kernel for any T, by comparisons of
// (value, place) pairs: float64, int64, and lines too long to pack.
func keyedArgTopK[T tensor.Num](c *eager.Call, outs []*tensor.Tensor) {
	x, k := c.Inputs[0], c.Attrs.(opattr.TopKAttrs).K
	n := x.Dim(-1)
	if k == 0 {
		return
	}
	xv, ov := data[T](x), data[int64](outs[0])
	// before reports whether p comes before q in the stable descending
	// order (the ascending reversed: NaN first).
	before := func(p, q keyed[T]) bool {
		r := -compareNaNLast(p.v, q.v)
		if r != 0 {
			return r < 0
		}
		return p.k < q.k
	}
	lineShards(c, x.Shape(), x.Rank()-1, float64(n)*8, func(lo, hi int, _ func(l, k int) int) {
		line := make([]keyed[T], n)
		for l := lo; l < hi; l++ {
			for j := range line {
				line[j] = keyed[T]{xv[l*n+j], int64(j)}
			}
			best := line
			if selectBelow(k, n) {
				best = line[:k]
				heapify(best, before)
				for _, e := range line[k:] {
					if before(e, best[0]) {
						best[0] = e
						siftDown(best, 0, before)
					}
				}
			}
			slices.SortFunc(best, func(p, q keyed[T]) int {
				switch {
				case before(p, q):
					return -1
				case before(q, p):
					return 1
				}
				return 0
			})
			for j, e := range best[:k] {
				ov[l*k+j] = e.k
			}
		}
	})
}

func init() {
	kernels{
		f32: packedArgTopK[float32], f64: keyedArgTopK[float64], i32: packedArgTopK[int32],
		i64: keyedArgTopK[int64], u8: packedArgTopK[uint8],
	}.register("ArgTopK")
}
