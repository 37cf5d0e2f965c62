package kernels

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// Optimizer kernels update many variables in one launch, as PyTorch's
// multi-tensor apply does: the parameter "tab" lists up to AdamSlots
// tensors (AdamTable), each in chunks of OptimChunk elements, a block a
// chunk; a block finds its tensor by comparing its index with each slot's
// first block (constant-offset parameter loads and selects, no indexing),
// so a kernel of fewer slots (AdamSlotCounts) serves fewer tensors.
//
//   - adam_multi_<slots>_<f32|f64> (tab, b1, k1, b2, k2, ic1, ic2, eps,
//     lr, wd),
//     the constants in the dtype: m = b1·m + k1·g; v = b2·v + (k2·g)·g;
//     w -= lr·((m·ic1) / (sqrt(v·ic2) + eps) + wd·w), every product and
//     sum rounded on its own (no contraction into fused multiply-adds),
//     so that the step is bit for bit the CPU's (cpu.AdamInPlace).

// The table: per slot the addresses of w, m, v, g, the element count and
// the slot's first block (unused slots: first block ~0).
const (
	AdamSlots     = 24
	adamSlotBytes = 6 * 8
	// AdamTableSize is the parameter's size in bytes.
	AdamTableSize = AdamSlots * adamSlotBytes
	// OptimChunk is the elements a block updates: four a thread, so that
	// a small model's step still fills the GPU.
	OptimChunk = 1024
)

// AdamSlotCounts are the kernels' slot counts, smallest first.
var AdamSlotCounts = []int{8, AdamSlots}

// AdamTensor is one slot of the table: device addresses and the count.
type AdamTensor struct {
	W, M, V, G uint64
	N          int
}

// AdamTable fills the parameter for ts (at most AdamSlots) and returns it
// with the blocks the launch needs.
func AdamTable(ts []AdamTensor) (tab []byte, blocks int) {
	tab = make([]byte, AdamTableSize)
	for j := range AdamSlots {
		off := j * adamSlotBytes
		if j >= len(ts) {
			binary.LittleEndian.PutUint64(tab[off+40:], math.MaxUint64)
			continue
		}
		t := ts[j]
		for i, v := range []uint64{t.W, t.M, t.V, t.G, uint64(t.N), uint64(blocks)} {
			binary.LittleEndian.PutUint64(tab[off+8*i:], v)
		}
		blocks += (t.N + OptimChunk - 1) / OptimChunk
	}
	return tab, blocks
}

func optimKernels() []*ptx.Kernel {
	var out []*ptx.Kernel
	for _, slots := range AdamSlotCounts {
		out = append(out, adamMultiKernel(F32, slots), adamMultiKernel(F64, slots))
	}
	return out
}

// adamMultiKernel writes adam_multi_<slots>_<d>, which reads the first
// slots of the table.
func adamMultiKernel(d DType, slots int) *ptx.Kernel {
	k := ptx.NewKernel(Name("adam_multi", fmt.Sprint(slots), string(d)))
	t := d.reg()
	k.ParamBytes("tab", AdamTableSize)
	c := map[string]ptx.Reg{}
	for _, name := range []string{"b1", "k1", "b2", "k2", "ic1", "ic2", "eps", "lr", "wd"} {
		c[name] = k.Param(name, t)
	}
	// This block's slot: the last whose first block is at most ours.
	b32 := k.Reg(ptx.U32)
	k.Op("mov.u32 %s, %%ctaid.x", b32)
	bid := k.Reg(ptx.U64)
	k.Op("cvt.u64.u32 %s, %s", bid, b32)
	slot := make([]ptx.Reg, 6) // w, m, v, g, n, first
	for i := range slot {
		slot[i] = k.LoadField("tab", 8*i)
	}
	p := k.Reg(ptx.Pred)
	for j := 1; j < slots; j++ {
		first := k.LoadField("tab", j*adamSlotBytes+40)
		k.Op("setp.le.u64 %s, %s, %s", p, first, bid)
		for i := range slot {
			v := first
			if i < 5 {
				v = k.LoadField("tab", j*adamSlotBytes+8*i)
			}
			k.Op("selp.b64 %s, %s, %s, %s", slot[i], v, slot[i], p)
		}
	}
	w, m, v, g, n, first := slot[0], slot[1], slot[2], slot[3], slot[4], slot[5]
	// The chunk: [start, end) of the slot's elements.
	start, end := k.Reg(ptx.U64), k.Reg(ptx.U64)
	k.Op("sub.s64 %s, %s, %s", start, bid, first)
	k.Op("mul.lo.s64 %s, %s, %d", start, start, OptimChunk)
	k.Op("add.s64 %s, %s, %d", end, start, OptimChunk)
	k.Op("min.u64 %s, %s, %s", end, end, n)
	tid, ntid := k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("mov.u32 %s, %%tid.x", tid)
	k.Op("mov.u32 %s, %%ntid.x", ntid)
	from, step := k.Reg(ptx.U64), k.Reg(ptx.U64)
	k.Op("cvt.u64.u32 %s, %s", from, tid)
	k.Op("add.s64 %s, %s, %s", from, from, start)
	k.Op("cvt.u64.u32 %s, %s", step, ntid)
	for _, r := range []ptx.Reg{w, m, v, g} {
		k.Op("cvta.to.global.u64 %s, %s", r, r)
	}
	size := d.Size()
	k.Loop(from, end, step, func(i ptx.Reg) {
		aw, am, av, ag := k.Addr(w, i, size), k.Addr(m, i, size), k.Addr(v, i, size), k.Addr(g, i, size)
		gi, mi, vi, wi := load(k, d, ag), load(k, d, am), load(k, d, av), load(k, d, aw)
		op := func(format string, args ...any) ptx.Reg {
			r := k.Reg(t)
			k.Op(format, append([]any{t, r}, args...)...)
			return r
		}
		mul := func(a, b ptx.Reg) ptx.Reg { return op("mul.rn.%s %s, %s, %s", a, b) }
		add := func(a, b ptx.Reg) ptx.Reg { return op("add.rn.%s %s, %s, %s", a, b) }
		mn := add(mul(c["b1"], mi), mul(c["k1"], gi))
		vn := add(mul(c["b2"], vi), mul(mul(c["k2"], gi), gi))
		den := add(op("sqrt.rn.%s %s, %s", mul(vn, c["ic2"])), c["eps"])
		q := op("div.rn.%s %s, %s, %s", mul(mn, c["ic1"]), den)
		upd := mul(c["lr"], add(q, mul(c["wd"], wi)))
		store(k, d, am, mn)
		store(k, d, av, vn)
		store(k, d, aw, op("sub.rn.%s %s, %s, %s", wi, upd))
	})
	return k
}
