package device

import (
	"runtime"
	"sync"
	"sync/atomic"
)

// bufferCache keeps freed host buffers by size class for the next Alloc.
// Unlike a sync.Pool, which the garbage collector empties every other
// cycle, it keeps what is in use from step to step across collections: a
// training step's activations are freed and asked for again each step,
// and with a pool a collection between two steps sent them back to the
// heap, to be allocated (and their pages faulted in) once more. What sat
// unused through a whole collection cycle (the fewest buffers a class held
// since the last collection) is dropped at the next, so an idle program's
// cache drains; and the cache never holds more than its limit.
type bufferCache struct {
	classes [maxClass + 1]classCache
	bytes   atomic.Int64 // held, by class size
	limit   int64
}

type classCache struct {
	mu   sync.Mutex
	bufs []*HostBuffer // the most recently freed last
	low  int           // the fewest held since the last collection
}

// cacheOverhead is what a cached buffer costs besides its bytes (the
// HostBuffer), counted against the limit.
const cacheOverhead = 128

func newBufferCache(limit int64) *bufferCache {
	c := &bufferCache{limit: limit}
	watchCollections(c)
	return c
}

// get returns a cached buffer of class, or nil.
func (c *bufferCache) get(class int) *HostBuffer {
	cc := &c.classes[class]
	cc.mu.Lock()
	n := len(cc.bufs)
	if n == 0 {
		cc.mu.Unlock()
		return nil
	}
	b := cc.bufs[n-1]
	cc.bufs[n-1] = nil
	cc.bufs = cc.bufs[:n-1]
	cc.low = min(cc.low, n-1)
	cc.mu.Unlock()
	c.bytes.Add(-int64(classBytes(class) + cacheOverhead))
	return b
}

// put keeps b for reuse unless the cache is full (then the collector
// reclaims it).
func (c *bufferCache) put(b *HostBuffer) {
	size := int64(classBytes(int(b.class)) + cacheOverhead)
	if c.bytes.Add(size) > c.limit {
		c.bytes.Add(-size)
		return
	}
	cc := &c.classes[b.class]
	cc.mu.Lock()
	cc.bufs = append(cc.bufs, b)
	cc.mu.Unlock()
}

// trim drops, in each class, the buffers unused since the last call (the
// oldest ones, at the bottom).
func (c *bufferCache) trim() {
	for class := range c.classes {
		cc := &c.classes[class]
		cc.mu.Lock()
		if idle := cc.low; idle > 0 {
			n := copy(cc.bufs, cc.bufs[idle:])
			clear(cc.bufs[n:])
			cc.bufs = cc.bufs[:n]
			c.bytes.Add(-int64(idle) * int64(classBytes(class)+cacheOverhead))
		}
		cc.low = len(cc.bufs)
		cc.mu.Unlock()
	}
}

// held returns how many buffers of class the cache holds.
func (c *bufferCache) held(class int) int {
	cc := &c.classes[class]
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return len(cc.bufs)
}

// watchCollections calls c.trim after every garbage collection: a
// finalizer on an object nothing references runs once per collection and
// sets itself up again. (c stays reachable through it: devices live as
// long as the program.)
func watchCollections(c *bufferCache) {
	runtime.SetFinalizer(&collectionMark{cache: c}, onCollection)
}

type collectionMark struct{ cache *bufferCache }

func onCollection(m *collectionMark) {
	m.cache.trim()
	watchCollections(m.cache)
}

// defaultCacheLimit is how much the CPU buffer cache may hold: an eighth
// of the machine's memory, at most 4 GiB (1 GiB where the memory is
// unknown).
func defaultCacheLimit() int64 {
	mem := int64(memoryLimit())
	if mem <= 0 {
		return 1 << 30
	}
	return min(mem/8, 4<<30)
}
