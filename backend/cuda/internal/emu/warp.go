package emu

import (
	"fmt"
	"slices"
)

// Warp-synchronous instructions. Threads run one after another here, so
// shfl.sync is a meeting point of a warp's lanes (consecutive linear
// thread ids, warpSize of them): a lane that reaches one stops there with
// its operands; once every lane of the warp has reached the same shfl,
// each takes its source lane's value and they go on. bar.warp.sync is
// such a meeting that exchanges nothing: the warp reconverges there (the
// profile's lanes count their accesses afresh). A lane that waits at
// a barrier or has exited meanwhile, a member mask other than the warp's
// lanes, or lanes at different shfls, is a fault: on hardware it hangs or
// is undefined. vote.sync.ballot is such a meeting too: each lane gets
// the word of the lanes' predicates (bit i, lane i's); so are the tensor
// cores' mma.sync and ldmatrix (mma.go).

const warpSize = 32

// shflOp is a compiled shfl.sync.<mode>.b32 d, a, b, c, membermask, or
// bar.warp.sync membermask (mode sync: m alone).
type shflOp struct {
	mode       string // bfly, down, up, idx; sync; mma; ldmatrix; ballot
	d          setter
	a, b, c, m getter
	mma        *mmaOp      // mode mma (mma.go)
	ldm        *ldmatrixOp // mode ldmatrix (mma.go)
}

// shflWait is what a lane brings to a shfl: its value and operands.
type shflWait struct{ a, b, c, mask uint64 }

func (cc *compiler) shfl(mods []string, args []string) (*shflOp, error) {
	if len(mods) != 3 || mods[0] != "sync" || mods[2] != "b32" {
		return nil, fmt.Errorf("only shfl.sync.<bfly|down|up|idx>.b32 is supported")
	}
	if m := mods[1]; m != "bfly" && m != "down" && m != "up" && m != "idx" {
		return nil, fmt.Errorf("unsupported shfl mode .%s", m)
	}
	if len(args) != 5 {
		return nil, fmt.Errorf("shfl.sync takes d, a, b, c and a member mask (the d|p form is not supported)")
	}
	op := &shflOp{mode: mods[1]}
	var err error
	if op.d, err = cc.dst(args[0], "b32", true); err != nil {
		return nil, err
	}
	for i, g := range []*getter{&op.a, &op.b, &op.c, &op.m} {
		if *g, err = cc.src(args[i+1], "b32", true); err != nil {
			return nil, err
		}
	}
	return op, nil
}

// vote compiles vote.sync.ballot.b32 d, p, membermask: d's bit i is lane
// i's predicate p (mode ballot).
func (cc *compiler) vote(mods []string, args []string) (*shflOp, error) {
	if len(mods) != 3 || mods[0] != "sync" || mods[1] != "ballot" || mods[2] != "b32" || len(args) != 3 {
		return nil, fmt.Errorf("only vote.sync.ballot.b32 d, p, membermask is supported")
	}
	op := &shflOp{mode: "ballot"}
	var err error
	if op.d, err = cc.dst(args[0], "b32", true); err != nil {
		return nil, err
	}
	if op.a, err = cc.src(args[1], "pred", false); err != nil {
		return nil, err
	}
	op.m, err = cc.src(args[2], "b32", true)
	return op, err
}

// warpSync compiles bar.warp.sync membermask.
func (cc *compiler) warpSync(args []string) (*shflOp, error) {
	if len(args) != 1 {
		return nil, fmt.Errorf("bar.warp.sync takes a member mask")
	}
	op := &shflOp{mode: "sync"}
	var err error
	op.m, err = cc.src(args[0], "b32", true)
	return op, err
}

// arrive stops t at the shfl in, with its operands.
func (r *run) arrive(b *block, t *thread, in *instr) {
	s := in.shfl
	switch s.mode {
	case "mma":
		t.shfl = shflWait{mask: 0xffffffff}
		t.mma = arriveMMA(s.mma, t, b)
	case "ldmatrix":
		t.shfl = shflWait{mask: 0xffffffff}
		t.mma[0] = s.ldm.addr(t, b)
	case "ballot":
		t.shfl = shflWait{a: s.a(t, b), mask: s.m(t, b) & 0xffffffff}
	case "sync":
		t.shfl = shflWait{mask: s.m(t, b) & 0xffffffff}
	default:
		t.shfl = shflWait{a: s.a(t, b), b: s.b(t, b) & 31, c: s.c(t, b), mask: s.m(t, b) & 0xffffffff}
	}
	t.state = shuffling
}

// resolveShuffles completes the shfls every lane of a warp has reached,
// and reports whether any did; it faults where a warp's lanes cannot all
// meet.
func (r *run) resolveShuffles(b *block, threads []thread) bool {
	done := false
	for w := 0; w*warpSize < len(threads); w++ {
		lanes := threads[w*warpSize : min((w+1)*warpSize, len(threads))]
		waiting, other := 0, 0
		for i := range lanes {
			switch lanes[i].state {
			case shuffling:
				waiting++
			case running:
			default:
				other++
			}
		}
		if waiting == 0 || waiting+other < len(lanes) {
			continue // none there, or some lanes still on their way
		}
		r.cur = &lanes[0]
		if other > 0 {
			at := lanes[slices.IndexFunc(lanes, func(t thread) bool { return t.state == shuffling })].pc
			r.fault("%s: %d lanes of warp %d wait at it while %d are at a barrier or have exited", warpOpName(r.k.prog[at].shfl), waiting, w, other)
			return false
		}
		pc := lanes[0].pc
		want := uint64(1)<<len(lanes) - 1
		for i := range lanes {
			if lanes[i].pc != pc {
				r.cur = &lanes[i]
				r.fault("%s: the lanes of warp %d wait at different meetings", warpOpName(r.k.prog[pc].shfl), w)
				return false
			}
			if lanes[i].shfl.mask != want {
				r.cur = &lanes[i]
				r.fault("%s: member mask %#x, the warp's lanes are %#x", warpOpName(r.k.prog[pc].shfl), lanes[i].shfl.mask, want)
				return false
			}
		}
		op := r.k.prog[pc].shfl
		if op.mode == "mma" {
			resolveMMA(op.mma, lanes)
		}
		if op.mode == "ldmatrix" && !r.resolveLdmatrix(op.ldm, b, lanes) {
			return false
		}
		if op.mode == "ballot" {
			var bits uint64
			for i := range lanes {
				if lanes[i].shfl.a != 0 {
					bits |= 1 << i
				}
			}
			for i := range lanes {
				op.d(&lanes[i], bits)
			}
		}
		if op.mode == "sync" || op.mode == "mma" || op.mode == "ldmatrix" || op.mode == "ballot" {
			for i := range lanes {
				if r.count != nil {
					r.count.synced(&lanes[i])
				}
				lanes[i].pc++
				lanes[i].state = running
			}
			done = true
			continue
		}
		if c := lanes[0].shfl.c; (op.mode == "up") != (c == 0) || (op.mode != "up" && c != 31) {
			r.fault("shfl.sync.%s with c = %#x: the emulator takes whole-warp shuffles only (c = 31; 0 for up)", op.mode, c)
			return false
		}
		for i := range lanes {
			src := shflSource(op.mode, i, lanes[i].shfl, len(lanes))
			op.d(&lanes[i], lanes[src].shfl.a)
		}
		for i := range lanes {
			lanes[i].pc++
			lanes[i].state = running
		}
		done = true
	}
	return done
}

// shflSource is the lane whose value lane i takes over the whole warp
// (the only segment the emulator takes: c = 31, or 0 for up): its own
// where the source is outside the warp's n lanes.
func shflSource(mode string, i int, w shflWait, n int) int {
	j := i
	switch mode {
	case "bfly":
		j = i ^ int(w.b)
	case "down":
		j = i + int(w.b)
	case "up":
		j = i - int(w.b)
	case "idx":
		j = int(w.b)
	}
	if j < 0 || j >= n {
		return i
	}
	return j
}

// warpOpName names op's instruction in faults.
func warpOpName(op *shflOp) string {
	switch op.mode {
	case "sync":
		return "bar.warp.sync"
	case "mma":
		return "mma.sync"
	case "ldmatrix":
		return "ldmatrix.sync"
	case "ballot":
		return "vote.sync.ballot"
	}
	return "shfl.sync"
}
