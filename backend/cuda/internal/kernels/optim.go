package kernels

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// Optimizer kernels update many variables in one launch, as PyTorch's
// multi-tensor apply does: the parameter "tab" lists up to OptimSlots
// tensors (OptimTable), each in chunks of OptimChunk elements, a block a
// chunk; a block finds its tensor by comparing its index with each slot's
// first block (constant-offset parameter loads and selects, no indexing),
// so a kernel of fewer slots (OptimSlotCounts) serves fewer tensors. The
// constants are in the dtype, and every product, sum, root and quotient
// is rounded on its own (no contraction into fused multiply-adds), so
// that a step is bit for bit the CPU's (backend/cpu's in-place kernels).
// Every rule first multiplies the gradient by gs (1, or a loss scale's
// inverse: device.StepSettings.GradScale), rounded, and then by the
// scalar at the address gf (a parameter after the constants, 0 for 1:
// device.StepSettings.GradFactor, a clip factor the device computed),
// rounded, g below being that product:
//
//   - adam_multi_<slots>_<f32|f64> (tab, b1, k1, b2, k2, ic1, ic2, eps,
//     lr, wd, gs), the tensors (w, m, v, g): m = b1·m + k1·g;
//     v = b2·v + (k2·g)·g; w -= lr·((m·ic1) / (sqrt(v·ic2) + eps) + wd·w).
//   - momentum_multi_... and nesterov_multi_... (tab, mu, lr, gs), the tensors
//     (w, vel, g): vel = mu·vel + g; w -= lr·vel, or, Nesterov's,
//     w -= lr·(g + mu·vel).
//   - rmsprop_multi_... (tab, rho, k, eps, lr, gs) with the tensors (w, s, g),
//     and rmsprop_mom_multi_... (tab, rho, k, eps, lr, mu, gs) with (w, s,
//     mom, g): s = rho·s + (g·g)·k; u = g / (sqrt(s) + eps); with
//     momentum mom = mu·mom + u, u = mom; w -= lr·u.
//
// The float32 kernels have twins <rule>_<slots>_f32_g<bf16|f16> for a
// mixed-precision step: each slot's gradient is of the half type
// (widened exactly) and a fifth address, where not 0, receives the new
// w rounded to it, as Cast rounds: the layer's half copy of its weight
// (internal/castcache), written in the same pass.
//
// Each has a twin <rule>_<slots>_<d>_at (tab, consts, gf) that reads the
// constants, in the same order, from device memory when it runs: the
// i-th at consts + 8·i, in the dtype (a float32 in the low four bytes).
// A recording of a step holds the twin, and optim_consts (dst, w0 ... w9)
// writes the step's constants (OptimConstWords 64-bit words) before each
// replay, so the recorded update follows the host's step count and
// schedule.

// The table: per slot up to five tensors' addresses (w first, g last,
// the rule's slots between; a half copy after g), the element count and
// the slot's first block (unused slots: first block ~0).
const (
	OptimSlots     = 24
	optimPtrs      = 5
	optimCount     = 8 * optimPtrs // the element count's offset in a slot
	optimFirst     = optimCount + 8
	optimSlotBytes = optimFirst + 8
	// OptimTableSize is the parameter's size in bytes.
	OptimTableSize = OptimSlots * optimSlotBytes
	// OptimChunk is the elements a block updates: four a thread, so that
	// a small model's step still fills the GPU.
	OptimChunk = 1024
)

// OptimSlotCounts are the kernels' slot counts, smallest first.
var OptimSlotCounts = []int{8, OptimSlots}

// OptimTensor is one slot of the table: the device addresses of its
// tensors, in the rule's order, and the element count.
type OptimTensor struct {
	Ptrs []uint64
	N    int
}

// OptimTable fills the parameter for ts (at most OptimSlots) and returns
// it with the blocks the launch needs.
func OptimTable(ts []OptimTensor) (tab []byte, blocks int) {
	tab = make([]byte, OptimTableSize)
	for j := range OptimSlots {
		off := j * optimSlotBytes
		if j >= len(ts) {
			binary.LittleEndian.PutUint64(tab[off+optimFirst:], math.MaxUint64)
			continue
		}
		t := ts[j]
		for i, p := range t.Ptrs {
			binary.LittleEndian.PutUint64(tab[off+8*i:], p)
		}
		binary.LittleEndian.PutUint64(tab[off+optimCount:], uint64(t.N))
		binary.LittleEndian.PutUint64(tab[off+optimFirst:], uint64(blocks))
		blocks += (t.N + OptimChunk - 1) / OptimChunk
	}
	return tab, blocks
}

// OptimRule is one optimizer formula's kernels: their name's stem, the
// constants they take after the table, in order, and how many tensors a
// slot lists.
type OptimRule struct {
	Name    string
	Consts  []string
	Tensors int
	step    func(e *optimElem)
}

// OptimRules are the formulas, by their kernels' stem.
var OptimRules = map[string]OptimRule{
	"adam_multi": {"adam_multi", []string{"b1", "k1", "b2", "k2", "ic1", "ic2", "eps", "lr", "wd", "gs"}, 4, func(e *optimElem) {
		w, m, v, g := e.load(0), e.load(1), e.load(2), e.load(3)
		mn := e.add(e.mul(e.c("b1"), m), e.mul(e.c("k1"), g))
		vn := e.add(e.mul(e.c("b2"), v), e.mul(e.mul(e.c("k2"), g), g))
		den := e.add(e.op("sqrt.rn", e.mul(vn, e.c("ic2"))), e.c("eps"))
		q := e.op("div.rn", e.mul(mn, e.c("ic1")), den)
		e.store(1, mn)
		e.store(2, vn)
		e.store(0, e.op("sub.rn", w, e.mul(e.c("lr"), e.add(q, e.mul(e.c("wd"), w)))))
	}},
	"momentum_multi": {"momentum_multi", []string{"mu", "lr", "gs"}, 3, func(e *optimElem) {
		w, vel, g := e.load(0), e.load(1), e.load(2)
		vn := e.add(e.mul(e.c("mu"), vel), g)
		e.store(1, vn)
		e.store(0, e.op("sub.rn", w, e.mul(e.c("lr"), vn)))
	}},
	"nesterov_multi": {"nesterov_multi", []string{"mu", "lr", "gs"}, 3, func(e *optimElem) {
		w, vel, g := e.load(0), e.load(1), e.load(2)
		vn := e.add(e.mul(e.c("mu"), vel), g)
		e.store(1, vn)
		e.store(0, e.op("sub.rn", w, e.mul(e.c("lr"), e.add(g, e.mul(e.c("mu"), vn)))))
	}},
	"rmsprop_multi": {"rmsprop_multi", []string{"rho", "k", "eps", "lr", "gs"}, 3, func(e *optimElem) {
		w, s, g := e.load(0), e.load(1), e.load(2)
		u := rmsUpdate(e, s, g)
		e.store(0, e.op("sub.rn", w, e.mul(e.c("lr"), u)))
	}},
	"rmsprop_mom_multi": {"rmsprop_mom_multi", []string{"rho", "k", "eps", "lr", "mu", "gs"}, 4, func(e *optimElem) {
		w, s, mom, g := e.load(0), e.load(1), e.load(2), e.load(3)
		u := rmsUpdate(e, s, g)
		mn := e.add(e.mul(e.c("mu"), mom), u)
		e.store(2, mn)
		e.store(0, e.op("sub.rn", w, e.mul(e.c("lr"), mn)))
	}},
}

// rmsUpdate stores RMSProp's new mean square (tensor 1 of the slot) and
// returns the update g / (sqrt(s) + eps).
func rmsUpdate(e *optimElem, s, g ptx.Reg) ptx.Reg {
	sn := e.add(e.mul(e.c("rho"), s), e.mul(e.mul(g, g), e.c("k")))
	e.store(1, sn)
	return e.op("div.rn", g, e.add(e.op("sqrt.rn", sn), e.c("eps")))
}

// optimElem is one element's update as a rule writes it: the constants,
// and the element's address in each tensor of the slot.
// grad is the gradient's place among the tensors (the last); in a
// mixed-precision kernel half is its dtype, copy the half copy's address
// and hasCopy whether there is one.
type optimElem struct {
	k      *ptx.Kernel
	d      DType
	consts map[string]ptx.Reg
	addrs  []ptx.Reg

	half          DType
	grad          int
	copy, hasCopy ptx.Reg
}

func (e *optimElem) c(name string) ptx.Reg { return e.consts[name] }

// load is tensor i's element; the gradient's times the constant gs and
// then the factor gf (each product rounded),
// that of a mixed-precision kernel widened from its half type first.
func (e *optimElem) load(i int) ptx.Reg {
	if i != e.grad {
		return load(e.k, e.d, e.addrs[i])
	}
	var g ptx.Reg
	if e.half != "" {
		g = toCompute(e.k, e.half, load(e.k, e.half, e.addrs[i]))
	} else {
		g = load(e.k, e.d, e.addrs[i])
	}
	return e.mul(e.mul(g, e.c("gs")), e.c("gf"))
}

// gradFactor declares the parameter gf, the address of the gradients'
// factor (device.StepSettings.GradFactor: a scalar of d, or 0 for 1),
// and returns the factor, read once by each thread.
func gradFactor(k *ptx.Kernel, d DType) ptx.Reg {
	addr := k.Param("gf", ptx.U64)
	f, has := k.Reg(d.reg()), k.Reg(ptx.Pred)
	k.Op("mov.%s %s, %s", d.reg(), f, ptx.Imm(d.reg(), 1))
	k.Op("setp.ne.u64 %s, %s, 0", has, addr)
	k.Op("cvta.to.global.u64 %s, %s", addr, addr)
	k.Op("@%s ld.global.%s %s, [%s]", has, d.mem(), f, addr)
	return f
}

// store writes tensor i's element; w's, in a mixed-precision kernel, to
// the half copy too.
func (e *optimElem) store(i int, v ptx.Reg) {
	store(e.k, e.d, e.addrs[i], v)
	if e.half != "" && i == 0 {
		e.k.Op("@%s st.global.%s [%s], %s", e.hasCopy, e.half.mem(), e.copy, fromCompute(e.k, e.half, v))
	}
}

// op writes a rounded instruction ("mul.rn", "sqrt.rn") of the dtype.
func (e *optimElem) op(inst string, args ...ptx.Reg) ptx.Reg {
	r := e.k.Reg(e.d.reg())
	format := inst + ".%s %s"
	vals := []any{e.d.reg(), r}
	for _, a := range args {
		format += ", %s"
		vals = append(vals, a)
	}
	e.k.Op(format, vals...)
	return r
}

func (e *optimElem) mul(a, b ptx.Reg) ptx.Reg { return e.op("mul.rn", a, b) }
func (e *optimElem) add(a, b ptx.Reg) ptx.Reg { return e.op("add.rn", a, b) }

// OptimConstWords is how many constants optim_consts writes: the most
// a rule takes.
const OptimConstWords = 10

func optimKernels() []*ptx.Kernel {
	out := append([]*ptx.Kernel{optimConstsKernel()}, multiKernels()...)
	for _, name := range slices.Sorted(maps.Keys(OptimRules)) {
		for _, slots := range OptimSlotCounts {
			for _, d := range Floats {
				out = append(out, multiTensorKernel(OptimRules[name], d, slots, false, ""), multiTensorKernel(OptimRules[name], d, slots, true, ""))
			}
			for _, h := range []DType{BF16, F16} {
				out = append(out, multiTensorKernel(OptimRules[name], F32, slots, false, h))
			}
		}
	}
	return out
}

// optimConstsKernel writes optim_consts (dst, w0 ... w9): its first
// thread stores the words at dst, dst+8, ...
func optimConstsKernel() *ptx.Kernel {
	k := ptx.NewKernel("optim_consts")
	dst := k.ParamPtr("dst")
	words := make([]ptx.Reg, OptimConstWords)
	for i := range words {
		words[i] = k.Param(fmt.Sprintf("w%d", i), ptx.U64)
	}
	tid, p := k.Reg(ptx.U32), k.Reg(ptx.Pred)
	k.Op("mov.u32 %s, %%tid.x", tid)
	k.Op("setp.ne.u32 %s, %s, 0", p, tid)
	done := k.Label("done")
	k.Op("@%s bra %s", p, done)
	for i, w := range words {
		k.Op("st.global.u64 [%s+%d], %s", dst, 8*i, w)
	}
	k.Place(done)
	return k
}

// OptimName is the name of rule's kernel of the given slots for d; at
// names the twin reading its constants from device memory, half (BF16,
// F16; "" for none) the mixed-precision twin whose gradients are of that
// type.
func OptimName(rule OptimRule, slots int, d DType, at bool, half DType) string {
	switch {
	case at:
		return Name(rule.Name, fmt.Sprint(slots), string(d), "at")
	case half != "":
		return Name(rule.Name, fmt.Sprint(slots), string(d), "g"+string(half))
	}
	return Name(rule.Name, fmt.Sprint(slots), string(d))
}

// multiTensorKernel writes <rule>_<slots>_<d> (or its _at or half twin),
// which reads the first slots of the table.
func multiTensorKernel(rule OptimRule, d DType, slots int, at bool, half DType) *ptx.Kernel {
	k := ptx.NewKernel(OptimName(rule, slots, d, at, half))
	t := d.reg()
	k.ParamBytes("tab", OptimTableSize)
	c := map[string]ptx.Reg{}
	var consts ptx.Reg
	if at {
		consts = k.ParamPtr("consts")
	}
	for i, name := range rule.Consts {
		if at {
			c[name] = k.Reg(t)
			k.Op("ld.global.%s %s, [%s+%d]", t, c[name], consts, 8*i)
		} else {
			c[name] = k.Param(name, t)
		}
	}
	c["gf"] = gradFactor(k, d)
	if half == "" {
		tensors, from, end, step, _ := tableChunk(k, rule.Tensors, slots, 0)
		k.Loop(from, end, step, func(i ptx.Reg) {
			e := &optimElem{k: k, d: d, consts: c, grad: rule.Tensors - 1}
			for _, r := range tensors {
				e.addrs = append(e.addrs, k.Addr(r, i, d.Size()))
			}
			rule.step(e)
		})
		return k
	}
	// The half copy's address stays generic until it is known not to be 0.
	tensors, from, end, step, _ := tableChunk(k, rule.Tensors+1, slots, 1)
	base := tensors[rule.Tensors]
	hasCopy := k.Reg(ptx.Pred)
	k.Op("setp.ne.u64 %s, %s, 0", hasCopy, base)
	k.Op("cvta.to.global.u64 %s, %s", base, base)
	k.Loop(from, end, step, func(i ptx.Reg) {
		e := &optimElem{k: k, d: d, consts: c, half: half, grad: rule.Tensors - 1, hasCopy: hasCopy}
		for j, r := range tensors[:rule.Tensors] {
			size := d.Size()
			if j == e.grad {
				size = half.Size()
			}
			e.addrs = append(e.addrs, k.Addr(r, i, size))
		}
		e.copy = k.Addr(base, i, half.Size())
		rule.step(e)
	})
	return k
}

// tableChunk writes a multi-tensor kernel's preamble over the first slots
// of parameter "tab" (OptimTable's layout, tensors addresses a slot): the
// slot of this block (the last whose first block is at most ours, found
// by constant-offset loads and selects), its tensors' global addresses,
// and this thread's walk of the block's chunk of OptimChunk elements:
// from (the thread's first index), end and step (the block's threads).
// bid is the block's index. The last generic of the addresses are left
// generic (an address that may be 0), the others made global.
func tableChunk(k *ptx.Kernel, tensors, slots, generic int) (ptrs []ptx.Reg, from, end, step, bid ptx.Reg) {
	b32 := k.Reg(ptx.U32)
	k.Op("mov.u32 %s, %%ctaid.x", b32)
	bid = k.Reg(ptx.U64)
	k.Op("cvt.u64.u32 %s, %s", bid, b32)
	var fields []int // the tensors' addresses, n, first
	for i := range tensors {
		fields = append(fields, 8*i)
	}
	fields = append(fields, optimCount, optimFirst)
	slot := make([]ptx.Reg, len(fields))
	for i, off := range fields {
		slot[i] = k.LoadField("tab", off)
	}
	p := k.Reg(ptx.Pred)
	for j := 1; j < slots; j++ {
		first := k.LoadField("tab", j*optimSlotBytes+optimFirst)
		k.Op("setp.le.u64 %s, %s, %s", p, first, bid)
		for i, off := range fields {
			v := first
			if i < len(fields)-1 {
				v = k.LoadField("tab", j*optimSlotBytes+off)
			}
			k.Op("selp.b64 %s, %s, %s, %s", slot[i], v, slot[i], p)
		}
	}
	ptrs = slot[:tensors]
	n, first := slot[tensors], slot[tensors+1]
	// The chunk: [start, end) of the slot's elements.
	start := k.Reg(ptx.U64)
	end = k.Reg(ptx.U64)
	k.Op("sub.s64 %s, %s, %s", start, bid, first)
	k.Op("mul.lo.s64 %s, %s, %d", start, start, OptimChunk)
	k.Op("add.s64 %s, %s, %d", end, start, OptimChunk)
	k.Op("min.u64 %s, %s, %s", end, end, n)
	tid, ntid := k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("mov.u32 %s, %%tid.x", tid)
	k.Op("mov.u32 %s, %%ntid.x", ntid)
	from, step = k.Reg(ptx.U64), k.Reg(ptx.U64)
	k.Op("cvt.u64.u32 %s, %s", from, tid)
	k.Op("add.s64 %s, %s, %s", from, from, start)
	k.Op("cvt.u64.u32 %s, %s", step, ntid)
	for _, r := range ptrs[:tensors-generic] {
		k.Op("cvta.to.global.u64 %s, %s", r, r)
	}
	return ptrs, from, end, step, bid
}
