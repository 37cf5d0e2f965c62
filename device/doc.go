// Package device defines where tensor memory lives and where kernels run.
//
// A Device owns buffers: it allocates them (from a caching pool), copies
// bytes between them and the host, and synchronizes outstanding work. The
// interface never exposes Go slices, so a GPU backend fits behind it; only the
// CPU device hands out host memory, through HostBuffer.
//
// The CPU device's cache keeps freed buffers by size class (a quarter of a
// doubling apart) across garbage collections, so that a training step's
// activations, freed and asked for again every step, are not reallocated
// after each collection; it holds at most an eighth of the machine's
// memory (4 GiB at most), and a collection drops what a class held unused
// through the whole cycle before it, so an idle program's cache drains.
//
// Devices are named "<kind>:<ordinal>", for example "cpu:0" or "gpu:0", and
// looked up with Lookup. The CPU device "cpu:0" always exists. Default
// returns the device new tensors are created on; SetDefault changes it for
// the whole process (it is not scoped to a goroutine: Go has no
// goroutine-local state). With and WithSoft run a function with ops placed
// on a device (scope.go), process-wide too.
//
// The CPU device also runs work: Parallel splits a loop across a pool of
// worker goroutines sized to GOMAXPROCS when the loop is costly enough to
// pay for the split, and runs it inline otherwise, as TensorFlow's work
// sharder does.
//
// Errors: allocation and copy failures are returned as errors wrapping
// ErrOutOfMemory or ErrCopy; asking for an unknown device returns
// ErrUnknownDevice. All functions are safe for concurrent use.
package device
