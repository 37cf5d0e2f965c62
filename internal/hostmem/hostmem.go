// Package hostmem moves elements of host memory without looking at them:
// strided copies (transposes in cache-sized tiles), fills, and views of
// bytes as words; and the sharding grain of the host's work. Package
// device copies and fills with it, and package backend lends it to
// backends. It imports nothing of the module, so that device (at the
// bottom of the layering) may import it.
package hostmem

import (
	"fmt"
	"slices"
	"unsafe"
)

// MinShardCost is the estimated cost (about a nanosecond per unit) below
// which splitting work across goroutines does not pay for itself.
const MinShardCost = 20000

// copyStrided copies a box of the given shape from src to dst, where each
// side addresses element (i0, i1, ...) at off + sum(i_k * stride_k). Strides
// and offsets count elements. The innermost dimension is a tight loop.
func copyStrided[T uint8 | uint16 | uint32 | uint64](dst []T, dOff int, dSt []int, src []T, sOff int, sSt []int, shape []int) {
	r := len(shape)
	if r == 0 {
		dst[dOff] = src[sOff]
		return
	}
	for _, d := range shape {
		if d == 0 {
			return
		}
	}
	if transposes(dSt, sSt) {
		transposeTiles(dst, dOff, dSt, src, sOff, sSt, shape)
		return
	}
	n, ds, ss := shape[r-1], dSt[r-1], sSt[r-1]
	idx := make([]int, r-1)
	for {
		switch {
		case ds == 1 && ss == 1:
			copy(dst[dOff:dOff+n], src[sOff:sOff+n])
		case ds == 1 && ss == 0: // a broadcast element
			fill(dst[dOff:dOff+n], src[sOff])
		default:
			for i, di, si := 0, dOff, sOff; i < n; i, di, si = i+1, di+ds, si+ss {
				dst[di] = src[si]
			}
		}
		k := r - 2
		for ; k >= 0; k-- {
			idx[k]++
			dOff += dSt[k]
			sOff += sSt[k]
			if idx[k] < shape[k] {
				break
			}
			dOff -= dSt[k] * shape[k]
			sOff -= sSt[k] * shape[k]
			idx[k] = 0
		}
		if k < 0 {
			return
		}
	}
}

// transposes reports whether a box of r ≥ 2 dimensions with these
// strides is a transpose of its last two: each side contiguous along a
// different one. A source broadcast along the last (stride 0) is not:
// its rows are runs of one value, which fill writes at memmove's speed
// (a column's broadcast, a sum's gradient, took the tiles' element loop,
// several times slower).
func transposes(dSt, sSt []int) bool {
	r := len(dSt)
	return r >= 2 && dSt[r-1] == 1 && sSt[r-2] == 1 && sSt[r-1] != 1 && sSt[r-1] != 0 && dSt[r-2] != 1
}

// transposeTiles copies a box whose last two dimensions are swapped between
// source and destination (each side contiguous along a different one) in
// 16x16 tiles, so that both sides stay in cache; outer dimensions recurse.
func transposeTiles[T uint8 | uint16 | uint32 | uint64](dst []T, dOff int, dSt []int, src []T, sOff int, sSt []int, shape []int) {
	r := len(shape)
	if r > 2 {
		for i := 0; i < shape[0]; i++ {
			transposeTiles(dst, dOff+i*dSt[0], dSt[1:], src, sOff+i*sSt[0], sSt[1:], shape[1:])
		}
		return
	}
	const tile = 16
	rows, cols := shape[0], shape[1]
	dRow, sCol := dSt[0], sSt[1] // dst row stride; src stride along columns
	for i0 := 0; i0 < rows; i0 += tile {
		i1 := min(i0+tile, rows)
		for j0 := 0; j0 < cols; j0 += tile {
			j1 := min(j0+tile, cols)
			if i1-i0 == tile && j1-j0 == tile && sCol > 0 {
				transposeTile(dst[dOff+i0*dRow+j0:], dRow, src[sOff+i0+j0*sCol:], sCol)
				continue
			}
			for i := i0; i < i1; i++ {
				d := dst[dOff+i*dRow+j0 : dOff+i*dRow+j1]
				s := sOff + i + j0*sCol
				for j := range d {
					d[j] = src[s+j*sCol]
				}
			}
		}
	}
}

// transposeTile writes the 16x16 tile whose rows are src's columns into
// dst's rows: dst[i*dRow+j] = src[i+j*sCol]. The slices are cut to the
// tile first, so the loops run without bounds checks, four source rows
// at a time.
func transposeTile[T uint8 | uint16 | uint32 | uint64](dst []T, dRow int, src []T, sCol int) {
	const tile = 16
	src = src[:15*sCol+tile]
	dst = dst[:15*dRow+tile]
	for j := 0; j < tile; j += 4 {
		s0, s1, s2, s3 := src[j*sCol:j*sCol+tile], src[(j+1)*sCol:(j+1)*sCol+tile], src[(j+2)*sCol:(j+2)*sCol+tile], src[(j+3)*sCol:(j+3)*sCol+tile]
		for i := range tile {
			d := dst[i*dRow+j : i*dRow+j+4]
			d[0], d[1], d[2], d[3] = s0[i], s1[i], s2[i], s3[i]
		}
	}
}

// View16 reinterprets b as 16-bit words (b must be 2-byte aligned).
func View16(b []byte) []uint16 {
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/2)
}

// View32 reinterprets b as 32-bit words (b must be 4-byte aligned).
func View32(b []byte) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}

// View64 reinterprets b as 64-bit words (b must be 8-byte aligned).
func View64(b []byte) []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/8)
}

// MoveElems copies a box of elements of esize bytes (1, 2, 4 or 8) between
// host memory: the element at index (i0, i1, ...) of shape is read at
// sOff + sum(i_k * sSt[k]) of src and written at dOff + sum(i_k * dSt[k])
// of dst (offsets and strides in elements, strides may be negative).
func MoveElems(esize int, dst []byte, dOff int, dSt []int, src []byte, sOff int, sSt []int, shape []int) {
	if len(dst) == 0 || len(src) == 0 {
		return
	}
	var bd, bs, bn [8]int
	dSt, sSt, shape = simplify(dSt, sSt, shape, bd[:0], bs[:0], bn[:0])
	switch esize {
	case 1:
		copyStrided(dst, dOff, dSt, src, sOff, sSt, shape)
	case 2:
		copyStrided(View16(dst), dOff, dSt, View16(src), sOff, sSt, shape)
	case 4:
		copyStrided(View32(dst), dOff, dSt, View32(src), sOff, sSt, shape)
	case 8:
		copyStrided(View64(dst), dOff, dSt, View64(src), sOff, sSt, shape)
	default:
		panic(fmt.Sprintf("hostmem: MoveElems of %d-byte elements", esize))
	}
}

// FillElems sets every element of dst (of len(v) bytes: 1, 2, 4 or 8) to the
// one element v.
func FillElems(dst, v []byte) {
	if len(dst) == 0 {
		return
	}
	switch len(v) {
	case 1:
		fill(dst, v[0])
	case 2:
		fill(View16(dst), View16(v)[0])
	case 4:
		fill(View32(dst), View32(v)[0])
	case 8:
		fill(View64(dst), View64(v)[0])
	default:
		panic(fmt.Sprintf("hostmem: FillElems of %d-byte elements", len(v)))
	}
}

// fill sets every element of d to x: a few by hand, then by copying the
// filled prefix onto the rest, which runs at memmove's speed (4 KiB at a
// time, so the source stays in L1).
func fill[T any](d []T, x T) {
	n := min(len(d), 16)
	for i := range d[:n] {
		d[i] = x
	}
	for n < len(d) {
		n += copy(d[n:], d[:min(n, 4096/max(int(unsafe.Sizeof(x)), 1))])
	}
}

// simplify returns a box's strides and shape without its dimensions of
// size 1 and with neighbours that both sides walk as one merged (the
// outer's stride the inner's times its size, a broadcast's zeros
// included), appended to d, s and n: the copy's innermost loop then runs
// as long as the layouts allow (a broadcast over trailing dimensions of
// size 1 copied element by element). A box with an empty dimension is
// returned as it is.
func simplify(dSt, sSt, shape, d, s, n []int) ([]int, []int, []int) {
	if slices.Contains(shape, 0) {
		return dSt, sSt, shape
	}
	for i, size := range shape {
		if size == 1 {
			continue
		}
		if k := len(n) - 1; k >= 0 && d[k] == dSt[i]*size && s[k] == sSt[i]*size {
			n[k] *= size
			d[k], s[k] = dSt[i], sSt[i]
			continue
		}
		d, s, n = append(d, dSt[i]), append(s, sSt[i]), append(n, size)
	}
	return d, s, n
}
