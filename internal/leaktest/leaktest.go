// Package leaktest counts, for tests, the large host buffers a piece of
// code leaves to the garbage collector: tensors dropped where they should
// have been released (tensor.Tensor.Release), each of which costs the next
// step a fresh, page-faulted buffer.
package leaktest

import (
	"runtime"

	"github.com/eagerflow/eagerflow/device"
)

// RecycledBy runs fn and returns how many large host buffers (32 KiB or
// more) went back to the host device's buffer cache through the collector
// meanwhile. It collects before and after until six collections in a row
// recycle nothing (a tensor's own finalizer may drop the buffer a later
// one recycles). Collections recycle a few buffers the cache gave up now
// and then, so a leak shows as a count that grows with the work fn does.
func RecycledBy(fn func()) int64 {
	st := device.Host().Stats()
	settle := func() {
		for quiet := 0; quiet < 6; {
			last := st.Recycled.Load()
			done := make(chan struct{})
			sentinel := new([64]byte)
			runtime.SetFinalizer(sentinel, func(*[64]byte) { close(done) })
			sentinel = nil
			runtime.GC()
			<-done
			if quiet++; st.Recycled.Load() != last {
				quiet = 0
			}
		}
	}
	settle()
	before := st.Recycled.Load()
	fn()
	settle()
	return st.Recycled.Load() - before
}

// StepsRecycled runs step few times and then more times, each run between
// RecycledBy's collections, and returns the buffers each run left: the
// collections recycle a few buffers the cache gave up now and then
// (however many steps ran), so what a leaking step drops shows as more
// growing with the extra steps.
func StepsRecycled(step func(), few, more int) (fewLeft, moreLeft int64) {
	steps := func(k int) int64 {
		return RecycledBy(func() {
			for range k {
				step()
			}
		})
	}
	return steps(few), steps(more)
}
