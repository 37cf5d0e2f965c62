package data

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// A panic in a stage, on whatever goroutine the stage runs, reaches the
// consumer as a *StageError naming the stage, holding a *PanicError with
// the value and stack; it never ends the process, the consumer never sees
// a clean end first, and no goroutine is left behind.
func TestPanicsInStagesReachTheConsumer(t *testing.T) {
	boom := func(e Element) (Element, error) {
		if tensor.ToSlice[int64](e[0])[0] == 5 {
			panic("boom")
		}
		return e, nil
	}
	shapeMistake := func(e Element) (Element, error) {
		if tensor.ToSlice[int64](e[0])[0] == 3 {
			ops.Add(tensor.Zeros(tensor.Float32, 2), tensor.Zeros(tensor.Float32, 3)) // a *tensor.Error
		}
		return e, nil
	}
	before := runtime.NumGoroutine()
	cases := []struct {
		name, stage string
		ds          *Dataset
		tensorErr   bool
	}{
		{"sequential Map", "Map", Range(0, 20, 1).Map(boom), false},
		{"parallel Map", "Map", Range(0, 100, 1).Map(boom, MapOptions{Parallel: 4}), false},
		{"parallel unordered Map", "Map", Range(0, 100, 1).Map(boom, MapOptions{Parallel: 3, Unordered: true}), false},
		{"parallel Map, shape mistake", "Map", Range(0, 100, 1).Map(shapeMistake, MapOptions{Parallel: 2}), true},
		{"Map below Prefetch", "Map", Range(0, 100, 1).Map(boom).Prefetch(4), false},
		{"Filter below Prefetch", "Filter", Range(0, 100, 1).Filter(func(e Element) (bool, error) {
			_, err := boom(e)
			return true, err
		}).Prefetch(2), false},
		{"generator below Prefetch", "FromGenerator", FromGenerator(func(yield func(Element) bool) error {
			for i := range 10 {
				if i == 4 {
					panic("boom")
				}
				if !yield(Element{tensor.Scalar(int64(i))}) {
					return nil
				}
			}
			return nil
		}).Prefetch(2), false},
		{"parallel Interleave", "Map", Range(0, 4, 1).Interleave(func(e Element) (*Dataset, error) {
			return Range(0, 10, 1).Map(boom), nil
		}, InterleaveOptions{Cycle: 2, Parallel: true}), false},
		{"Interleave's function", "Interleave", Range(0, 10, 1).Interleave(func(e Element) (*Dataset, error) {
			if _, err := boom(e); err != nil {
				return nil, err
			}
			return Range(0, 2, 1), nil
		}, InterleaveOptions{Cycle: 2, Parallel: true}).Prefetch(3), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for range 20 { // the goroutines race differently each run
				_, err := c.ds.Collect(context.Background())
				var se *StageError
				var pe *PanicError
				if !errors.As(err, &se) || !errors.As(err, &pe) {
					t.Fatalf("got %v, want a *StageError holding a *PanicError", err)
				}
				if se.Stage != c.stage || !strings.Contains(err.Error(), "data: "+c.stage+": panic: ") || len(pe.Stack) == 0 {
					t.Fatalf("stage %q: %v", se.Stage, err)
				}
				var te *tensor.Error
				if got := errors.As(err, &te); got != c.tensorErr {
					t.Fatalf("errors.As(*tensor.Error) = %v: %v", got, err)
				}
				if c.tensorErr && !strings.Contains(te.Error(), "not broadcastable") {
					t.Fatalf("the shape mistake's error: %v", te)
				}
			}
		})
	}
	waitGoroutines(t, before)
}

// waitGoroutines fails t if more goroutines than before remain after a
// grace period.
func waitGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if after := runtime.NumGoroutine(); after > before {
		t.Errorf("%d goroutines before, %d after", before, after)
	}
}

// Cancelling a parallel Map waits for the calls running, not for the jobs
// queued behind them.
func TestCancelDropsQueuedMapJobs(t *testing.T) {
	const d = 300 * time.Millisecond
	slow := func(e Element) (Element, error) {
		time.Sleep(d)
		return e, nil
	}
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	ds := Range(0, 100, 1).Map(slow, MapOptions{Parallel: 2})
	var cancelled time.Time
	go func() {
		time.Sleep(d / 3) // both workers busy, jobs queued
		cancelled = time.Now()
		cancel()
	}()
	_, err := ds.Collect(ctx)
	took := time.Since(cancelled)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("got %v", err)
	}
	if took > d*3/2 {
		t.Errorf("Collect returned %v after the cancel; the running calls take at most %v", took, d)
	}
	waitGoroutines(t, before)
}
