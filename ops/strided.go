package ops

import (
	"unsafe"

	"github.com/eagerflow/eagerflow/tensor"
)

// copyStrided copies a box of the given shape from src to dst, where each
// side addresses element (i0, i1, ...) at off + sum(i_k * stride_k). Strides
// and offsets count elements. The innermost dimension is a tight loop.
func copyStrided[T uint8 | uint32 | uint64](dst []T, dOff int, dSt []int, src []T, sOff int, sSt []int, shape []int) {
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
	n, ds, ss := shape[r-1], dSt[r-1], sSt[r-1]
	idx := make([]int, r-1)
	for {
		if ds == 1 && ss == 1 {
			copy(dst[dOff:dOff+n], src[sOff:sOff+n])
		} else {
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

func view32(b []byte) []uint32 {
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
}
func view64(b []byte) []uint64 {
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/8)
}

// moveElems runs copyStrided on raw buffers of dtype dt.
func moveElems(dt tensor.DType, dst []byte, dOff int, dSt []int, src []byte, sOff int, sSt []int, shape []int) {
	if len(dst) == 0 || len(src) == 0 {
		return
	}
	switch dt.Size() {
	case 1:
		copyStrided(dst, dOff, dSt, src, sOff, sSt, shape)
	case 4:
		copyStrided(view32(dst), dOff, dSt, view32(src), sOff, sSt, shape)
	case 8:
		copyStrided(view64(dst), dOff, dSt, view64(src), sOff, sSt, shape)
	}
}

// fillElems sets every element of dst (of dtype dt) to the one element in v.
func fillElems(dt tensor.DType, dst, v []byte) {
	if len(dst) == 0 {
		return
	}
	switch dt.Size() {
	case 1:
		for i := range dst {
			dst[i] = v[0]
		}
	case 4:
		d, x := view32(dst), view32(v)[0]
		for i := range d {
			d[i] = x
		}
	case 8:
		d, x := view64(dst), view64(v)[0]
		for i := range d {
			d[i] = x
		}
	}
}
