package device

import (
	"runtime"
	"testing"
	"time"
)

// A freed buffer is served again after a garbage collection (a sync.Pool
// would have lost it), and a class unused through whole collection cycles
// drains.
func TestBufferCacheSurvivesCollectionsAndDrainsWhenIdle(t *testing.T) {
	c := NewHostDevice("cache-test", CPU)
	b, err := c.Alloc(10000)
	if err != nil {
		t.Fatal(err)
	}
	class := int(b.(*HostBuffer).class)
	c.Free(b)
	runtime.GC()
	again, err := c.Alloc(10000)
	if err != nil {
		t.Fatal(err)
	}
	if again != b {
		t.Fatal("the freed buffer was not served again after a collection")
	}
	c.Free(again)
	// Unused from here on: the cycle that saw it held is followed by one
	// that drops it. trim runs in the finalizer goroutine, after the GC.
	deadline := time.Now().Add(10 * time.Second)
	for c.cache.held(class) > 0 {
		if time.Now().After(deadline) {
			t.Fatalf("an idle buffer is still cached after collections (%d held)", c.cache.held(class))
		}
		runtime.GC()
		time.Sleep(time.Millisecond)
	}
	if got := c.cache.bytes.Load(); got != 0 {
		t.Errorf("the cache counts %d bytes with nothing held", got)
	}
}

// Buffers past the cache's limit go to the collector.
func TestBufferCacheLimit(t *testing.T) {
	c := newBufferCache(int64(3 * (classBytes(sizeClass(4096)) + cacheOverhead)))
	d := NewHostDevice("cache-limit", CPU)
	d.cache = c
	var bufs []Buffer
	for range 5 {
		b, err := d.Alloc(4096)
		if err != nil {
			t.Fatal(err)
		}
		bufs = append(bufs, b)
	}
	for _, b := range bufs {
		d.Free(b)
	}
	if got := c.held(sizeClass(4096)); got != 3 {
		t.Errorf("%d buffers cached, want the limit's 3", got)
	}
}

// A large buffer nothing references comes back to the cache by itself
// (its memory is watched), but not while a slice of its memory is held:
// bytes someone kept past their buffer are never handed to another.
func TestDroppedBuffersAreRecycledUnlessHeld(t *testing.T) {
	c := NewHostDevice("recycle-test", CPU)
	const n = 64 << 10
	before := c.Stats().Recycled.Load()
	for range 64 {
		if _, err := c.Alloc(n); err != nil { // dropped at once
			t.Fatal(err)
		}
	}
	kept, _ := c.Alloc(n)
	held := kept.(*HostBuffer).bytes
	for i := range held {
		held[i] = 0xA5
	}
	kept = nil
	for range 3 {
		runtime.GC()
		time.Sleep(10 * time.Millisecond) // finalizers run on their own goroutine
	}
	if got := c.Stats().Recycled.Load() - before; got < 32 {
		t.Errorf("%d of 64 dropped buffers recycled", got)
	}
	// Every buffer the cache gives now is another memory than held.
	for range 200 {
		b, err := c.Alloc(n)
		if err != nil {
			t.Fatal(err)
		}
		if &b.(*HostBuffer).bytes[0] == &held[0] {
			t.Fatal("a buffer whose bytes are still held was handed out again")
		}
		for i := range b.(*HostBuffer).bytes {
			b.(*HostBuffer).bytes[i] = 0
		}
	}
	for i, v := range held {
		if v != 0xA5 {
			t.Fatalf("held byte %d changed to %#x", i, v)
		}
	}
	runtime.KeepAlive(held)
}
