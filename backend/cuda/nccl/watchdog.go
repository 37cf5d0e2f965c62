package nccl

import (
	"fmt"
	"time"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/collective"
)

// The watchdog, as PyTorch's NCCL process group keeps one: NCCL's calls
// return once queued, and a collective whose peer died or hangs never
// finishes, so whatever waits for the GPU afterwards (a read of a result,
// the next step's loss) would wait for ever. Each queued collective is
// marked with an event; a goroutine asks, every pollInterval, whether the
// GPU has passed the oldest mark, and when one is older than the timeout
// it aborts the communicator (NCCL's kernels then return, and the GPU's
// work moves on) and every later call fails with collective.ErrTimeout
// naming the collective. It runs where the driver's streams run on their
// own (cu.Events); the emulator's NCCL waits on its host communicator,
// whose calls time out themselves.

// pollInterval is how often the watchdog asks the GPU.
const pollInterval = 50 * time.Millisecond

// mark is a queued collective the watchdog waits for.
type mark struct {
	event  cu.Event
	call   string
	seq    int
	queued time.Time
}

// watch marks the collective just queued on the stream (inside the
// context's Do); it starts the watchdog on the first.
func (c *Comm) watch(call string) error {
	if c.events == nil {
		return nil
	}
	e, err := c.events.EventRecord(c.raw.Stream)
	if err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	c.marks = append(c.marks, mark{event: e, call: call, seq: c.seq, queued: time.Now()})
	if c.stopWatch == nil {
		c.stopWatch = make(chan struct{})
		go c.watchdog(c.stopWatch)
	}
	return nil
}

// watchdog polls the oldest mark until stop is closed or it aborts.
func (c *Comm) watchdog(stop chan struct{}) {
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		if !c.checkMarks() {
			return
		}
	}
}

// checkMarks drops the marks the GPU has passed; it reports false once it
// aborted the communicator (the watchdog is then done).
func (c *Comm) checkMarks() bool {
	for {
		c.mu.Lock()
		if len(c.marks) == 0 || c.broken != nil || c.closed {
			c.mu.Unlock()
			return c.broken == nil
		}
		m, timeout := c.marks[0], c.timeout
		c.mu.Unlock()
		var done bool
		err := c.raw.Ctx.Do(func() (err error) { done, err = c.events.EventQuery(m.event); return err })
		c.mu.Lock()
		if c.closed || len(c.marks) == 0 || c.marks[0].seq != m.seq {
			// Closed while the event was queried: stopWatching took the
			// marks (and destroys their events); the query's answer is moot.
			c.mu.Unlock()
			return c.broken == nil
		}
		switch {
		case err == nil && done:
			c.marks = c.marks[1:]
			c.mu.Unlock()
			_ = c.raw.Ctx.Do(func() error { return c.events.EventDestroy(m.event) })
			continue
		case err == nil && (timeout <= 0 || time.Since(m.queued) < timeout):
			c.mu.Unlock()
			return true
		}
		if err != nil {
			c.broken = c.errorf(m.call, "the GPU failed while running it: %v", err)
		} else {
			c.broken = fmt.Errorf("%w: %w: nccl: %s #%d (rank %d of %d) has not finished %v after it was queued (a rank died, hangs, or called another collective); the communicator was aborted",
				collective.ErrCollective, collective.ErrTimeout, m.call, m.seq, c.rank, c.size, timeout)
		}
		c.mu.Unlock()
		// Abort on its own goroutine, as Barrier does: NCCL's kernels
		// return, and what waits for the GPU moves on.
		go func() { _ = c.raw.Ctx.Do(c.c.Abort) }()
		return false
	}
}

// stopWatching ends the watchdog and frees the marks left (c.mu held).
func (c *Comm) stopWatching() {
	if c.stopWatch != nil {
		close(c.stopWatch)
		c.stopWatch = nil
	}
	marks := c.marks
	c.marks = nil
	if c.events != nil && len(marks) > 0 && c.broken == nil {
		_ = c.raw.Ctx.Do(func() error {
			for _, m := range marks {
				_ = c.events.EventDestroy(m.event)
			}
			return nil
		})
	}
}
