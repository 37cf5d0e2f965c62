package cpu

import (
	"math"
	"slices"

	"github.com/eagerflow/eagerflow/backend/move"
	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// ArgSort of elements of 4 bytes or fewer (float32, int32, uint8; the half
// types come through float32): each element becomes a 32-bit key whose
// unsigned order is the sort's (NaN last, -0 equal to +0; all reversed
// when descending, NaN first), packed above its place along the line, and
// the packed words are sorted as plain integers: a stable order without
// a comparison function (eight rows of 50257 float32 logits: 28 ms, where
// the stable sort of places through one took 164, two Zen 4 cores); lines
// of 256 or more by the keys' bytes, a counting sort each (4096 rows of
// 1000: 50 ms where pdqsort took 220 on one core of a Xeon), the lines
// spread over the workers.

// floatKey, int32Key and uint8Key map v to a key whose unsigned order is
// ascending v's.
// floatKey works on v's bits alone, with no branch (integer conditional
// moves): branches on the sign and float comparisons mispredicted on
// random data and took most of a TopK's time (2.6 ns an element, now
// about 0.6).
func floatKey(v float32) uint32 {
	b := math.Float32bits(v)
	abs := b &^ (1 << 31)
	if abs == 0 {
		b = 0 // -0 sorts with +0, by place
	}
	k := b ^ (uint32(int32(b)>>31) | 1<<31) // negatives reversed below positives
	if abs > 0x7f800000 {
		k = math.MaxUint32 // NaN
	}
	return k
}

func int32Key(v int32) uint32 { return uint32(v) ^ 1<<31 }

func uint8Key(v uint8) uint32 { return uint32(v) }

// packKeys sets packed[k] to the key of line[k] (reversed for a
// descending sort: a NaN's the smallest then, first) above k.
func packKeys[T float32 | int32 | uint8](packed []uint64, line []T, descending bool) {
	flip := uint32(0)
	if descending {
		flip = math.MaxUint32
	}
	switch l := any(line).(type) {
	case []float32:
		for k, v := range l {
			packed[k] = uint64(floatKey(v)^flip)<<32 | uint64(k)
		}
	case []int32:
		for k, v := range l {
			packed[k] = uint64(int32Key(v)^flip)<<32 | uint64(k)
		}
	case []uint8:
		for k, v := range l {
			packed[k] = uint64(uint8Key(v)^flip)<<32 | uint64(k)
		}
	}
}

// packedArgSort is ArgSort's kernel for T; lines longer than 2^32
// elements take argSortKernel. Lines are shared out among the device's
// workers.
func packedArgSort[T float32 | int32 | uint8](c *eager.Call, outs []*tensor.Tensor) {
	x, a := c.Inputs[0], c.Attrs.(opattr.SortAttrs)
	n := x.Dim(a.Axis)
	if n > math.MaxUint32 {
		argSortKernel[T](c, outs)
		return
	}
	xv, ov := data[T](x), data[int64](outs[0])
	_, _, inner := move.Split(x.Shape(), a.Axis)
	lineShards(c, x.Shape(), a.Axis, float64(n)*8, func(lo, hi int, at func(l, k int) int) {
		packed, tmp, line := make([]uint64, n), make([]uint64, n), make([]T, n)
		for l := lo; l < hi; l++ {
			if inner == 1 { // the last axis: a line is contiguous
				packKeys(packed, xv[l*n:][:n], a.Descending)
				for k, p := range sortPacked(packed, tmp) {
					ov[l*n+k] = int64(p & math.MaxUint32)
				}
				continue
			}
			for k := range line {
				line[k] = xv[at(l, k)]
			}
			packKeys(packed, line, a.Descending)
			for k, p := range sortPacked(packed, tmp) {
				ov[at(l, k)] = int64(p & math.MaxUint32)
			}
		}
	})
}

// sortPacked sorts words of a 32-bit key above a place in ascending place
// order, returning a or tmp (a scratch of a's length), whichever holds the
// result: long lines by the keys' bytes from the lowest (a stable counting
// sort each, so places stay ascending among equal keys; a byte all words
// share is passed over), short ones by pdqsort.
func sortPacked(a, tmp []uint64) []uint64 {
	if len(a) < 256 {
		slices.Sort(a)
		return a
	}
	for shift := 32; shift < 64; shift += 8 {
		var count [256]int
		for _, v := range a {
			count[byte(v>>shift)]++
		}
		if count[byte(a[0]>>shift)] == len(a) {
			continue
		}
		at := 0
		for d, c := range count {
			count[d] = at
			at += c
		}
		for _, v := range a {
			d := byte(v >> shift)
			tmp[count[d]] = v
			count[d]++
		}
		a, tmp = tmp, a
	}
	return a
}
