package device

import (
	"runtime"
	"sync"
)

// MinShardCost is the estimated cost (about a nanosecond per unit) below
// which splitting work across goroutines does not pay for itself.
const MinShardCost = 20000

type shardTask struct {
	fn     func(lo, hi int)
	lo, hi int
	wg     *sync.WaitGroup
}

type workerPool struct {
	n     int
	tasks chan shardTask
}

func (p *workerPool) start() {
	p.n = max(runtime.GOMAXPROCS(0)-1, 0)
	p.tasks = make(chan shardTask)
	for range p.n {
		go func() {
			for t := range p.tasks {
				t.fn(t.lo, t.hi)
				t.wg.Done()
			}
		}()
	}
}

// Parallel calls fn over [0, n) split into contiguous ranges. costPerUnit is
// the estimated cost of one unit in about nanoseconds; when n*costPerUnit is
// below MinShardCost, fn(0, n) runs inline. Otherwise the range is split into
// at most Workers() shards; shards are handed to idle workers and the rest run
// on the calling goroutine, so nested calls never deadlock. Parallel returns
// when every shard is done.
func (c *CPUDevice) Parallel(n int, costPerUnit float64, fn func(lo, hi int)) {
	if n <= 0 {
		return
	}
	total := float64(n) * costPerUnit
	shards := min(int(total/MinShardCost), c.workers.n+1, n)
	if shards <= 1 {
		fn(0, n)
		return
	}
	var wg sync.WaitGroup
	step := (n + shards - 1) / shards
	lo := step // shard 0 runs here, last
	for lo < n {
		hi := min(lo+step, n)
		wg.Add(1)
		select {
		case c.workers.tasks <- shardTask{fn: fn, lo: lo, hi: hi, wg: &wg}:
		default:
			fn(lo, hi)
			wg.Done()
		}
		lo = hi
	}
	fn(0, min(step, n))
	wg.Wait()
}
