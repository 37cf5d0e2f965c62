package castcache_test

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/eagerflow/eagerflow/internal/castcache"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Writable hands out the copy's own buffer where nothing else holds it,
// a new one where a view does (the values the view's holder read stay);
// commit makes what was written the copy at the variable's version, which
// the next assignment leaves stale.
func TestWritable(t *testing.T) {
	v := tape.NewVariable("w", tensor.FromSlice([]float32{1, 2, 3}))
	view := ops.Cast(v.Value(), tensor.BFloat16) // kept, and held
	if dst, _ := castcache.Writable(v.Value(), tensor.BFloat16); dst.Buffer() == view.Buffer() {
		t.Fatal("Writable handed out the buffer a view holds")
	}
	own := view.Buffer()
	view.Release()
	v.Assign(tensor.FromSlice([]float32{4, 5, 6}))
	dst, commit := castcache.Writable(v.Value(), tensor.BFloat16)
	if dst.Buffer() != own {
		t.Error("with no view held, Writable did not hand out the copy's own buffer")
	}
	if castcache.Get(v.Value(), tensor.BFloat16) != nil {
		t.Fatal("before commit, the copy serves a version it does not hold")
	}
	b := dst.Buffer().(interface{ Bytes() []byte }).Bytes()
	b[0], b[1] = 0x00, 0x40 // element 0: bfloat16 2.0, 0x4000, as an update writes it
	commit()
	got := castcache.Get(v.Value(), tensor.BFloat16)
	if got == nil || tensor.ToSlice[float32](ops.Cast(got, tensor.Float32))[0] != 2 {
		t.Fatalf("after commit: %v, want the written copy", got)
	}
	got.Release()
	v.Assign(tensor.FromSlice([]float32{7, 8, 9}))
	if castcache.Get(v.Value(), tensor.BFloat16) != nil {
		t.Error("after an assignment, the copy serves a version it does not hold")
	}
}

// A collected variable's copies go with it.
func TestCopiesGoWithTheirVariable(t *testing.T) {
	before := castcache.Len()
	func() {
		v := tape.NewVariable("w", tensor.FromSlice([]float32{1, 2}))
		ops.Cast(v.Value(), tensor.Float16).Release()
		if castcache.Len() != before+1 {
			t.Fatalf("%d copies kept after a cast, want %d", castcache.Len(), before+1)
		}
	}()
	deadline := time.Now().Add(10 * time.Second)
	for castcache.Len() > before && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if castcache.Len() > before {
		t.Errorf("%d copies kept after the variable was collected, want %d", castcache.Len(), before)
	}
}

// Goroutines casting one variable at once (inference sharing a model)
// each get the value's cast, whichever of them makes the copy.
func TestConcurrentCasts(t *testing.T) {
	v := tape.NewVariable("w", tensor.RandNormal(tensor.NewRNG(1), tensor.Float32, 64))
	want := tensor.ToSlice[float32](ops.Cast(ops.Cast(ops.Identity(v.Value()), tensor.BFloat16), tensor.Float32))
	errs := make(chan string, 8)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				c := ops.Cast(v.Value(), tensor.BFloat16)
				got := tensor.ToSlice[float32](ops.Cast(c, tensor.Float32))
				c.Release()
				if !slices.Equal(got, want) {
					errs <- fmt.Sprintf("goroutine %d: a cast differs from the value's", g)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
