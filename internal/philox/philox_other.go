//go:build !amd64 || purego

package philox

// vector is false: Fill computes a block at a time.
const vector = false

func fill16(*[2]uint32, uint64, *uint32, int) { panic("philox: no vector blocks here") }
