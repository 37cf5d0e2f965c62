package device

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/eagerflow/eagerflow/internal/hostmem"
)

// minShardCost is the estimated cost (about a nanosecond per unit) below
// which splitting work across goroutines does not pay for itself.
const minShardCost = hostmem.MinShardCost

// shardJob is one Parallel call. Its shards are claimed in order, by the
// calling goroutine and by any worker the job was handed to, so a worker
// that wakes late finds the work already done instead of the caller
// waiting for it.
type shardJob struct {
	fn        func(lo, hi int)
	n, step   int
	shards    int32
	next      atomic.Int32
	remaining atomic.Int32
	done      chan struct{} // closed by whoever finishes the last shard
	// failed is set once a shard panicked: shards not yet started are
	// skipped. panicked holds the first panic of a worker's shard, for the
	// caller to raise: on the worker's goroutine nobody could recover it
	// and it would end the process.
	failed   atomic.Bool
	panicked atomic.Pointer[ShardPanic]
}

// ShardPanic is what Parallel panics with when fn panicked on a worker's
// goroutine: the panic's value and the worker's stack. (A panic in the
// calling goroutine's own shard goes on unchanged.)
type ShardPanic struct {
	Value any
	Stack []byte
}

func (p *ShardPanic) Error() string {
	return fmt.Sprintf("device: panic in a parallel shard on a worker: %v\n\n%s", p.Value, p.Stack)
}

// Unwrap returns the panic's value when it is an error.
func (p *ShardPanic) Unwrap() error {
	err, _ := p.Value.(error)
	return err
}

// run claims and runs shards until none is left; onWorker says it runs on
// a worker's goroutine.
func (j *shardJob) run(onWorker bool) {
	for {
		s := j.next.Add(1) - 1
		if s >= j.shards {
			return
		}
		lo := int(s) * j.step
		j.shard(lo, min(lo+j.step, j.n), onWorker)
	}
}

// shard runs one shard (unless an earlier one panicked) and counts it
// done, also when it panics. On a worker, the panic is kept for the caller
// (before the shard counts as done, so the caller finds it) and the worker
// carries on.
func (j *shardJob) shard(lo, hi int, onWorker bool) {
	defer func() {
		if onWorker {
			if r := recover(); r != nil {
				j.panicked.CompareAndSwap(nil, &ShardPanic{Value: r, Stack: debug.Stack()})
				j.failed.Store(true)
			}
		}
		if j.remaining.Add(-1) == 0 {
			close(j.done)
		}
	}()
	if !j.failed.Load() {
		j.fn(lo, hi)
	}
}

// abandon is the caller's cleanup when its own shard panicked: shards
// nobody started are dropped and those running are waited for, so that no
// worker still writes when the panic reaches whoever recovers it.
func (j *shardJob) abandon() {
	j.failed.Store(true)
	for j.next.Add(1)-1 < j.shards {
		if j.remaining.Add(-1) == 0 {
			close(j.done)
		}
	}
	j.wait()
}

// workerSpin is how long a worker that finished a job keeps looking for
// the next one before it sleeps. Waking a sleeping thread took 50-100 µs on
// the project's (virtual) machine, longer than most kernels run, so ops
// that come back to back find the workers awake, as OpenMP runtimes keep
// theirs.
const workerSpin = 200 * time.Microsecond

type workerPool struct {
	n      int
	jobs   chan *shardJob           // to workers that sleep (or are about to)
	posted atomic.Pointer[shardJob] // to workers that spin
}

func (p *workerPool) start() {
	p.n = max(runtime.GOMAXPROCS(0)-1, 0)
	// Buffered, one place per worker: a worker between its last look at
	// posted and its receive would miss an unbuffered send that found no
	// receiver, and sleep through the job (the caller then ran every
	// shard alone). A job left in the buffer after it is done is run
	// again by nobody: its shards are all claimed.
	p.jobs = make(chan *shardJob, max(p.n, 1))
	for range p.n {
		go func() {
			var last *shardJob
			for {
				last = p.await(last)
				last.run(true)
			}
		}()
	}
}

// await returns the next job: one posted while the worker spins, else the
// one that wakes it.
func (p *workerPool) await(last *shardJob) *shardJob {
	deadline := time.Now().Add(workerSpin)
	for i := 1; ; i++ {
		if j := p.posted.Load(); j != nil && j != last {
			return j
		}
		if i%64 == 0 {
			if time.Now().After(deadline) {
				return <-p.jobs
			}
			runtime.Gosched()
		}
	}
}

// Parallel calls fn over [0, n) split into contiguous ranges. costPerUnit is
// the estimated cost of one unit in about nanoseconds; when n*costPerUnit is
// below minShardCost, fn(0, n) runs inline. Otherwise the range is split into
// at most Workers() shards, claimed one by one by the calling goroutine and
// by the workers that are idle (so nested calls never deadlock, and a worker
// that wakes late never delays the caller). Workers spin for workerSpin
// after each job before they sleep, and the caller as long for the shards
// still running before it does. Parallel returns when every shard is done.
// If fn panics, Parallel panics on the calling goroutine once no shard is
// running any more (shards not yet started are skipped): with the same
// value where the caller's own shard panicked, else with a *ShardPanic
// holding the worker's value and stack.
func (c *CPUDevice) Parallel(n int, costPerUnit float64, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	total := float64(n) * costPerUnit
	shards := min(int(total/minShardCost), c.workers.n+1, n)
	if shards <= 1 {
		fn(0, n)
		return
	}
	step := (n + shards - 1) / shards
	j := &shardJob{fn: fn, n: n, step: step, shards: int32((n + step - 1) / step), done: make(chan struct{})}
	j.remaining.Store(j.shards)
	// Spinning workers see the posted job; sleeping ones are woken with
	// it. Busy workers (a nested call) are not waited for: this goroutine
	// claims whatever shards nobody else does, so nesting never deadlocks.
	c.workers.posted.Store(j)
offer:
	for range j.shards - 1 {
		select {
		case c.workers.jobs <- j:
		default:
			break offer
		}
	}
	ok := false
	defer func() {
		if !ok { // the caller's own shard panicked; the panic goes on
			c.workers.posted.CompareAndSwap(j, nil)
			j.abandon()
		}
	}()
	j.run(false)
	ok = true
	c.workers.posted.CompareAndSwap(j, nil)
	j.wait()
	if p := j.panicked.Load(); p != nil {
		panic(p)
	}
}

// wait returns when every shard is done, spinning for up to workerSpin
// before it sleeps. A caller that sleeps is woken by the worker finishing
// the last shard, onto that worker's processor; the worker's goroutine then
// waits for a sleeping thread to take it up (50-100 µs on this project's
// machine) and misses the next job, which the caller runs alone. Sleeping
// here made one call in ten of a 16 MB sum run on one core; spinning made
// the sum 25% faster and the MLP train step 15% faster.
func (j *shardJob) wait() {
	deadline := time.Now().Add(workerSpin)
	for i := 1; j.remaining.Load() > 0; i++ {
		if i%64 == 0 {
			if time.Now().After(deadline) {
				<-j.done
				return
			}
			runtime.Gosched()
		}
	}
}
