// Package raw lends a CUDA device's driver handles to the backend's own
// packages that call libraries working on device memory themselves
// (package nccl): the driver, the primary context, the stream every
// kernel queues on, and the device address of a buffer. Package cuda
// fills Of when it is initialised; nothing outside backend/cuda sees it.
package raw

import (
	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/device"
)

// Device is a GPU's handles.
type Device struct {
	Driver cu.Driver
	Ctx    cu.Context
	// Stream is the device's stream: work queued there runs in order with
	// the device's kernels and copies.
	Stream cu.Stream
	// Ptr is the device address of the first byte of a buffer of this
	// device, or an error naming the buffer's device.
	Ptr func(b device.Buffer) (cu.Ptr, error)
	// Sync waits for the work queued on the stream.
	Sync func() error
}

// Of returns the handles of d when it is a CUDA device.
var Of func(d device.Device) (Device, bool)
