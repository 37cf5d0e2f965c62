package tensor

import "github.com/eagerflow/eagerflow/device"

// Byte-level element movers that moved to package device in November
// 2026. They stay here, deprecated, for at least one minor release
// (CHANGELOG.md).

// FillElems sets every element of dst (of dtype dt) to the one element in
// v.
//
// Deprecated: use device.FillElems(dst, v).
func FillElems(dt DType, dst, v []byte) { device.FillElems(dst, v[:dt.Size()]) }

// MoveElems copies a box of elements of dtype dt between raw buffers
// (offsets and strides in elements).
//
// Deprecated: use device.MoveElems(dt.Size(), ...).
func MoveElems(dt DType, dst []byte, dOff int, dSt []int, src []byte, sOff int, sSt []int, shape []int) {
	device.MoveElems(dt.Size(), dst, dOff, dSt, src, sOff, sSt, shape)
}

// View32 reinterprets b as 32-bit words (b must be 4-byte aligned).
//
// Deprecated: use device.View32.
func View32(b []byte) []uint32 { return device.View32(b) }

// View64 reinterprets b as 64-bit words (b must be 8-byte aligned).
//
// Deprecated: use device.View64.
func View64(b []byte) []uint64 { return device.View64(b) }
