package device

import "github.com/eagerflow/eagerflow/internal/hostmem"

// What only backends need moved to package backend in v0.2.0. These stay,
// deprecated, for at least one minor release (CHANGELOG.md).

// MinShardCost is the estimated cost (about a nanosecond per unit) below
// which splitting work across goroutines does not pay for itself.
//
// Deprecated: use backend.MinShardCost.
const MinShardCost = hostmem.MinShardCost

// MoveElems copies a box of elements of esize bytes between host memory.
//
// Deprecated: use backend.MoveElems.
func MoveElems(esize int, dst []byte, dOff int, dSt []int, src []byte, sOff int, sSt []int, shape []int) {
	hostmem.MoveElems(esize, dst, dOff, dSt, src, sOff, sSt, shape)
}

// FillElems sets every element of dst to the one element v.
//
// Deprecated: use backend.FillElems.
func FillElems(dst, v []byte) { hostmem.FillElems(dst, v) }

// View32 reinterprets b as 32-bit words.
//
// Deprecated: use backend.View32.
func View32(b []byte) []uint32 { return hostmem.View32(b) }

// View64 reinterprets b as 64-bit words.
//
// Deprecated: use backend.View64.
func View64(b []byte) []uint64 { return hostmem.View64(b) }
