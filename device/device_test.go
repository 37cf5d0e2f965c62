package device

import (
	"errors"
	"sync/atomic"
	"testing"
	"unsafe"
)

func TestSizeClassesCoverAndAreTight(t *testing.T) {
	for n := 1; n < 1<<20; n = n*5/4 + 1 {
		c := sizeClass(n)
		if got := classBytes(c); got < n || got > max(64, n*5/4+1) {
			t.Fatalf("size %d: class %d holds %d bytes", n, c, got)
		}
		if c > 0 && classBytes(c-1) >= n {
			t.Fatalf("size %d: smaller class %d would fit", n, c-1)
		}
	}
}

func TestAllocReusesAndAligns(t *testing.T) {
	cpu := Host()
	b, err := cpu.Alloc(1000)
	if err != nil {
		t.Fatal(err)
	}
	hb := b.(*HostBuffer)
	if len(hb.Bytes()) != 1000 || uintptr(unsafe.Pointer(&hb.Bytes()[0]))%64 != 0 {
		t.Fatalf("buffer of %d bytes at %p", len(hb.Bytes()), &hb.Bytes()[0])
	}
	if _, err := cpu.Alloc(-1); !errors.Is(err, ErrOutOfMemory) {
		t.Errorf("negative alloc: %v", err)
	}
	if _, err := Lookup("gpu:7"); !errors.Is(err, ErrUnknownDevice) {
		t.Errorf("Lookup(gpu:7) = %v", err)
	}
	if d, err := Lookup("cpu:0"); err != nil || d != Device(cpu) {
		t.Errorf("Lookup(cpu:0) = %v, %v", d, err)
	}
}

func TestParallelCoversRangeOnce(t *testing.T) {
	for _, n := range []int{0, 1, 7, 1000, 100000} {
		hits := make([]int32, n)
		Host().Parallel(n, 10, func(lo, hi int) {
			for i := lo; i < hi; i++ {
				atomic.AddInt32(&hits[i], 1)
			}
		})
		for i, h := range hits {
			if h != 1 {
				t.Fatalf("n=%d: index %d visited %d times", n, i, h)
			}
		}
	}
	// Nested calls must not deadlock.
	var total atomic.Int64
	Host().Parallel(8, 1e6, func(lo, hi int) {
		Host().Parallel(1000*(hi-lo), 1e3, func(a, b int) { total.Add(int64(b - a)) })
	})
	if total.Load() != 8000 {
		t.Errorf("nested total %d", total.Load())
	}
}

// A panic in a shard reaches the caller, whichever goroutine ran the
// shard, after every running shard has finished; the pool keeps working.
func TestParallelPanicReachesTheCaller(t *testing.T) {
	for trial := range 50 {
		var running atomic.Int32
		var after atomic.Int32
		func() {
			defer func() {
				r := recover()
				if r == nil {
					t.Fatalf("trial %d: no panic", trial)
				}
				if sp, ok := r.(*ShardPanic); ok {
					r = sp.Value
				}
				if r != "boom" {
					t.Fatalf("trial %d: panic %v", trial, r)
				}
				if n := running.Load(); n != 0 {
					t.Fatalf("trial %d: %d shards still running after the panic reached the caller", trial, n)
				}
				after.Store(1)
			}()
			Host().Parallel(64, 1e6, func(lo, hi int) {
				running.Add(1)
				defer running.Add(-1)
				if lo <= trial%64 && trial%64 < hi {
					panic("boom")
				}
				for i := 0; i < 20000; i++ {
					_ = i * i
				}
			})
		}()
		if after.Load() != 1 {
			t.Fatal("recover did not run")
		}
	}
	var total atomic.Int64
	Host().Parallel(1000, 1e3, func(lo, hi int) { total.Add(int64(hi - lo)) })
	if total.Load() != 1000 {
		t.Errorf("after the panics: total %d", total.Load())
	}
}

// The second CPU device has its own name, buffers and workers, and both
// CPU devices copy and fill each other's kind of buffer.
func TestSecondCPUDevice(t *testing.T) {
	a, b := Host(), SecondCPU()
	if b.Name() != "cpu:1" || b.Kind() != CPU || a == b {
		t.Fatalf("second CPU: %s %v", b.Name(), b.Kind())
	}
	if d, err := Lookup("cpu:1"); err != nil || d != Device(b) {
		t.Errorf("Lookup(cpu:1) = %v, %v", d, err)
	}
	src, _ := a.Alloc(16)
	dst, _ := b.Alloc(16)
	a.Fill(src, 0, 4, []byte{1, 2, 3, 4})
	if err := b.Copy(dst, 0, []int{1}, src, 0, []int{1}, []int{4}, 4); err != nil {
		t.Fatal(err)
	}
	got := dst.(*HostBuffer).Bytes()
	for i := range 16 {
		if got[i] != byte(i%4+1) {
			t.Fatalf("copied %v", got)
		}
	}
	// A transposed copy: [2 2] of 4-byte elements, read column-major.
	a.Fill(src, 0, 1, []byte{9, 0, 0, 0})
	b.Copy(dst, 0, []int{2, 1}, src, 0, []int{1, 2}, []int{2, 2}, 4)
	if got := View32(dst.(*HostBuffer).Bytes()); got[0] != 9 || got[1] != 0x04030201 {
		t.Errorf("strided copy %v", got)
	}
	if err := a.Fill(dst, 0, 1, []byte{0}); !errors.Is(err, ErrCopy) {
		t.Errorf("cpu:0 writing a cpu:1 buffer: %v", err)
	}
	b.Free(dst)
	a.Free(src)
}

// A host-memory device of another kind: its own name, kind and buffers,
// which the CPU devices copy to and from.
func TestHostDeviceOfAnotherKind(t *testing.T) {
	kind := RegisterKind("hosttest")
	if again := RegisterKind("hosttest"); again != kind || kind.String() != "hosttest" {
		t.Fatalf("RegisterKind: %v then %v", kind, again)
	}
	d := NewHostDevice("hosttest:0", kind)
	if d.Name() != "hosttest:0" || d.Kind() != kind || d.Workers() != Host().Workers() {
		t.Fatalf("%s %v %d workers", d.Name(), d.Kind(), d.Workers())
	}
	buf, err := d.Alloc(8)
	if err != nil || buf.Device() != Device(d) {
		t.Fatalf("Alloc: %v on %v", err, buf.Device())
	}
	src, _ := Host().Alloc(8)
	Host().Fill(src, 0, 2, []byte{7, 0, 0, 0})
	if err := d.Copy(buf, 0, []int{1}, src, 0, []int{1}, []int{2}, 4); err != nil {
		t.Fatal(err)
	}
	if got := View32(buf.(*HostBuffer).Bytes()); got[0] != 7 || got[1] != 7 {
		t.Errorf("copied %v", got)
	}
	d.Free(buf)
	Host().Free(src)
}
