package tensor

import "github.com/eagerflow/eagerflow/device"

// MoveElems copies a box of elements of dtype dt between host buffers: the
// element at index (i0, i1, ...) of shape is read at sOff + sum(i_k *
// sSt[k]) of src and written at dOff + sum(i_k * dSt[k]) of dst (offsets and
// strides in elements, strides may be negative). CPU kernels use it for
// every data movement that ignores values.
func MoveElems(dt DType, dst []byte, dOff int, dSt []int, src []byte, sOff int, sSt []int, shape []int) {
	device.MoveElems(dt.Size(), dst, dOff, dSt, src, sOff, sSt, shape)
}

// FillElems sets every element of dst (of dtype dt) to the one element in v.
func FillElems(dt DType, dst, v []byte) { device.FillElems(dst, v[:dt.Size()]) }

// View32 reinterprets b as 32-bit words (b must be 4-byte aligned).
func View32(b []byte) []uint32 { return device.View32(b) }

// View64 reinterprets b as 64-bit words (b must be 8-byte aligned).
func View64(b []byte) []uint64 { return device.View64(b) }
