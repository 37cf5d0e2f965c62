package emu

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// A launch's cost, counted while it runs, so that a kernel's efficiency is
// seen on machines without a GPU. Threads run one after another here, not
// in warps, so a warp's access is rebuilt afterwards: the n-th time each
// of a warp's 32 threads (consecutive linear thread ids) executes one
// instruction is one warp-wide instruction, as it is on hardware when the
// warp has not diverged. A global load or store is then one request, and
// its cost the 32-byte sectors it touches; the least it could touch is the
// sectors its distinct bytes fill (so a warp reading one scalar costs one
// sector, as the hardware's broadcast does, and a stride of two elements
// costs twice the least). Lanes whose counts of an instruction differ (a
// loop some lanes left a turn early) pair up again where the warp
// reconverges, as hardware's do: at a bar.warp.sync, after which every
// lane counts afresh.

// Access counts a kind of global memory access of a launch.
type Access struct {
	Requests int64 // warp-wide instructions
	Sectors  int64 // 32-byte sectors they touched
	Least    int64 // the sectors their distinct bytes would fill, packed
	Bytes    int64 // bytes the threads asked for (a broadcast counts each thread's)
}

// Efficiency is Least/Sectors: 1 for perfectly coalesced accesses, 0.5 for
// a stride of two elements; 1 where there were none.
func (a Access) Efficiency() float64 {
	if a.Sectors == 0 {
		return 1
	}
	return float64(a.Least) / float64(a.Sectors)
}

func (a *Access) add(b Access) {
	a.Requests += b.Requests
	a.Sectors += b.Sectors
	a.Least += b.Least
	a.Bytes += b.Bytes
}

// Profile is what one launch did.
type Profile struct {
	Kernel      string
	Grid, Block [3]int
	Threads     int64
	// Instructions counts what each thread issued (guarded-off ones too),
	// summed, less its loads of parameters: ptxas folds those into the
	// instructions that use them, as constant-bank operands.
	Instructions  int64
	Loads, Stores Access
	// Div64 and Div32 count integer divisions and remainders by width, per
	// thread, summed: a 64-bit one is a software routine of dozens of
	// instructions on NVIDIA GPUs, a 32-bit one about twenty.
	Div64, Div32 int64
	// Branches counts warp-wide conditional branches; Divergent those
	// where the warp's threads went different ways.
	Branches, Divergent int64
}

// Memory is the loads and stores together.
func (p Profile) Memory() Access {
	m := p.Loads
	m.add(p.Stores)
	return m
}

// Add accumulates q's counts into p (the kernel name and shape of p stay).
func (p *Profile) Add(q Profile) {
	p.Threads += q.Threads
	p.Instructions += q.Instructions
	p.Loads.add(q.Loads)
	p.Stores.add(q.Stores)
	p.Div64 += q.Div64
	p.Div32 += q.Div32
	p.Branches += q.Branches
	p.Divergent += q.Divergent
}

// String is one line: the kernel, its shape and its counts per thread.
func (p Profile) String() string {
	var b strings.Builder
	per := func(n int64) float64 { return float64(n) / float64(max(p.Threads, 1)) }
	fmt.Fprintf(&b, "%s grid %v block %v: %.1f instr/thread", p.Kernel, p.Grid, p.Block, per(p.Instructions))
	for _, a := range []struct {
		name string
		a    Access
	}{{"loads", p.Loads}, {"stores", p.Stores}} {
		if a.a.Requests > 0 {
			fmt.Fprintf(&b, ", %s %d x %.1f sectors (%.0f%% efficient)", a.name, a.a.Requests,
				float64(a.a.Sectors)/float64(a.a.Requests), 100*a.a.Efficiency())
		}
	}
	if p.Div64+p.Div32 > 0 {
		fmt.Fprintf(&b, ", div/rem %.1f 64-bit %.1f 32-bit per thread", per(p.Div64), per(p.Div32))
	}
	if p.Divergent > 0 {
		fmt.Fprintf(&b, ", %d of %d branches divergent", p.Divergent, p.Branches)
	}
	return b.String()
}

// SetProfiler has fn called with every later launch's profile when the
// launch has run (on the goroutine that synchronises the stream); nil
// stops counting, which costs nothing then.
func (c *Context) SetProfiler(fn func(Profile)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.profiler = fn
}

// event is one thread's execution of a global access or a conditional
// branch, for rebuilding warp-wide instructions.
type event struct {
	warp, epoch, pc, seq int32 // epoch: the warp syncs the thread passed
	size                 uint8 // bytes; 0 for a branch
	taken                bool
	store                bool
	addr                 uint64
}

// counter gathers a launch's profile.
type counter struct {
	p      Profile
	params int64 // parameter loads run, left out of the instructions
	events []event
	seq    map[[3]int32]int32 // (thread, epoch, pc) -> executions so far in the block
	epoch  map[int32]int32    // thread -> the warp syncs it passed in the block
}

func newCounter(k *compiled, grid, block [3]int) *counter {
	return &counter{p: Profile{Kernel: k.name, Grid: grid, Block: block}, seq: map[[3]int32]int32{}, epoch: map[int32]int32{}}
}

// note records t's execution of the instruction at its pc.
func (c *counter) note(t *thread, e event) {
	epoch := c.epoch[t.id]
	key := [3]int32{t.id, epoch, int32(t.pc)}
	e.warp, e.epoch, e.pc, e.seq = (t.id-1)/32, epoch, int32(t.pc), c.seq[key]
	c.seq[key]++
	c.events = append(c.events, e)
}

// synced records that t's warp reconverged (bar.warp.sync).
func (c *counter) synced(t *thread) { c.epoch[t.id]++ }

// endBlock turns the block's events into warp-wide counts.
func (c *counter) endBlock() {
	ev := c.events
	slices.SortFunc(ev, func(a, b event) int {
		return cmp.Or(cmp.Compare(a.warp, b.warp), cmp.Compare(a.epoch, b.epoch), cmp.Compare(a.pc, b.pc), cmp.Compare(a.seq, b.seq), cmp.Compare(a.addr, b.addr))
	})
	for i := 0; i < len(ev); {
		j := i + 1
		for j < len(ev) && ev[j].warp == ev[i].warp && ev[j].epoch == ev[i].epoch && ev[j].pc == ev[i].pc && ev[j].seq == ev[i].seq {
			j++
		}
		g := ev[i:j]
		if g[0].size == 0 {
			c.p.Branches++
			if slices.ContainsFunc(g, func(e event) bool { return e.taken != g[0].taken }) {
				c.p.Divergent++
			}
		} else {
			a := &c.p.Loads
			if g[0].store {
				a = &c.p.Stores
			}
			a.add(warpAccess(g))
		}
		i = j
	}
	c.events = ev[:0]
	clear(c.seq)
	clear(c.epoch)
}

// warpAccess is the cost of one warp-wide access whose threads' events,
// sorted by address, are g.
func warpAccess(g []event) Access {
	a := Access{Requests: 1}
	var distinct int64
	end := uint64(0)        // the end of the bytes counted so far
	lastSector := int64(-1) // the last sector counted
	for _, e := range g {
		a.Bytes += int64(e.size)
		lo, hi := max(e.addr, end), e.addr+uint64(e.size)
		if hi > lo {
			distinct += int64(hi - lo)
			end = hi
		}
		for s := int64(e.addr >> 5); s <= int64((hi-1)>>5); s++ {
			if s > lastSector {
				a.Sectors++
				lastSector = s
			}
		}
	}
	a.Least = (distinct + 31) / 32
	return a
}
