// Package backend is what a device backend is built from, beside the
// device interface (package device) and the op registry (package eager):
// a typed view of a host tensor's memory (HostData), tensors over buffers
// a backend owns (FromBuffer, MustEmptyHost), element movers over host
// memory (MoveElems, FillElems, View32, View64) and the grain below which
// host work is not split across cores (MinShardCost). eagerflow's own
// backends (backend/cpu, backend/move, backend/cuda) use it; a program
// that only computes with tensors does not need it.
//
// These names were in packages tensor and device until v0.2.0, where
// they remain, deprecated, for one minor release.
package backend

import (
	"errors"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/hostmem"
	"github.com/eagerflow/eagerflow/tensor"
)

// MinShardCost is the estimated cost (about a nanosecond per unit) below
// which splitting work across goroutines does not pay for itself
// (device.CPUDevice.Parallel's grain).
const MinShardCost = hostmem.MinShardCost

// HostData returns the elements of a tensor on the CPU as a slice of T
// sharing its memory, in layout order. Kernels write their fresh outputs
// through it; anything else treats it as read-only, and only while t is
// reachable. A trace is not told of the access, as it is of HostBytes:
// what a kernel reads is no decision of the traced function's (code that
// hands the values to a user reads them with HostBytes first). It panics
// with a *tensor.Error when T is not t's dtype or t is not on the CPU.
func HostData[T tensor.Elem](t *tensor.Tensor) []T {
	return tensor.HostData[T](t) //nolint:staticcheck // its implementation until tensor's goes (v0.3.0)
}

// MustEmptyHost is an uninitialised tensor of dt and shape in host memory
// (whatever the default device), for code that fills it through
// HostBytes; it panics with a *tensor.Error when it cannot be allocated.
func MustEmptyHost(dt tensor.DType, shape tensor.Shape) *tensor.Tensor {
	return tensor.MustEmptyHost(dt, shape) //nolint:staticcheck // as HostData
}

// OnHost returns t's values as a row-major tensor in host memory, for
// library code that reads bytes (a checkpoint, a dataset's batches): t
// itself where it is one, else a copy (from a device, or of a view). A nil
// t is an error; so is a device that cannot copy.
func OnHost(t *tensor.Tensor) (*tensor.Tensor, error) {
	if t == nil {
		return nil, errors.New("backend: OnHost: the tensor is nil")
	}
	if t.Device() == device.Host() {
		return t.Contiguous(), nil
	}
	return t.To(device.Host())
}

// FromBuffer returns a row-major tensor over buf, a buffer of its device
// (zero-copy interoperation). buf must hold the tensor's bytes; the tensor
// does not own it beyond the device's rules for that buffer.
func FromBuffer(buf device.Buffer, dt tensor.DType, shape tensor.Shape) (*tensor.Tensor, error) {
	return tensor.FromBuffer(buf, dt, shape) //nolint:staticcheck // as HostData
}

// MoveElems copies a box of elements of esize bytes (1, 4 or 8) between
// host memory: the element at index (i0, i1, ...) of shape is read at
// sOff + sum(i_k * sSt[k]) of src and written at dOff + sum(i_k * dSt[k])
// of dst (offsets and strides in elements, strides may be negative).
func MoveElems(esize int, dst []byte, dOff int, dSt []int, src []byte, sOff int, sSt []int, shape []int) {
	hostmem.MoveElems(esize, dst, dOff, dSt, src, sOff, sSt, shape)
}

// FillElems sets every element of dst (of len(v) bytes: 1, 4 or 8) to the
// one element v.
func FillElems(dst, v []byte) { hostmem.FillElems(dst, v) }

// View32 reinterprets b as 32-bit words (b must be 4-byte aligned).
func View32(b []byte) []uint32 { return hostmem.View32(b) }

// View64 reinterprets b as 64-bit words (b must be 8-byte aligned).
func View64(b []byte) []uint64 { return hostmem.View64(b) }
