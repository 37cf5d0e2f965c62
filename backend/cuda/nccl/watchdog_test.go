package nccl

import (
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/tensor"
)

// fakeEvents stands in for the driver's events on the emulated GPU (whose
// streams run only when synchronized, so it has none): passed says
// whether the GPU has passed each mark.
type fakeEvents struct {
	mu        sync.Mutex
	next      cu.Event
	live      map[cu.Event]bool
	passed    bool
	queryErr  error
	destroyed int
}

func (f *fakeEvents) EventRecord(cu.Stream) (cu.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.next++
	f.live[f.next] = true
	return f.next, nil
}

func (f *fakeEvents) EventQuery(e cu.Event) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.live[e] {
		return false, errors.New("a destroyed event")
	}
	return f.passed, f.queryErr
}

func (f *fakeEvents) EventDestroy(e cu.Event) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.live, e)
	f.destroyed++
	return nil
}

func (f *fakeEvents) count() (live, destroyed int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.live), f.destroyed
}

func openWatched(t *testing.T, ev *fakeEvents, timeout time.Duration) *Comm {
	t.Helper()
	c, err := Open(testGPU(t), collective.Single())
	if err != nil {
		t.Fatal(err)
	}
	ev.live = map[cu.Event]bool{}
	c.events = ev
	c.SetTimeout(timeout)
	return c
}

// The watchdog lets go of the collectives the GPU finished, and aborts the
// communicator when one has not finished within the timeout: the next
// call fails with collective.ErrTimeout naming it, instead of the process
// waiting on the GPU for ever.
func TestWatchdog(t *testing.T) {
	x := tensor.FromSlice([]float32{1, 2})
	t.Run("finished", func(t *testing.T) {
		ev := &fakeEvents{passed: true}
		c := openWatched(t, ev, time.Second)
		for range 3 {
			if _, err := c.AllReduce(x, collective.Sum); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(4 * pollInterval)
		if live, destroyed := ev.count(); live != 0 || destroyed != 3 {
			t.Errorf("%d marks left, %d freed", live, destroyed)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("stalled", func(t *testing.T) {
		ev := &fakeEvents{}
		c := openWatched(t, ev, 150*time.Millisecond)
		if _, err := c.AllReduce(x, collective.Sum); err != nil {
			t.Fatal(err)
		}
		if _, err := c.AllGather(x); err != nil { // within the timeout
			t.Fatal(err)
		}
		time.Sleep(150*time.Millisecond + 4*pollInterval)
		_, err := c.Broadcast(x, 0)
		if !errors.Is(err, collective.ErrTimeout) || !strings.Contains(err.Error(), "AllReduce #1") {
			t.Fatalf("after a stall: %v, want ErrTimeout naming AllReduce #1", err)
		}
		if err := c.Barrier(); !errors.Is(err, collective.ErrTimeout) {
			t.Errorf("Barrier after the abort: %v", err)
		}
		c.Close()
	})
	t.Run("failed", func(t *testing.T) {
		ev := &fakeEvents{queryErr: errors.New("an illegal address")}
		c := openWatched(t, ev, time.Minute)
		if _, err := c.AllReduce(x, collective.Sum); err != nil {
			t.Fatal(err)
		}
		time.Sleep(4 * pollInterval)
		if _, err := c.AllReduce(x, collective.Sum); err == nil || !strings.Contains(err.Error(), "an illegal address") {
			t.Errorf("after a GPU fault: %v", err)
		}
		c.Close()
	})
}
