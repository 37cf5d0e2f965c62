package emu

import (
	"fmt"
	"strconv"
)

// Asynchronous copies from global to shared memory (sm_80): cp.async
// .<ca|cg>.shared.global [dst], [src], 16[, src-size] queues a copy of 16
// bytes (src-size of them read, the rest zeros: src-size 0 reads
// nothing), cp.async.commit_group closes the thread's queued copies into
// a group, and cp.async.wait_group n (wait_all: 0, with the open copies
// committed first) completes all but the n newest groups. The emulator
// copies when a group completes, not before, so a kernel that reads its
// tile before waiting reads what was there (as a GPU may), and the shared
// writes count as the waiting thread's (a bar.sync must follow before
// other threads read them). A thread that exits with copies pending is a
// fault. The profile counts a copy's read as a global load where it is
// issued.

// asyncCopy is one queued copy.
type asyncCopy struct {
	dst, src uint64
	read     int // bytes read from src; the rest of the 16 are zeros
}

// asyncState is a thread's queued copies: the open ones and the
// committed groups, oldest first.
type asyncState struct {
	open   []asyncCopy
	groups [][]asyncCopy
}

// cpAsync compiles the cp.async family.
func (cc *compiler) cpAsync(mods []string, args []string) (func(*run, *block, *thread), error) {
	if cc.sm < mmaMinSM {
		return nil, fmt.Errorf("cp.async requires .target sm_%d or higher (the module's is sm_%d)", mmaMinSM, cc.sm)
	}
	switch {
	case len(mods) == 2 && mods[1] == "commit_group" && len(args) == 0:
		return func(r *run, b *block, t *thread) {
			s := t.asyncState()
			s.groups = append(s.groups, s.open)
			s.open = nil
		}, nil
	case len(mods) == 2 && mods[1] == "wait_all" && len(args) == 0:
		return func(r *run, b *block, t *thread) {
			s := t.asyncState()
			if len(s.open) > 0 {
				s.groups, s.open = append(s.groups, s.open), nil
			}
			r.completeCopies(b, t, 0)
		}, nil
	case len(mods) == 2 && mods[1] == "wait_group" && len(args) == 1:
		n, err := strconv.Atoi(args[0])
		if err != nil || n < 0 {
			return nil, fmt.Errorf("cp.async.wait_group takes a constant count, not %q", args[0])
		}
		return func(r *run, b *block, t *thread) { r.completeCopies(b, t, n) }, nil
	}
	if len(mods) != 4 || (mods[1] != "ca" && mods[1] != "cg") || mods[2] != "shared" || mods[3] != "global" || (len(args) != 3 && len(args) != 4) || args[2] != "16" {
		return nil, fmt.Errorf("only cp.async.<ca|cg>.shared.global [dst], [src], 16[, src-size], commit_group, wait_group n and wait_all are supported")
	}
	dst, err := cc.address(args[0], "shared")
	if err != nil {
		return nil, err
	}
	src, err := cc.address(args[1], "global")
	if err != nil {
		return nil, err
	}
	read := func(*thread, *block) uint64 { return 16 }
	if len(args) == 4 {
		if read, err = cc.src(args[3], "b32", true); err != nil {
			return nil, err
		}
	}
	return func(r *run, b *block, t *thread) {
		n := read(t, b)
		if n > 16 {
			r.fault("cp.async: src-size %d is more than the copy's 16 bytes", n)
			return
		}
		s := t.asyncState()
		c := asyncCopy{dst: dst(t, b), src: src(t, b), read: int(n)}
		s.open = append(s.open, c)
		if r.count != nil && n > 0 { // the profile counts the read where it is issued
			r.count.note(t, event{addr: c.src, size: uint8(n)})
		}
	}, nil
}

func (t *thread) asyncState() *asyncState {
	if t.async == nil {
		t.async = &asyncState{}
	}
	return t.async
}

// completeCopies does t's committed copies but for the newest keep groups.
func (r *run) completeCopies(b *block, t *thread, keep int) {
	s := t.asyncState()
	for len(s.groups) > keep {
		for _, c := range s.groups[0] {
			if !r.sharedAccess(b, t, c.dst, 16, true) {
				return
			}
			buf := b.shared[c.dst : c.dst+16]
			clear(buf)
			if c.read > 0 {
				src, ok := r.global(c.src, 16, "cp.async read")
				if !ok {
					return
				}
				copy(buf, src[:c.read])
			}
		}
		s.groups = s.groups[1:]
	}
}
