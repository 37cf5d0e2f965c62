package emu

import (
	"fmt"
	"sort"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
)

// A launch runs every block of the grid, one after another, and in each
// block every thread in turn until it reaches a barrier or exits; when all
// have reached the barrier they go on together. Shared memory tracks which
// thread last wrote and read each byte since the last barrier, so that an
// access another thread made in the same interval (a missing barrier) is a
// fault, as it would be a race on hardware.

type threadState uint8

const (
	running threadState = iota
	waiting
	exited
	shuffling // at a shfl.sync, for its warp's other lanes (warp.go)
)

type thread struct {
	regs  []uint64
	pc    int
	tid   [3]int
	id    int32 // 1-based index in the block
	state threadState
	shfl  shflWait    // what it brings to the shfl it waits at
	mma   mmaOperands // and to an mma
	async *asyncState // its cp.async copies not yet done (async.go)
}

type block struct {
	run    *run
	ctaid  [3]int
	shared []byte
	// per shared byte: the thread (1-based) that last wrote it, the one
	// that read it (-1: several), and the barrier interval they did so in
	writer, reader        []int32
	writeEpoch, readEpoch []int32
	epoch                 int32
}

// run is one launch.
type run struct {
	k      *compiled
	grid   [3]int
	block  [3]int
	params []byte
	shared int // the block's shared bytes, static and dynamic
	mem    *memory
	err    error
	cur    *thread
	curB   *block
	steps  int64
	count  *counter                 // the launch's profile, when counting
	conds  map[cu.CondHandle]uint32 // the graphs' conditions (graph.go)
}

// maxSteps bounds the instructions of one launch: a kernel that loops
// forever fails instead of hanging the test.
const maxSteps = 1 << 31

// fault records the first error of the launch, naming where it happened.
func (r *run) fault(format string, args ...any) {
	if r.err != nil {
		return
	}
	where := ""
	if t, b := r.cur, r.curB; t != nil && b != nil {
		in := r.k.prog[t.pc]
		where = fmt.Sprintf(" at %s line %d (%s), thread (%d,%d,%d) of block (%d,%d,%d)",
			r.k.name, in.line, in.text, t.tid[0], t.tid[1], t.tid[2], b.ctaid[0], b.ctaid[1], b.ctaid[2])
	}
	r.err = fmt.Errorf("%s%s", fmt.Sprintf(format, args...), where) // where holds PTX's % signs
}

func (r *run) exec() error {
	nthreads := r.block[0] * r.block[1] * r.block[2]
	regs := make([]uint64, nthreads*r.k.nregs)
	threads := make([]thread, nthreads)
	for bz := 0; bz < r.grid[2]; bz++ {
		for by := 0; by < r.grid[1]; by++ {
			for bx := 0; bx < r.grid[0]; bx++ {
				clear(regs)
				i := 0
				for z := 0; z < r.block[2]; z++ {
					for y := 0; y < r.block[1]; y++ {
						for x := 0; x < r.block[0]; x++ {
							threads[i] = thread{regs: regs[i*r.k.nregs : (i+1)*r.k.nregs], tid: [3]int{x, y, z}, id: int32(i + 1)}
							i++
						}
					}
				}
				if err := r.runBlock([3]int{bx, by, bz}, threads); err != nil {
					return err
				}
				if r.count != nil {
					r.count.p.Threads += int64(nthreads)
					r.count.endBlock()
				}
			}
		}
	}
	return nil
}

func (r *run) runBlock(ctaid [3]int, threads []thread) error {
	n := r.shared
	b := &block{run: r, ctaid: ctaid, shared: make([]byte, n), writer: make([]int32, n), reader: make([]int32, n),
		writeEpoch: make([]int32, n), readEpoch: make([]int32, n), epoch: 1}
	r.curB = b
	for {
		nwait, nexit := 0, 0
		for i := range threads {
			t := &threads[i]
			if t.state == running {
				r.step(b, t)
				if r.err != nil {
					return r.err
				}
			}
			switch t.state {
			case waiting:
				nwait++
			case exited:
				nexit++
			}
		}
		if r.resolveShuffles(b, threads) {
			continue
		}
		if r.err != nil {
			return r.err
		}
		if nexit == len(threads) {
			return nil
		}
		if nexit > 0 {
			r.cur = nil
			r.fault("bar.sync in %s: %d threads of block (%d,%d,%d) wait at the barrier while %d have exited",
				r.k.name, nwait, ctaid[0], ctaid[1], ctaid[2], nexit)
			return r.err
		}
		b.epoch++ // every thread is at the barrier: they go on
		for i := range threads {
			threads[i].state = running
		}
	}
}

// step runs t until it reaches a barrier or exits.
func (r *run) step(b *block, t *thread) {
	r.cur = t
	prog := r.k.prog
	for {
		in := &prog[t.pc]
		r.steps++
		if r.steps > maxSteps {
			r.fault("the launch ran more than %d instructions", int64(maxSteps))
			return
		}
		if in.guard >= 0 && (t.regs[in.guard] != 0) == in.neg {
			if r.count != nil && in.kind == kBranch {
				r.count.note(t, event{})
			}
			t.pc++
			continue
		}
		if r.count != nil {
			r.countStep(t, in)
		}
		switch in.kind {
		case kBranch:
			t.pc = in.target
		case kBarrier:
			t.pc++
			t.state = waiting
			return
		case kExit:
			if t.async != nil && len(t.async.open)+len(t.async.groups) > 0 {
				r.fault("a thread exits with cp.async copies it never waited for")
				return
			}
			t.state = exited
			return
		case kShfl:
			r.arrive(b, t, in)
			return
		default:
			in.exec(r, b, t)
			if r.err != nil {
				return
			}
			t.pc++
		}
	}
}

// countStep counts what the instruction t is about to run costs beyond
// its issue: a taken conditional branch, an integer division.
func (r *run) countStep(t *thread, in *instr) {
	if in.param {
		r.count.params++
	}
	switch {
	case in.kind == kBranch && in.guard >= 0:
		r.count.note(t, event{taken: true})
	case in.div == 8:
		r.count.p.Div64++
	case in.div == 4:
		r.count.p.Div32++
	}
}

func (r *run) load(b *block, t *thread, space string, addr uint64, size int) (uint64, bool) {
	return r.loadPart(b, t, space, addr, size, true, size)
}

// loadPart is load of one element of an access of total bytes, which the
// profile counts at its first element (first set).
func (r *run) loadPart(b *block, t *thread, space string, addr uint64, size int, first bool, total int) (uint64, bool) {
	var buf []byte
	switch space {
	case "param":
		if addr+uint64(size) > uint64(len(r.params)) {
			r.fault("ld.param at offset %d beyond the %d bytes of parameters", addr, len(r.params))
			return 0, false
		}
		buf = r.params[addr : addr+uint64(size)]
	case "shared":
		if !r.sharedAccess(b, t, addr, size, false) {
			return 0, false
		}
		buf = b.shared[addr : addr+uint64(size)]
	default:
		var ok bool
		if buf, ok = r.global(addr, size, "load"); !ok {
			return 0, false
		}
		if r.count != nil && first {
			r.count.note(t, event{addr: addr, size: uint8(total)})
		}
	}
	var v uint64
	for i := size - 1; i >= 0; i-- {
		v = v<<8 | uint64(buf[i])
	}
	return v, true
}

func (r *run) store(b *block, t *thread, space string, addr uint64, size int, v uint64) {
	r.storePart(b, t, space, addr, size, v, true, size)
}

// storePart is store of one element of an access of total bytes (see
// loadPart).
func (r *run) storePart(b *block, t *thread, space string, addr uint64, size int, v uint64, first bool, total int) {
	var buf []byte
	if space == "shared" {
		if !r.sharedAccess(b, t, addr, size, true) {
			return
		}
		buf = b.shared[addr : addr+uint64(size)]
	} else {
		var ok bool
		if buf, ok = r.global(addr, size, "store"); !ok {
			return
		}
		if r.count != nil && first {
			r.count.note(t, event{addr: addr, size: uint8(total), store: true})
		}
	}
	for i := range size {
		buf[i] = byte(v >> (8 * i))
	}
}

// sharedAccess checks a shared-memory access for range, alignment and
// races with other threads since the last barrier, and records it.
func (r *run) sharedAccess(b *block, t *thread, addr uint64, size int, write bool) bool {
	if addr%uint64(size) != 0 {
		r.fault("misaligned shared access: %d bytes at offset %d", size, addr)
		return false
	}
	if addr+uint64(size) > uint64(len(b.shared)) {
		r.fault("shared access out of bounds: %d bytes at offset %d of %d", size, addr, len(b.shared))
		return false
	}
	for i := addr; i < addr+uint64(size); i++ {
		if w := b.writer[i]; w != 0 && w != t.id && b.writeEpoch[i] == b.epoch {
			r.fault("shared memory race: offset %d was written by thread %d since the last barrier (a missing bar.sync?)", i, w-1)
			return false
		}
		if write {
			if rd := b.reader[i]; rd != 0 && rd != t.id && b.readEpoch[i] == b.epoch {
				who := "another thread"
				if rd > 0 {
					who = fmt.Sprintf("thread %d", rd-1)
				}
				r.fault("shared memory race: offset %d was read by %s since the last barrier (a missing bar.sync?)", i, who)
				return false
			}
			b.writer[i], b.writeEpoch[i] = t.id, b.epoch
			continue
		}
		switch {
		case b.readEpoch[i] != b.epoch:
			b.reader[i], b.readEpoch[i] = t.id, b.epoch
		case b.reader[i] != t.id:
			b.reader[i] = -1 // read by several threads in this interval
		}
	}
	return true
}

// global returns the bytes of a global access, or faults.
func (r *run) global(addr uint64, size int, what string) ([]byte, bool) {
	if addr%uint64(size) != 0 {
		r.fault("misaligned global %s of %d bytes at 0x%x", what, size, addr)
		return nil, false
	}
	buf, err := r.mem.slice(addr, size)
	if err != nil {
		r.fault("out-of-bounds global %s: %v", what, err)
		return nil, false
	}
	return buf, true
}

// memory is device memory: allocations at addresses that are never reused,
// so that a freed pointer faults.
type memory struct {
	allocs []*allocation // by base
	next   uint64
	used   int
	limit  int
}

type allocation struct {
	base uint64
	data []byte
}

func newMemory(limit int) *memory { return &memory{next: 0x7f00_0000_0000, limit: limit} }

func (m *memory) alloc(n int) (uint64, bool) {
	if n <= 0 || m.used+n > m.limit {
		return 0, false
	}
	a := &allocation{base: m.next, data: make([]byte, n)}
	m.next += (uint64(n) + 0xffff) &^ 0xffff // gaps between allocations
	m.allocs = append(m.allocs, a)
	m.used += n
	return a.base, true
}

func (m *memory) find(addr uint64) (int, *allocation) {
	i := sort.Search(len(m.allocs), func(i int) bool { return m.allocs[i].base > addr }) - 1
	if i < 0 {
		return -1, nil
	}
	return i, m.allocs[i]
}

func (m *memory) free(addr uint64) bool {
	i, a := m.find(addr)
	if a == nil || a.base != addr {
		return false
	}
	m.used -= len(a.data)
	m.allocs = append(m.allocs[:i], m.allocs[i+1:]...)
	return true
}

// slice returns the n bytes at addr, which must lie inside one allocation.
func (m *memory) slice(addr uint64, n int) ([]byte, error) {
	_, a := m.find(addr)
	if a == nil || addr >= a.base+uint64(len(a.data)) {
		return nil, fmt.Errorf("0x%x is in no allocation", addr)
	}
	off := addr - a.base
	if off+uint64(n) > uint64(len(a.data)) {
		return nil, fmt.Errorf("%d bytes at 0x%x run past the end of the %d-byte allocation at 0x%x", n, addr, len(a.data), a.base)
	}
	return a.data[off : off+uint64(n)], nil
}
