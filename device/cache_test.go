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
