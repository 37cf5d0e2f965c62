//go:build linux || darwin

package mpi

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/eagerflow/eagerflow/collective"
)

// The watch on calls. MPI cannot take back a call in flight, so a call is
// made on a goroutine of its own and waited for with a timer: when the
// timer fires first, the call is left to MPI (its memory stays pinned for
// it), the communicator is marked broken, and the ranks are asked where
// they are on a communicator kept for that (diag), so that the error
// names the rank that never came.

// timeoutEnv overrides the default timeout: a Go duration, 0 for none.
const timeoutEnv = "EAGERFLOW_COLLECTIVE_TIMEOUT"

// defaultCallTimeout is long enough for a rank that writes a checkpoint
// while the others wait for it, short enough that a stuck job ends.
const defaultCallTimeout = 10 * time.Minute

func defaultTimeout() (time.Duration, error) {
	v := os.Getenv(timeoutEnv)
	if v == "" {
		return defaultCallTimeout, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%s=%q: want a duration such as 10m or 90s (0: no timeout)", timeoutEnv, v)
	}
	return d, nil
}

// SetTimeout sets how long a call may wait for the other ranks before it
// fails with collective.ErrTimeout (0: forever; negative counts as 0).
// Every rank should set the same.
func (c *Comm) SetTimeout(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timeout = max(d, 0)
}

// callNames number the calls in the diagnosis messages.
var callNames = []string{"AllReduce", "Broadcast", "AllGather", "ReduceScatter", "Send", "Recv", "Barrier"}

// run makes one MPI call moving about bytes under the lock, watched by
// the timeout, and then unpins pin (nil: nothing pinned) unless the call
// is still in flight.
func (c *Comm) run(what string, bytes int, pin *runtime.Pinner, fn uintptr, args ...uintptr) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	unpin := func() {
		if pin != nil {
			pin.Unpin()
		}
	}
	if c.broken != nil {
		unpin()
		return c.broken
	}
	if c.closed {
		unpin()
		return c.errorf(what, "the communicator is closed")
	}
	c.seq++
	code := 0
	if c.timeout == 0 {
		code = call(fn, args...)
	} else {
		start := time.Now()
		var done chan int
		if bytes >= lockedCallBytes {
			done = c.caller.do(fn, args)
		} else {
			done = make(chan int, 1)
			go func() { done <- call(fn, args...) }()
		}
		timer := time.NewTimer(c.timeout)
		select {
		case code = <-done:
			timer.Stop()
		case <-timer.C:
			c.keep(pin) // the call may still write through its pointers
			c.broken = c.diagnose(what, time.Since(start))
			return c.broken
		}
	}
	unpin()
	if code != 0 {
		return c.fail(what, code)
	}
	return nil
}

// keep holds pin, pinned for good: a Pinner that the collector finds
// still pinning is a fatal error, so it must stay reachable (the Comm is).
func (c *Comm) keep(pin *runtime.Pinner) {
	if pin != nil {
		c.kept = append(c.kept, pin)
	}
}

// diagTag is the tag of the diagnosis messages (on their own communicator).
const diagTag = 1

// diagnose runs when call number c.seq, what, has waited past the
// timeout: it tells every other rank which call this one waits in, listens
// a grace period for the same from them, and returns the error: the ranks
// that did not answer (they never reached a call: hung, dead, or busy
// outside the collectives) and those that wait in another call (the ranks
// called different collectives). Without MPI_THREAD_MULTIPLE it cannot
// ask while the call waits, and says so.
func (c *Comm) diagnose(what string, waited time.Duration) error {
	head := fmt.Sprintf("%s #%d on rank %d of %d has waited %v", what, c.seq, c.rank, c.size, waited.Round(time.Millisecond))
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: %w: mpi: %s: %s", collective.ErrCollective, collective.ErrTimeout, head, fmt.Sprintf(format, args...))
	}
	if !c.multiple {
		return fail("MPI gave no MPI_THREAD_MULTIPLE, so the other ranks could not be asked where they are")
	}
	grace := min(max(c.timeout/4, time.Second), 30*time.Second)
	// The messages and requests may stay posted for good: they are
	// pinned and never unpinned.
	pin := new(runtime.Pinner)
	c.keep(pin)
	mine := &[2]int64{c.seq, int64(slices.Index(callNames, what))}
	theirs := make([][2]int64, c.size)
	sends, recvs := make([]uintptr, c.size), make([]uintptr, c.size)
	answered := make([]bool, c.size)
	answered[c.rank] = true
	for q := range c.size {
		if q == c.rank {
			continue
		}
		if code := call(c.l.irecv, ptr(pin, &theirs[q]), 2, c.l.int64, uintptr(q), diagTag, c.diag, ptr(pin, &recvs[q])); code != 0 {
			return fail("asking the others failed: MPI_Irecv: %s", c.l.errorString(code))
		}
		if code := call(c.l.isend, ptr(pin, mine), 2, c.l.int64, uintptr(q), diagTag, c.diag, ptr(pin, &sends[q])); code != 0 {
			return fail("asking the others failed: MPI_Isend: %s", c.l.errorString(code))
		}
	}
	flag := new(int32)
	pin.Pin(flag)
	for deadline := time.Now().Add(grace); time.Now().Before(deadline) && slices.Contains(answered, false); time.Sleep(time.Millisecond) {
		for q, ok := range answered {
			if !ok {
				*flag = 0
				call(c.l.test, ptr(pin, &recvs[q]), ptr(pin, flag), c.l.statusIgnore)
				answered[q] = *flag != 0
			}
		}
	}
	var silent, same, other []string
	for q, ok := range answered {
		switch {
		case q == c.rank:
		case !ok:
			silent = append(silent, fmt.Sprint(q))
		case theirs[q] == *mine:
			same = append(same, fmt.Sprint(q))
		default:
			name := fmt.Sprintf("call %d", theirs[q][1])
			if k := theirs[q][1]; k >= 0 && int(k) < len(callNames) {
				name = callNames[k]
			}
			other = append(other, fmt.Sprintf("rank %d in %s #%d", q, name, theirs[q][0]))
		}
	}
	var parts []string
	if len(silent) > 0 {
		parts = append(parts, fmt.Sprintf("%s %s did not answer within %v (hung, dead, or busy outside the collectives)", ranks(silent), strings.Join(silent, ", "), grace))
	}
	if len(other) > 0 {
		parts = append(parts, "waiting in other calls: "+strings.Join(other, ", ")+" (the ranks called different collectives)")
	}
	if len(same) > 0 {
		parts = append(parts, fmt.Sprintf("%s %s wait%s in the same call", ranks(same), strings.Join(same, ", "), map[bool]string{true: "s"}[len(same) == 1]))
	}
	return fail("%s", strings.Join(parts, "; "))
}

// ranks is "rank" or "ranks" for a list.
func ranks(l []string) string {
	if len(l) == 1 {
		return "rank"
	}
	return "ranks"
}

// lockedCallBytes is the size from which a watched call runs on the
// caller's locked thread. Interleaved on Zen 5, 2 ranks (bench/README.md):
// on a goroutine of its own per call, an AllReduce of 1 KB took 9 µs and
// of 1 MB 182 µs; on the locked thread 21 µs and 132 µs (in place: 4.5
// and 122 µs, against 13.7 and 97 µs); at 64 KB both took 23-24 µs. Waking
// the locked thread costs the small calls about 10 µs.
const lockedCallBytes = 256 << 10

// caller makes the large watched calls on one goroutine locked to its OS
// thread, as a C program makes them on its one thread. A call that never
// returns keeps it, but the communicator is broken then and makes no
// more calls.
type caller struct {
	once  sync.Once
	calls chan pending
}

type pending struct {
	fn   uintptr
	args []uintptr
	done chan int
}

func (k *caller) do(fn uintptr, args []uintptr) chan int {
	k.once.Do(func() {
		k.calls = make(chan pending)
		go func() {
			runtime.LockOSThread()
			for p := range k.calls {
				p.done <- call(p.fn, p.args...)
			}
		}()
	})
	done := make(chan int, 1)
	k.calls <- pending{fn, args, done}
	return done
}
