package data

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/eagerflow/eagerflow/tensor"
)

// Cancelling a pipeline while a user function runs: a function that
// takes the context (MapContext, FilterContext, FromGeneratorContext) sees
// it cancelled and the pipeline returns at once; a plain one is waited
// for, and no further element is started (issue 31: with Prefetch(2) a
// second 2 s element ran after the cancellation).
func TestCancelReachesUserFunctions(t *testing.T) {
	const slow = 2 * time.Second
	sleep := func(ctx context.Context) error {
		select {
		case <-time.After(slow):
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	src := func() *Dataset { return Range(0, 100, 1) }
	aware := func(ctx context.Context, e Element) (Element, error) { return e, sleep(ctx) }
	plain := func(e Element) (Element, error) { time.Sleep(slow); return e, nil }
	cases := []struct {
		name  string
		ds    *Dataset
		limit time.Duration
	}{
		{"MapContext", src().MapContext(aware), slow / 2},
		{"MapContext Prefetch(2)", src().MapContext(aware).Prefetch(2), slow / 2},
		{"MapContext parallel", src().MapContext(aware, MapOptions{Parallel: 2}), slow / 2},
		{"FilterContext", src().FilterContext(func(ctx context.Context, e Element) (bool, error) { return true, sleep(ctx) }), slow / 2},
		{"FromGeneratorContext", FromGeneratorContext(func(ctx context.Context, yield func(Element) bool) error {
			for i := 0; ; i++ {
				if err := sleep(ctx); err != nil {
					return err
				}
				if !yield(Element{tensor.Scalar(int64(i))}) {
					return nil
				}
			}
		}).Prefetch(2), slow / 2},
		// A plain function is waited for, once: no element starts after.
		{"Map Prefetch(2)", src().Map(plain).Prefetch(2), slow + slow/2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			start := time.Now()
			_, err := c.ds.Collect(ctx)
			took := time.Since(start)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("error %v, want context.Canceled", err)
			}
			if took > c.limit {
				t.Errorf("returned %v after the start (cancelled at 100ms), want under %v", took, c.limit)
			}
		})
	}
}
