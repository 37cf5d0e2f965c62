package tape_test

import (
	"reflect"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// settledActivations collects dropped tapes until the count of recording
// tapes has not moved for several rounds, and returns it.
func settledActivations() int {
	prev, same := -1<<30, 0
	for range 200 {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
		n := tape.RecordingTapes()
		if n == prev {
			if same++; same == 3 {
				return n
			}
		} else {
			prev, same = n, 0
		}
	}
	return prev
}

// activationsDownTo collects dropped tapes until at most want count as
// recording, or ten seconds pass, and returns the count. Cleanups run on
// the runtime's own goroutine some time after the collection that finds
// their tape: a loaded machine (two cores under the race detector) may
// take many collections to run tens of thousands of them.
func activationsDownTo(want int) int {
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
		n := tape.RecordingTapes()
		if n <= want || time.Now().After(deadline) {
			return n
		}
	}
}

// A tensor watched by one tape per step keeps none of them: the steps stay
// as fast as the first, and the dropped tapes stop counting as recording.
func TestWatchKeepsNoTapeAlive(t *testing.T) {
	base := settledActivations()
	x := tensor.FromSlice([]float64{1, 2, 3})
	step := func() {
		tp := tape.New()
		tp.Watch(x)
		g := tp.Gradient(ops.Sum(ops.Square(x)), x)[0]
		if got := tensor.ToSlice[float64](g); got[2] != 6 {
			t.Fatalf("gradient %v", got)
		}
	}
	for range 5000 {
		step()
	}
	// Tapes watched and dropped without Gradient or Stop.
	for range 5000 {
		tape.New().Watch(x)
	}
	if n := activationsDownTo(base); n != base {
		t.Errorf("%d tapes still count as recording after the dropped ones were collected (base %d)", n-base, base)
	}
	a := x.Autodiff()
	if a == nil {
		t.Fatal("x lost its watch record")
	}
	// Only tapes not yet collected can remain; a collected or answered
	// one is dropped at the next Watch.
	tape.New().Watch(x)
	runtime.GC()
	tp := tape.New()
	tp.Watch(x)
	defer tp.Stop()
	if s := watchCount(x); s > 3 {
		t.Errorf("x's watch set holds %d tapes after 10000 steps", s)
	}
}

// watchCount is the length of x's watch set, through the one exported
// view of it: the tape's own record of x.
func watchCount(x *tensor.Tensor) int {
	a := x.Autodiff()
	if a == nil {
		return 0
	}
	return reflectLen(a.Watch)
}

// New and Stop racing with the collector (a tape may be collected while
// its Stop runs) count every tape off exactly once.
func TestStopAndCollectionCountOnce(t *testing.T) {
	base := settledActivations()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				runtime.GC()
			}
		}
	}()
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 20000 {
				tp := tape.New()
				if (i+g)%3 != 0 {
					tp.Stop() // the tape is garbage from inside Stop on
				}
				if n := tape.RecordingTapes(); n < 0 {
					t.Errorf("the count of recording tapes is %d", n)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	if n := activationsDownTo(base); n != base {
		t.Errorf("%d recording tapes after every tape stopped or was collected (base %d)", n, base)
	}
}

func reflectLen(v any) int { return reflect.ValueOf(v).Len() }
