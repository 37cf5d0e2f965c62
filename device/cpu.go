package device

import (
	"fmt"
	"math/bits"
	"runtime"
	"sync/atomic"
	"unsafe"
)

// CPUDevice is host memory and host cores. Its buffers are *HostBuffer.
type CPUDevice struct {
	name     string
	kind     Kind
	cache    *bufferCache
	recycle  [maxClass + 1]func(*uint64) // per size class: the finalizer that recycles its memory
	workers  workerPool
	stats    PoolStats
	maxAlloc atomic.Int64 // the largest buffer Alloc gives
}

// PoolStats counts what the CPU buffer cache did; read with Stats.
type PoolStats struct {
	Allocs   atomic.Int64 // buffers requested
	Hits     atomic.Int64 // requests served from the cache
	Frees    atomic.Int64 // buffers returned to the cache
	Recycled atomic.Int64 // buffers that came back to it once nothing referenced them
}

// HostBuffer is CPU memory, 64-byte aligned when at least 64 bytes long.
type HostBuffer struct {
	dev   *CPUDevice
	bytes []byte
	base  *uint64 // the start of bytes' allocation (recycled memory; nil for the inline and foreign)
	refs  atomic.Int32
	class int16 // size class, or -1 when not owned by the cache
	// small holds buffers of up to 64 bytes inline, so a scalar costs one
	// allocation.
	small [8]uint64
}

var hostCPU, secondCPU *CPUDevice

// defaultMaxAlloc is the largest buffer the CPU device gives where the
// machine's memory is unknown.
const defaultMaxAlloc = 1 << 46

// newCPU makes the CPU device cpu:<ordinal>, with buffers and workers of
// its own.
func newCPU(ordinal int) *CPUDevice { return NewHostDevice(fmt.Sprintf("cpu:%d", ordinal), CPU) }

// NewHostDevice returns a device named name of kind whose buffers are host
// memory (*HostBuffer) and whose kernels may shard work over host cores, as
// the CPU's do: it runs the kernels registered for kind, not the CPU's.
// It is for backends that emulate a device in host memory, and for tests
// of what dispatch, graphs and copies do on a device of another kind. Each
// call starts a device with workers of its own; keep the ones you make.
func NewHostDevice(name string, kind Kind) *CPUDevice {
	c := &CPUDevice{name: name, kind: kind, cache: newBufferCache(defaultCacheLimit())}
	for class := range c.recycle {
		c.recycle[class] = func(base *uint64) { c.recycled(base, class) }
	}
	c.SetMaxAlloc(0)
	c.workers.start()
	return c
}

// Name returns the device's name: "cpu:0" (or "cpu:1" for the second
// instance), or the one NewHostDevice was given.
func (c *CPUDevice) Name() string { return c.name }

// String is the device's name, so that printing a device shows "cpu:0".
func (c *CPUDevice) String() string { return c.name }

// Kind returns CPU, or the kind NewHostDevice was given.
func (c *CPUDevice) Kind() Kind { return c.kind }

// Stats returns the buffer cache's counters.
func (c *CPUDevice) Stats() *PoolStats { return &c.stats }

// Workers returns how many goroutines (the caller included) Parallel uses.
func (c *CPUDevice) Workers() int { return c.workers.n + 1 }

// Size classes: 64 bytes, then four steps per doubling (25% waste at most).
const (
	minClassBytes = 64
	maxClass      = 4*(48-7) + 4
)

func sizeClass(n int) int {
	if n <= minClassBytes {
		return 0
	}
	e := bits.Len(uint(n - 1)) // 2^(e-1) < n <= 2^e
	half := 1 << (e - 1)
	q := ((n-half)*4 + half - 1) / half
	return (e-7)*4 + q
}

func classBytes(class int) int {
	if class == 0 {
		return minClassBytes
	}
	e := (class-1)/4 + 7
	q := (class-1)%4 + 1
	return (1 << (e - 1)) * (4 + q) / 4
}

// SetMaxAlloc sets the largest buffer Alloc gives, in bytes; 0 restores
// the default: the least of the machine's physical memory, the memory
// limit of the process's cgroup (a container's) and its ulimit -v and -d
// limits. A larger request is an error wrapping ErrOutOfMemory, where the
// Go runtime would end the process. Whatever the setting, a buffer that
// the address-space limit (ulimit -v) no longer leaves room for is
// refused too.
func (c *CPUDevice) SetMaxAlloc(nbytes int) {
	if nbytes <= 0 {
		nbytes = memoryLimit()
		if nbytes <= 0 {
			nbytes = defaultMaxAlloc
		}
	}
	c.maxAlloc.Store(int64(nbytes))
}

// MaxAlloc returns the largest buffer Alloc gives, in bytes.
func (c *CPUDevice) MaxAlloc() int { return int(c.maxAlloc.Load()) }

// Alloc returns a host buffer of at least nbytes bytes, reusing a cached
// buffer of the same size class when one is free. Requests beyond MaxAlloc
// are an error wrapping ErrOutOfMemory.
func (c *CPUDevice) Alloc(nbytes int) (Buffer, error) {
	if err := CheckAlloc(c, nbytes); err != nil {
		return nil, err
	}
	if err := c.checkAddressSpace(nbytes); err != nil {
		return nil, err
	}
	c.stats.Allocs.Add(1)
	if nbytes == 0 {
		return &HostBuffer{dev: c, class: -1}, nil
	}
	class := sizeClass(nbytes)
	if class > maxClass {
		return nil, fmt.Errorf("%w: %d bytes is beyond the largest size class", ErrOutOfMemory, nbytes)
	}
	if b := c.cache.get(class); b != nil {
		c.stats.Hits.Add(1)
		b.bytes = b.bytes[:nbytes]
		c.watch(b)
		return b, nil
	}
	b := &HostBuffer{dev: c, class: int16(class)}
	if class == 0 {
		b.bytes = unsafe.Slice((*byte)(unsafe.Pointer(&b.small[0])), minClassBytes)[:nbytes]
	} else {
		b.bytes, b.base = alignedBytes(classBytes(class))
		b.bytes = b.bytes[:nbytes]
		c.watch(b)
	}
	return b, nil
}

// Large buffers that nothing references any more return to the cache by
// themselves. Eager code mostly drops its results, and a result the
// collector frees is a large object it must sweep, that the next op
// asks the heap for afresh, zeroed (and, with the heap shrinking and
// growing, its pages returned to the kernel and faulted in again): a
// 64K-element Add took 30 times as long dropped as released
// (bench/README.md, "Mid-sized eager ops"). The watch is on the memory
// itself, not on the HostBuffer or a tensor: a slice of it that someone
// still holds (HostBytes kept past its tensor, a pinned pointer lent to
// MPI) keeps it out of the cache. A finalizer, unlike a cleanup, may give
// the memory a new owner; an explicitly freed buffer drops its watch (its
// memory is cached already).

// recycleMin is the least size class watched: the heap allocates smaller
// ones cheaply, and a finalizer costs more than it saves there.
const recycleMin = 32 << 10

// watch sets the finalizer that recycles b's memory once nothing
// references it.
func (c *CPUDevice) watch(b *HostBuffer) {
	if b.base != nil && cap(b.bytes) >= recycleMin {
		runtime.SetFinalizer(b.base, c.recycle[b.class])
	}
}

// recycled puts the memory at base, of size class class, back into the
// cache under a new HostBuffer (the finalizer of watch).
func (c *CPUDevice) recycled(base *uint64, class int) {
	n := classBytes(class)
	all := unsafe.Slice((*byte)(unsafe.Pointer(base)), ((n+7)/8+8)*8)
	skip := int((64 - uintptr(unsafe.Pointer(base))%64) % 64)
	c.stats.Recycled.Add(1)
	c.cache.put(&HostBuffer{dev: c, class: int16(class), base: base, bytes: all[skip : skip+n : skip+n]})
}

// addressSpaceSlack is what a buffer must leave of the address space that
// RLIMIT_AS allows, for the Go runtime's own mappings.
const addressSpaceSlack = 64 << 20

// checkAddressSpace refuses a large buffer that RLIMIT_AS no longer
// leaves room for (it reads /proc/self/statm, so only for buffers of
// 16 MiB or more, and only under such a limit).
func (c *CPUDevice) checkAddressSpace(nbytes int) error {
	if nbytes < 16<<20 {
		return nil
	}
	left := addressSpaceLeft()
	if need := classBytes(sizeClass(nbytes)); left >= 0 && need > left-addressSpaceSlack {
		return fmt.Errorf("%w: %d bytes asked of %s, where the address-space limit (ulimit -v) leaves %d", ErrOutOfMemory, nbytes, c.Name(), max(left, 0))
	}
	return nil
}

// hugeMin is the buffer size from which the CPU device asks for
// transparent huge pages (see adviseHugePages).
const hugeMin = 4 << 20

// alignedBytes returns n bytes whose start is 64-byte aligned (8-byte for
// n < 64), so vector kernels can use aligned loads on whole rows, and the
// start of their allocation.
func alignedBytes(n int) ([]byte, *uint64) {
	words := make([]uint64, (n+7)/8+8)
	p := unsafe.Pointer(&words[0])
	skip := int((64 - uintptr(p)%64) % 64)
	all := unsafe.Slice((*byte)(p), len(words)*8)
	if n >= hugeMin {
		adviseHugePages(all)
	}
	return all[skip : skip+n : skip+n], &words[0]
}

// Free returns b to the cache. Buffers that wrap foreign memory are dropped.
func (c *CPUDevice) Free(b Buffer) {
	hb, ok := b.(*HostBuffer)
	if !ok || hb.dev != c {
		panic(fmt.Sprintf("device: %s cannot free a buffer of %s", c.name, b.Device().Name()))
	}
	if hb.class < 0 {
		return
	}
	if hb.base != nil && cap(hb.bytes) >= recycleMin {
		runtime.SetFinalizer(hb.base, nil) // cached now: the watch would cache it twice
	}
	c.stats.Frees.Add(1)
	c.cache.put(hb)
}

// CopyToHost copies from a host buffer into dst.
func (c *CPUDevice) CopyToHost(dst []byte, src Buffer, srcOff int) error {
	hb, ok := src.(*HostBuffer)
	if !ok {
		return fmt.Errorf("%w: %s cannot read a buffer of %s", ErrCopy, c.name, src.Device().Name())
	}
	if srcOff < 0 || srcOff+len(dst) > len(hb.bytes) {
		return fmt.Errorf("%w: range [%d, %d) outside a %d-byte buffer", ErrCopy, srcOff, srcOff+len(dst), len(hb.bytes))
	}
	copy(dst, hb.bytes[srcOff:])
	return nil
}

// CopyFromHost copies src into a host buffer.
func (c *CPUDevice) CopyFromHost(dst Buffer, dstOff int, src []byte) error {
	hb, ok := dst.(*HostBuffer)
	if !ok {
		return fmt.Errorf("%w: %s cannot write a buffer of %s", ErrCopy, c.name, dst.Device().Name())
	}
	if dstOff < 0 || dstOff+len(src) > len(hb.bytes) {
		return fmt.Errorf("%w: range [%d, %d) outside a %d-byte buffer", ErrCopy, dstOff, dstOff+len(src), len(hb.bytes))
	}
	copy(hb.bytes[dstOff:], src)
	return nil
}

// Synchronize returns at once: CPU kernels finish before they return.
func (c *CPUDevice) Synchronize() error { return nil }

// WrapHost returns a buffer over memory the caller owns (for zero-copy
// interoperation). The cache never reuses it; the caller must keep the
// memory alive and unchanged while tensors use it.
func (c *CPUDevice) WrapHost(b []byte) *HostBuffer {
	return &HostBuffer{dev: c, bytes: b, class: -1}
}

// Device returns the CPU device.
func (b *HostBuffer) Device() Device { return b.dev }

// Size returns the usable size in bytes.
func (b *HostBuffer) Size() int { return len(b.bytes) }

// Refs returns the buffer's reference count.
func (b *HostBuffer) Refs() *atomic.Int32 { return &b.refs }

// Bytes returns the buffer's memory. It stays valid until the buffer is freed.
func (b *HostBuffer) Bytes() []byte { return b.bytes }
