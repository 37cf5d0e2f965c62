package emu

import (
	"fmt"
	"github.com/eagerflow/eagerflow/tensor"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"math"
	"math/bits"
	"strconv"
	"strings"
)

// Compiled kernels: each statement becomes an instr whose exec closure
// reads and writes a thread's registers (uint64 bits; 32-bit values zero
// extended, float32 as its bits) and memory. Statements are checked when
// compiled: an opcode, type or operand the emulator does not implement,
// or a register of the wrong class, is an error there, so the generator
// cannot drift past the emulator unnoticed.

type instrKind uint8

const (
	kOp instrKind = iota
	kBranch
	kBarrier
	kExit
	kShfl // shfl.sync, bar.warp.sync: the warp's lanes meet (warp.go)
)

type instr struct {
	kind   instrKind
	exec   func(r *run, b *block, t *thread)
	guard  int // predicate register, or -1
	neg    bool
	target int
	div    uint8 // the width in bytes of an integer division or remainder; 0 for other instructions
	param  bool  // a load from the parameter space, which ptxas folds into the instructions using it
	shfl   *shflOp
	line   int
	text   string
}

// compiled is a kernel ready to launch.
type compiled struct {
	name   string
	params []param
	poff   []int // each parameter's offset in the parameter block
	psize  int
	nregs  int
	shSize int
	// dynBase is where dynamic shared memory starts (kernel.dynBase, -1
	// for none); maxDyn the most a launch may give it
	// (SetMaxDynamicShared: 48 KB less the static bytes until raised).
	dynBase, maxDyn int
	maxThreads      int // kernel.maxThreads
	prog            []instr
}

// compiler holds what compiling one kernel needs.
type compiler struct {
	k  *kernel
	c  *compiled
	sm int // the module's target, sm_<sm>
}

func compile(k *kernel, sm int) (*compiled, error) {
	c := &compiled{name: k.name, params: k.params, nregs: k.nregs, shSize: k.shSize, dynBase: k.dynBase, maxDyn: max(staticShared-k.shSize, 0), maxThreads: k.maxThreads}
	off := 0
	for _, p := range k.params {
		off = (off + p.align - 1) / p.align * p.align
		c.poff = append(c.poff, off)
		off += p.size
	}
	c.psize = off
	cc := &compiler{k: k, c: c, sm: sm}
	for _, st := range k.stmts {
		in, err := cc.stmt(st)
		if err != nil {
			return nil, fmt.Errorf("%s, line %d (%s): %v", k.name, st.line, st.text, err)
		}
		c.prog = append(c.prog, in)
	}
	// A kernel that falls off its end exits.
	c.prog = append(c.prog, instr{kind: kExit, guard: -1, text: "(end)"})
	return c, nil
}

func (cc *compiler) stmt(st stmt) (instr, error) {
	in := instr{guard: -1, line: st.line, text: st.text}
	if st.guard != "" {
		r, ok := cc.k.regs[st.guard]
		if !ok || r.typ != "pred" {
			return in, fmt.Errorf("guard %s is not a predicate register", st.guard)
		}
		in.guard, in.neg = r.index, st.negGuard
	}
	parts := strings.Split(st.op, ".")
	base := parts[0]
	mods := parts[1:]
	if err := cc.narrowOperands(base, mods, st.args); err != nil {
		return in, err
	}
	var err error
	switch base {
	case "bra":
		if len(st.args) != 1 {
			return in, fmt.Errorf("bra takes a label")
		}
		t, ok := cc.k.labels[st.args[0]]
		if !ok {
			return in, fmt.Errorf("no label %s", st.args[0])
		}
		in.kind, in.target = kBranch, t
		return in, nil
	case "ret", "exit":
		in.kind = kExit
		return in, nil
	case "atom":
		in.exec, err = cc.atom(mods, st.args)
		return in, err
	case "call":
		in.exec, err = cc.call(mods, st.args)
		return in, err
	case "shfl":
		in.kind = kShfl
		in.shfl, err = cc.shfl(mods, st.args)
		return in, err
	case "mma":
		in.kind = kShfl
		in.shfl, err = cc.mma(mods, st.args)
		return in, err
	case "ldmatrix":
		in.kind = kShfl
		in.shfl, err = cc.ldmatrix(mods, st.args)
		return in, err
	case "vote":
		in.kind = kShfl
		in.shfl, err = cc.vote(mods, st.args)
		return in, err
	case "bar", "barrier":
		if len(mods) == 2 && mods[0] == "warp" && mods[1] == "sync" {
			in.kind = kShfl // a meeting of the warp's lanes that exchanges nothing
			in.shfl, err = cc.warpSync(st.args)
			return in, err
		}
		if len(mods) < 1 || (mods[0] != "sync" && mods[0] != "cta") || len(st.args) != 1 || st.args[0] != "0" {
			return in, fmt.Errorf("only bar.sync 0 is supported")
		}
		in.kind = kBarrier
		return in, nil
	case "cp":
		if len(mods) == 0 || mods[0] != "async" {
			return in, fmt.Errorf("only cp.async is supported")
		}
		in.exec, err = cc.cpAsync(mods, st.args)
	case "ld", "st":
		in.exec, err = cc.memory(base, mods, st.args)
		in.param = len(mods) > 0 && mods[0] == "param"
	case "mov":
		in.exec, err = cc.mov(mods, st.args)
	case "cvta":
		in.exec, err = cc.cvta(mods, st.args)
	case "cvt":
		if len(mods) > 1 && (mods[1] == "bf16x2" || mods[1] == "f16x2") {
			in.exec, err = cc.cvtPacked(mods, st.args)
			break
		}
		in.exec, err = cc.cvt(mods, st.args)
	case "setp":
		in.exec, err = cc.setp(mods, st.args)
	case "selp":
		in.exec, err = cc.selp(mods, st.args)
	default:
		in.exec, err = cc.arith(base, mods, st.args)
		// An integer division by a register; ptxas turns one by an
		// immediate into multiplications.
		typ := typeOf(mods)
		if err == nil && len(st.args) > 0 && (base == "div" || base == "rem") && classOf(typ) != "f32" && classOf(typ) != "f64" && strings.HasPrefix(st.args[len(st.args)-1], "%") {
			in.div = uint8(sizeOf(typ))
		}
	}
	return in, err
}

// narrowOperands refuses what ptxas refuses and the register classes
// hide (a .b16 register is held as b32): an 8- or 16-bit instruction type
// with a register of another width, outside ld, st and cvt (the only
// instructions whose data operands may be wider than their type). ptxas
// says "Arguments mismatch" for mov.u16 into a .b32 register.
func (cc *compiler) narrowOperands(base string, mods, args []string) error {
	if base == "ld" || base == "st" || base == "cvt" {
		return nil
	}
	size := sizeOf(typeOf(mods))
	if size != 1 && size != 2 {
		return nil
	}
	for _, a := range args {
		if r, ok := cc.k.regs[a]; ok && r.typ != "pred" && r.bits != 8*size {
			return fmt.Errorf("register %s is %d bits wide, the instruction's type .%s is %d (ptxas: arguments mismatch)", a, r.bits, typeOf(mods), 8*size)
		}
	}
	return nil
}

// operand kinds
type getter func(t *thread, b *block) uint64
type setter func(t *thread, v uint64)

// classOf is the register class an instruction type names.
func classOf(typ string) string {
	switch typ {
	case "f32":
		return "f32"
	case "f64":
		return "f64"
	case "pred":
		return "pred"
	case "b8", "u8", "s8", "b16", "u16", "s16", "b32", "u32", "s32":
		return "b32"
	case "b64", "u64", "s64":
		return "b64"
	}
	return ""
}

// compatible reports whether a register of class reg may hold an operand
// of class want (bit moves and loads accept either class of one size).
func compatible(reg, want string, bitsOnly bool) bool {
	if reg == want {
		return true
	}
	if !bitsOnly {
		return false
	}
	return (reg == "b32" && want == "f32") || (reg == "f32" && want == "b32") ||
		(reg == "b64" && want == "f64") || (reg == "f64" && want == "b64")
}

func (cc *compiler) reg(name, want string, bitsOnly bool) (int, error) {
	r, ok := cc.k.regs[name]
	if !ok {
		return 0, fmt.Errorf("unknown register %s", name)
	}
	if !compatible(r.typ, want, bitsOnly) {
		return 0, fmt.Errorf("register %s is .%s, the instruction wants .%s", name, r.typ, want)
	}
	return r.index, nil
}

func (cc *compiler) dst(name, class string, bitsOnly bool) (setter, error) {
	i, err := cc.reg(name, class, bitsOnly)
	if err != nil {
		return nil, err
	}
	mask := ^uint64(0)
	if class == "b32" || class == "f32" {
		mask = math.MaxUint32
	}
	return func(t *thread, v uint64) { t.regs[i] = v & mask }, nil
}

// src compiles a register, an immediate or a special register.
func (cc *compiler) src(s, class string, bitsOnly bool) (getter, error) {
	if strings.HasPrefix(s, "%") {
		if g, ok := special(s); ok {
			if class != "b32" {
				return nil, fmt.Errorf("special register %s is 32-bit", s)
			}
			return g, nil
		}
		i, err := cc.reg(s, class, bitsOnly)
		if err != nil {
			return nil, err
		}
		return func(t *thread, b *block) uint64 { return t.regs[i] }, nil
	}
	v, ok := parseImm(s, class)
	if !ok {
		return nil, fmt.Errorf("bad operand %q", s)
	}
	if class == "b32" {
		v &= math.MaxUint32
	}
	return func(*thread, *block) uint64 { return v }, nil
}

func special(s string) (getter, bool) {
	if s == "%laneid" {
		return func(t *thread, b *block) uint64 { return uint64((t.id - 1) % warpSize) }, true
	}
	dims := map[string]int{"x": 0, "y": 1, "z": 2}
	name, dim, ok := strings.Cut(strings.TrimPrefix(s, "%"), ".")
	d, okd := dims[dim]
	if !ok || !okd {
		return nil, false
	}
	switch name {
	case "tid":
		return func(t *thread, b *block) uint64 { return uint64(t.tid[d]) }, true
	case "ntid":
		return func(t *thread, b *block) uint64 { return uint64(b.run.block[d]) }, true
	case "ctaid":
		return func(t *thread, b *block) uint64 { return uint64(b.ctaid[d]) }, true
	case "nctaid":
		return func(t *thread, b *block) uint64 { return uint64(b.run.grid[d]) }, true
	}
	return nil, false
}

// typeOf is the last modifier that names a type (ld.global.f32 -> f32).
func typeOf(mods []string) string {
	for i := len(mods) - 1; i >= 0; i-- {
		if classOf(mods[i]) != "" {
			return mods[i]
		}
	}
	return ""
}

func has(mods []string, m string) bool {
	for _, x := range mods {
		if x == m {
			return true
		}
	}
	return false
}

func sizeOf(typ string) int {
	switch typ {
	case "b8", "u8", "s8":
		return 1
	case "b16", "u16", "s16":
		return 2
	case "b32", "u32", "s32", "f32":
		return 4
	}
	return 8
}

// address compiles "[%rd1+8]", "[name]" or "[name+4]": a function giving
// the address (a global address, a shared offset, or a parameter offset).
func (cc *compiler) address(s, space string) (func(t *thread, b *block) uint64, error) {
	if !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, "]") {
		return nil, fmt.Errorf("bad address %q", s)
	}
	inner := strings.ReplaceAll(s[1:len(s)-1], " ", "")
	base, offs := inner, ""
	if i := strings.IndexAny(inner[1:], "+-"); i >= 0 {
		base, offs = inner[:i+1], inner[i+1:]
	}
	off := int64(0)
	if offs != "" {
		v, err := strconv.ParseInt(strings.Replace(offs, "+-", "-", 1), 0, 64)
		if err != nil {
			return nil, fmt.Errorf("bad offset in %q", s)
		}
		off = v
	}
	if strings.HasPrefix(base, "%") {
		i, err := cc.reg(base, "b64", false)
		if err != nil {
			return nil, err
		}
		return func(t *thread, b *block) uint64 { return t.regs[i] + uint64(off) }, nil
	}
	switch space {
	case "param":
		for k, p := range cc.k.params {
			if p.name == base {
				at := uint64(cc.c.poff[k]) + uint64(off)
				return func(*thread, *block) uint64 { return at }, nil
			}
		}
		return nil, fmt.Errorf("no parameter %s", base)
	case "shared":
		v, ok := cc.k.shared[base]
		if !ok {
			return nil, fmt.Errorf("no shared variable %s", base)
		}
		at := uint64(int64(v.offset) + off)
		return func(*thread, *block) uint64 { return at }, nil
	}
	return nil, fmt.Errorf("a %s address needs a register base: %q", space, s)
}

// memory compiles ld.space.type d, [a] and st.space.type [a], v.
func (cc *compiler) memory(base string, mods []string, args []string) (func(*run, *block, *thread), error) {
	if len(mods) < 2 || len(args) != 2 {
		return nil, fmt.Errorf("%s needs a state space, a type and two operands", base)
	}
	space := mods[0]
	typ := typeOf(mods)
	if typ == "" || (space != "global" && space != "shared" && space != "param") {
		return nil, fmt.Errorf("unsupported %s.%s", base, strings.Join(mods, "."))
	}
	lanes := 1
	for _, m := range mods[1:] {
		switch {
		case m == "v2":
			lanes = 2
		case m == "v4":
			lanes = 4
		case classOf(m) == "" && m != "nc" && m != "ca" && m != "cg" && m != "cs":
			return nil, fmt.Errorf("unsupported modifier .%s", m)
		}
	}
	size := sizeOf(typ)
	class := classOf(typ)
	signed := strings.HasPrefix(typ, "s")
	if lanes > 1 {
		return cc.vectorMemory(base, space, class, size, lanes, args)
	}
	if base == "ld" {
		d, err := cc.dst(args[0], class, true)
		if err != nil {
			return nil, err
		}
		a, err := cc.address(args[1], space)
		if err != nil {
			return nil, err
		}
		return func(r *run, b *block, t *thread) {
			v, ok := r.load(b, t, space, a(t, b), size)
			if !ok {
				return
			}
			if signed && size < 8 {
				v = uint64(int64(v<<(64-8*size)) >> (64 - 8*size))
			}
			d(t, v)
		}, nil
	}
	if space == "param" {
		return cc.storeLocal(args, class)
	}
	a, err := cc.address(args[0], space)
	if err != nil {
		return nil, err
	}
	v, err := cc.src(args[1], class, true)
	if err != nil {
		return nil, err
	}
	return func(r *run, b *block, t *thread) { r.store(b, t, space, a(t, b), size, v(t, b)) }, nil
}

// storeLocal compiles st.param.type [local], v: an argument of a call
// into the local parameter's register.
func (cc *compiler) storeLocal(args []string, class string) (func(*run, *block, *thread), error) {
	name := strings.TrimSuffix(strings.TrimSuffix(strings.Trim(args[0], "[]"), "+0"), " ")
	if !cc.k.locals[name] {
		return nil, fmt.Errorf("st.param writes a local parameter of the kernel's body, not %s", args[0])
	}
	d, err := cc.dst(name, class, true)
	if err != nil {
		return nil, err
	}
	v, err := cc.src(args[1], class, true)
	if err != nil {
		return nil, err
	}
	return func(r *run, b *block, t *thread) { d(t, v(t, b)) }, nil
}

// call compiles call.uni cudaGraphSetConditional, (handle, value): the
// one device function there is (parse.go), with local parameters as its
// arguments. It sets the condition of the graph being run; a handle no
// graph made faults.
func (cc *compiler) call(mods []string, args []string) (func(*run, *block, *thread), error) {
	if len(mods) > 1 || len(mods) == 1 && mods[0] != "uni" || len(args) != 3 {
		return nil, fmt.Errorf("only call.uni %s, (handle, value) is supported", setConditional)
	}
	if args[0] != setConditional || !cc.k.externs[setConditional] {
		return nil, fmt.Errorf("call of %s, which the module does not declare or the emulator does not provide", args[0])
	}
	h, err := cc.reg(strings.TrimSpace(strings.TrimPrefix(args[1], "(")), "b64", true)
	if err != nil {
		return nil, err
	}
	v, err := cc.reg(strings.TrimSpace(strings.TrimSuffix(args[2], ")")), "b32", true)
	if err != nil {
		return nil, err
	}
	return func(r *run, b *block, t *thread) {
		handle := cu.CondHandle(t.regs[h])
		if _, ok := r.conds[handle]; !ok {
			r.fault("%s: condition %#x is not one of a graph's", setConditional, uint64(handle))
			return
		}
		r.conds[handle] = uint32(t.regs[v])
	}, nil
}

// atom compiles atom.global.min.<u64|s64|u32|s32> d, [a], b: the old value
// into d and the least of it and b left at a. Threads run one at a time,
// so every atomic is atomic here.
func (cc *compiler) atom(mods []string, args []string) (func(*run, *block, *thread), error) {
	if len(mods) != 3 || mods[0] != "global" || (mods[1] != "min" && mods[1] != "max") || len(args) != 3 {
		return nil, fmt.Errorf("only atom.global.<min|max>.<type> d, [a], b is supported")
	}
	typ := mods[2]
	class := classOf(typ)
	if class != "b32" && class != "b64" {
		return nil, fmt.Errorf("unsupported atom type .%s", typ)
	}
	size, signed, isMax := sizeOf(typ), strings.HasPrefix(typ, "s"), mods[1] == "max"
	d, err := cc.dst(args[0], class, false)
	if err != nil {
		return nil, err
	}
	a, err := cc.address(args[1], "global")
	if err != nil {
		return nil, err
	}
	v, err := cc.src(args[2], class, false)
	if err != nil {
		return nil, err
	}
	less := func(x, y uint64) bool {
		if signed {
			sh := uint(64 - 8*size)
			return int64(x<<sh)>>sh < int64(y<<sh)>>sh
		}
		return x < y
	}
	return func(r *run, b *block, t *thread) {
		addr := a(t, b)
		old, ok := r.load(b, t, "global", addr, size)
		if !ok {
			return
		}
		nv := v(t, b) & mask(size)
		if less(nv, old) != isMax && nv != old {
			r.store(b, t, "global", addr, size, nv)
		}
		d(t, old)
	}, nil
}

// vectorMemory compiles ld.space.vN.type {d0, ...}, [a] and
// st.space.vN.type [a], {v0, ...}: N elements of size bytes at an
// address aligned to the whole vector, as one access.
func (cc *compiler) vectorMemory(base, space, class string, size, lanes int, args []string) (func(*run, *block, *thread), error) {
	if size*lanes > 16 || space == "param" {
		return nil, fmt.Errorf("a %d-byte vector access to .%s is not supported", size*lanes, space)
	}
	regsAt, addrAt := 0, 1
	if base == "st" {
		regsAt, addrAt = 1, 0
	}
	list := strings.TrimSpace(args[regsAt])
	if !strings.HasPrefix(list, "{") || !strings.HasSuffix(list, "}") {
		return nil, fmt.Errorf("a vector operand must be a {list} of %d registers: %q", lanes, list)
	}
	names := strings.Split(list[1:len(list)-1], ",")
	if len(names) != lanes {
		return nil, fmt.Errorf("a .v%d access names %d registers", lanes, len(names))
	}
	a, err := cc.address(args[addrAt], space)
	if err != nil {
		return nil, err
	}
	total := size * lanes
	if base == "ld" {
		ds := make([]setter, lanes)
		for i, n := range names {
			if ds[i], err = cc.dst(strings.TrimSpace(n), class, true); err != nil {
				return nil, err
			}
		}
		return func(r *run, b *block, t *thread) {
			addr := a(t, b)
			if addr%uint64(total) != 0 {
				r.fault("misaligned %d-byte vector load at 0x%x", total, addr)
				return
			}
			var vals [4]uint64
			for i := range lanes {
				v, ok := r.loadPart(b, t, space, addr+uint64(i*size), size, i == 0, total)
				if !ok {
					return
				}
				vals[i] = v
			}
			for i, d := range ds {
				d(t, vals[i])
			}
		}, nil
	}
	vs := make([]getter, lanes)
	for i, n := range names {
		if vs[i], err = cc.src(strings.TrimSpace(n), class, true); err != nil {
			return nil, err
		}
	}
	return func(r *run, b *block, t *thread) {
		addr := a(t, b)
		if addr%uint64(total) != 0 {
			r.fault("misaligned %d-byte vector store at 0x%x", total, addr)
			return
		}
		for i, v := range vs {
			r.storePart(b, t, space, addr+uint64(i*size), size, v(t, b), i == 0, total)
		}
	}, nil
}

// mov compiles mov.type d, a; a may be a shared variable's name (its
// shared address).
func (cc *compiler) mov(mods []string, args []string) (func(*run, *block, *thread), error) {
	typ := typeOf(mods)
	if typ == "" || len(args) != 2 {
		return nil, fmt.Errorf("mov needs a type and two operands")
	}
	class := classOf(typ)
	d, err := cc.dst(args[0], class, strings.HasPrefix(typ, "b"))
	if err != nil {
		return nil, err
	}
	if v, ok := cc.k.shared[args[1]]; ok && class == "b64" {
		at := uint64(v.offset)
		return func(r *run, b *block, t *thread) { d(t, at) }, nil
	}
	s, err := cc.src(args[1], class, strings.HasPrefix(typ, "b"))
	if err != nil {
		return nil, err
	}
	return func(r *run, b *block, t *thread) { d(t, s(t, b)) }, nil
}

// cvta compiles cvta.to.global.u64 d, a: generic to global, the same
// address here.
func (cc *compiler) cvta(mods []string, args []string) (func(*run, *block, *thread), error) {
	if len(mods) != 3 || mods[0] != "to" || mods[1] != "global" || mods[2] != "u64" || len(args) != 2 {
		return nil, fmt.Errorf("only cvta.to.global.u64 is supported")
	}
	d, err := cc.dst(args[0], "b64", false)
	if err != nil {
		return nil, err
	}
	s, err := cc.src(args[1], "b64", false)
	if err != nil {
		return nil, err
	}
	return func(r *run, b *block, t *thread) { d(t, s(t, b)) }, nil
}

// cvt compiles cvt[.rnd][.ftz][.sat].dtype.stype d, a.
func (cc *compiler) cvt(mods []string, args []string) (func(*run, *block, *thread), error) {
	if len(mods) < 2 || len(args) != 2 {
		return nil, fmt.Errorf("cvt needs two types and two operands")
	}
	dt, stt := mods[len(mods)-2], mods[len(mods)-1]
	if dt == "f16" || stt == "f16" {
		return cc.cvtF16(mods, args)
	}
	if classOf(dt) == "" || classOf(stt) == "" || dt == "pred" || stt == "pred" {
		return nil, fmt.Errorf("bad cvt types .%s.%s", dt, stt)
	}
	rnd := ""
	ftz := false
	for _, m := range mods[:len(mods)-2] {
		switch m {
		case "rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi":
			rnd = m
		case "ftz":
			ftz = true
		case "sat":
			if !strings.HasPrefix(dt, "f") {
				return nil, fmt.Errorf("cvt.sat is supported for float results only")
			}
			return nil, fmt.Errorf("cvt.sat is not supported")
		default:
			return nil, fmt.Errorf("unsupported cvt modifier .%s", m)
		}
	}
	d, err := cc.dst(args[0], classOf(dt), false)
	if err != nil {
		return nil, err
	}
	s, err := cc.src(args[1], classOf(stt), false)
	if err != nil {
		return nil, err
	}
	conv, err := converter(dt, stt, rnd, ftz)
	if err != nil {
		return nil, err
	}
	return func(r *run, b *block, t *thread) { d(t, conv(s(t, b))) }, nil
}

// cvtF16 compiles cvt.f32.f16 d, a (exact) and cvt.rn.f16.f32 d, a (to
// nearest, ties to even; subnormals kept, beyond 65504 an infinity), the
// float16 operand a .b16 register. A NaN becomes the canonical one
// (0x7fffffff, 0x7fff): the hardware's NaN is not the payload the host's
// conversions keep, which kernels that care set themselves.
func (cc *compiler) cvtF16(mods []string, args []string) (func(*run, *block, *thread), error) {
	widen := len(mods) == 2 && mods[0] == "f32" && mods[1] == "f16"
	narrow := len(mods) == 3 && mods[0] == "rn" && mods[1] == "f16" && mods[2] == "f32"
	if !widen && !narrow || len(args) != 2 {
		return nil, fmt.Errorf("only cvt.f32.f16 d, a and cvt.rn.f16.f32 d, a are supported for .f16")
	}
	half := args[1]
	if narrow {
		half = args[0]
	}
	if r, ok := cc.k.regs[half]; !ok || r.bits != 16 {
		return nil, fmt.Errorf("the .f16 operand %s of cvt must be a .b16 register", half)
	}
	if widen {
		d, err := cc.dst(args[0], "f32", false)
		if err != nil {
			return nil, err
		}
		s, err := cc.src(args[1], "b32", true)
		if err != nil {
			return nil, err
		}
		return func(r *run, b *block, t *thread) {
			h := tensor.F16(s(t, b))
			if h&0x7fff > 0x7c00 {
				d(t, 0x7fffffff)
				return
			}
			d(t, uint64(math.Float32bits(h.Float32())))
		}, nil
	}
	d, err := cc.dst(args[0], "b32", true)
	if err != nil {
		return nil, err
	}
	s, err := cc.src(args[1], "f32", false)
	if err != nil {
		return nil, err
	}
	return func(r *run, b *block, t *thread) {
		f := math.Float32frombits(uint32(s(t, b)))
		if f != f {
			d(t, 0x7fff)
			return
		}
		d(t, uint64(tensor.ToF16(f)))
	}, nil
}

// toFloat reads bits of type typ as a float64 (integers exactly when they
// fit).
func toFloat(v uint64, typ string) float64 {
	switch typ {
	case "f32":
		return float64(math.Float32frombits(uint32(v)))
	case "f64":
		return math.Float64frombits(v)
	case "s8":
		return float64(int8(v))
	case "s16":
		return float64(int16(v))
	case "s32":
		return float64(int32(v))
	case "s64":
		return float64(int64(v))
	case "u8":
		return float64(uint8(v))
	case "u16":
		return float64(uint16(v))
	case "u32":
		return float64(uint32(v))
	}
	return float64(v)
}

func roundInt(f float64, rnd string) float64 {
	switch rnd {
	case "rzi", "rz":
		return math.Trunc(f)
	case "rmi", "rm":
		return math.Floor(f)
	case "rpi", "rp":
		return math.Ceil(f)
	}
	return math.RoundToEven(f)
}

// ftz32 flushes a float32 subnormal to a zero of its sign.
func ftz32(f float32) float32 {
	if f != 0 && math.Abs(float64(f)) < 0x1p-126 {
		return float32(math.Copysign(0, float64(f)))
	}
	return f
}

func converter(dt, st, rnd string, ftz bool) (func(uint64) uint64, error) {
	df, sf := strings.HasPrefix(dt, "f"), strings.HasPrefix(st, "f")
	switch {
	case df && sf:
		if dt == st {
			// Round to an integral value in the same type.
			if rnd == "" || rnd == "rn" {
				return func(v uint64) uint64 { return v }, nil
			}
			if dt == "f32" {
				return func(v uint64) uint64 {
					f := math.Float32frombits(uint32(v))
					if ftz {
						f = ftz32(f)
					}
					return uint64(math.Float32bits(float32(roundInt(float64(f), rnd))))
				}, nil
			}
			return func(v uint64) uint64 { return math.Float64bits(roundInt(math.Float64frombits(v), rnd)) }, nil
		}
		if dt == "f32" { // from f64: rounded to nearest
			return func(v uint64) uint64 {
				f := float32(math.Float64frombits(v))
				if ftz {
					f = ftz32(f)
				}
				return uint64(math.Float32bits(f))
			}, nil
		}
		return func(v uint64) uint64 {
			f := math.Float32frombits(uint32(v))
			if ftz {
				f = ftz32(f)
			}
			return math.Float64bits(float64(f))
		}, nil
	case df: // integer to float, rounded to nearest
		if dt == "f32" {
			return func(v uint64) uint64 {
				if st == "u64" {
					return uint64(math.Float32bits(float32(v)))
				}
				if st == "s64" {
					return uint64(math.Float32bits(float32(int64(v))))
				}
				return uint64(math.Float32bits(float32(toFloat(v, st))))
			}, nil
		}
		return func(v uint64) uint64 {
			if st == "u64" {
				return math.Float64bits(float64(v))
			}
			if st == "s64" {
				return math.Float64bits(float64(int64(v)))
			}
			return math.Float64bits(toFloat(v, st))
		}, nil
	case sf: // float to integer: rounded, saturated, NaN to 0
		size := sizeOf(dt)
		signed := strings.HasPrefix(dt, "s")
		return func(v uint64) uint64 {
			f := roundInt(toFloat(v, st), rnd)
			if f != f {
				return 0
			}
			var lo, hi float64
			if signed {
				lo, hi = -math.Ldexp(1, 8*size-1), math.Ldexp(1, 8*size-1)
			} else {
				lo, hi = 0, math.Ldexp(1, 8*size)
			}
			switch {
			case f < lo:
				f = lo
			case f >= hi:
				if signed {
					return uint64(int64(hi-1)) & mask(size)
				}
				return mask(size)
			}
			if signed {
				return uint64(int64(f)) & mask(size)
			}
			return uint64(f) & mask(size)
		}, nil
	default: // integer to integer: truncate or extend
		ssize, dsize := sizeOf(st), sizeOf(dt)
		signed := strings.HasPrefix(st, "s")
		return func(v uint64) uint64 {
			v &= mask(ssize)
			if signed && ssize < 8 {
				v = uint64(int64(v<<(64-8*ssize)) >> (64 - 8*ssize))
			}
			return v & mask(dsize)
		}, nil
	}
}

func mask(size int) uint64 {
	if size >= 8 {
		return ^uint64(0)
	}
	return 1<<(8*size) - 1
}

// setp compiles setp.cmp.type p, a, b.
func (cc *compiler) setp(mods []string, args []string) (func(*run, *block, *thread), error) {
	if len(mods) < 2 || len(args) != 3 {
		return nil, fmt.Errorf("setp needs a comparison, a type and three operands")
	}
	cmp, typ := mods[0], mods[len(mods)-1]
	for _, m := range mods[1 : len(mods)-1] {
		if m != "ftz" {
			return nil, fmt.Errorf("unsupported setp modifier .%s", m)
		}
	}
	class := classOf(typ)
	if class == "" || class == "pred" {
		return nil, fmt.Errorf("bad setp type .%s", typ)
	}
	p, err := cc.dst(args[0], "pred", false)
	if err != nil {
		return nil, err
	}
	a, err := cc.src(args[1], class, false)
	if err != nil {
		return nil, err
	}
	b, err := cc.src(args[2], class, false)
	if err != nil {
		return nil, err
	}
	var f func(x, y uint64) bool
	if class == "f32" || class == "f64" {
		f, err = floatCompare(cmp, typ)
	} else {
		f, err = intCompare(cmp, typ)
	}
	if err != nil {
		return nil, err
	}
	return func(r *run, bl *block, t *thread) {
		if f(a(t, bl), b(t, bl)) {
			p(t, 1)
		} else {
			p(t, 0)
		}
	}, nil
}

func floatCompare(cmp, typ string) (func(x, y uint64) bool, error) {
	get := func(v uint64) float64 { return toFloat(v, typ) }
	ordered := map[string]func(a, b float64) bool{
		"eq": func(a, b float64) bool { return a == b }, "ne": func(a, b float64) bool { return a != b && a == a && b == b },
		"lt": func(a, b float64) bool { return a < b }, "le": func(a, b float64) bool { return a <= b },
		"gt": func(a, b float64) bool { return a > b }, "ge": func(a, b float64) bool { return a >= b },
	}
	if f, ok := ordered[cmp]; ok {
		return func(x, y uint64) bool { return f(get(x), get(y)) }, nil
	}
	if strings.HasSuffix(cmp, "u") && len(cmp) == 3 {
		if f, ok := ordered[cmp[:2]]; ok { // unordered: true when either is NaN
			return func(x, y uint64) bool {
				a, b := get(x), get(y)
				return a != a || b != b || f(a, b)
			}, nil
		}
	}
	switch cmp {
	case "num":
		return func(x, y uint64) bool { a, b := get(x), get(y); return a == a && b == b }, nil
	case "nan":
		return func(x, y uint64) bool { a, b := get(x), get(y); return a != a || b != b }, nil
	}
	return nil, fmt.Errorf("unsupported float comparison .%s", cmp)
}

func intCompare(cmp, typ string) (func(x, y uint64) bool, error) {
	signed := strings.HasPrefix(typ, "s")
	size := sizeOf(typ)
	sx := func(v uint64) int64 { return int64(v<<(64-8*size)) >> (64 - 8*size) }
	ux := func(v uint64) uint64 { return v & mask(size) }
	switch cmp {
	case "eq":
		return func(x, y uint64) bool { return ux(x) == ux(y) }, nil
	case "ne":
		return func(x, y uint64) bool { return ux(x) != ux(y) }, nil
	}
	lt := func(x, y uint64) bool { return ux(x) < ux(y) }
	if signed {
		lt = func(x, y uint64) bool { return sx(x) < sx(y) }
	}
	switch cmp {
	case "lt", "lo":
		return lt, nil
	case "le", "ls":
		return func(x, y uint64) bool { return !lt(y, x) }, nil
	case "gt", "hi":
		return func(x, y uint64) bool { return lt(y, x) }, nil
	case "ge", "hs":
		return func(x, y uint64) bool { return !lt(x, y) }, nil
	}
	return nil, fmt.Errorf("unsupported integer comparison .%s", cmp)
}

// selp compiles selp.type d, a, b, p.
func (cc *compiler) selp(mods []string, args []string) (func(*run, *block, *thread), error) {
	typ := typeOf(mods)
	if typ == "" || len(args) != 4 {
		return nil, fmt.Errorf("selp needs a type and four operands")
	}
	class := classOf(typ)
	d, err := cc.dst(args[0], class, strings.HasPrefix(typ, "b"))
	if err != nil {
		return nil, err
	}
	a, err := cc.src(args[1], class, strings.HasPrefix(typ, "b"))
	if err != nil {
		return nil, err
	}
	b, err := cc.src(args[2], class, strings.HasPrefix(typ, "b"))
	if err != nil {
		return nil, err
	}
	p, err := cc.src(args[3], "pred", false)
	if err != nil {
		return nil, err
	}
	return func(r *run, bl *block, t *thread) {
		if p(t, bl) != 0 {
			d(t, a(t, bl))
		} else {
			d(t, b(t, bl))
		}
	}, nil
}

// arith compiles the arithmetic, logic and math instructions.
func (cc *compiler) arith(base string, mods []string, args []string) (func(*run, *block, *thread), error) {
	typ := typeOf(mods)
	if typ == "" {
		return nil, fmt.Errorf("unsupported instruction %s.%s", base, strings.Join(mods, "."))
	}
	class := classOf(typ)
	if class == "f32" || class == "f64" {
		return cc.floatOp(base, mods, typ, args)
	}
	return cc.intOp(base, mods, typ, args)
}

func (cc *compiler) operands(args []string, n int, dclass, sclass string) (setter, []getter, error) {
	if len(args) != n+1 {
		return nil, nil, fmt.Errorf("wants %d operands, has %d", n+1, len(args))
	}
	d, err := cc.dst(args[0], dclass, false)
	if err != nil {
		return nil, nil, err
	}
	srcs := make([]getter, n)
	for i := range srcs {
		if srcs[i], err = cc.src(args[i+1], sclass, false); err != nil {
			return nil, nil, err
		}
	}
	return d, srcs, nil
}

func (cc *compiler) intOp(base string, mods []string, typ string, args []string) (func(*run, *block, *thread), error) {
	class := classOf(typ)
	size := sizeOf(typ)
	signed := strings.HasPrefix(typ, "s")
	sx := func(v uint64) int64 { return int64(v<<(64-8*size)) >> (64 - 8*size) }
	m := mask(size)
	if class == "pred" {
		m = 1 // a predicate is one bit: not.pred of true is false
	}
	if base == "mul" && has(mods, "wide") {
		if size != 4 {
			return nil, fmt.Errorf("mul.wide takes 32-bit operands")
		}
		d, s, err := cc.operands(args, 2, "b64", "b32")
		if err != nil {
			return nil, err
		}
		if signed {
			return func(r *run, b *block, t *thread) { d(t, uint64(sx(s[0](t, b))*sx(s[1](t, b)))) }, nil
		}
		return func(r *run, b *block, t *thread) { d(t, (s[0](t, b)&m)*(s[1](t, b)&m)) }, nil
	}
	if base == "mul" && has(mods, "hi") {
		d, s, err := cc.operands(args, 2, class, class)
		if err != nil {
			return nil, err
		}
		return func(r *run, b *block, t *thread) { d(t, mulHi(s[0](t, b), s[1](t, b), size, signed)) }, nil
	}
	if (base == "mul" || base == "mad") && !has(mods, "lo") {
		return nil, fmt.Errorf("%s on integers needs .lo, .hi or .wide", base)
	}
	if base == "shl" || base == "shr" {
		// The shift amount is a 32-bit register or an immediate, whatever
		// the type (the PTX ISA: "b is always .u32").
		d, s, err := cc.operands(args[:min(2, len(args))], 1, class, class)
		if err != nil {
			return nil, err
		}
		if len(args) != 3 {
			return nil, fmt.Errorf("wants 3 operands, has %d", len(args))
		}
		amount := class
		if strings.HasPrefix(args[2], "%") {
			amount = "b32"
		}
		shift, err := cc.src(args[2], amount, false)
		if err != nil {
			return nil, err
		}
		s = append(s, shift)
		if base == "shl" {
			return func(r *run, b *block, t *thread) {
				n := s[1](t, b) & 0xffffffff
				if n >= uint64(8*size) {
					d(t, 0)
					return
				}
				d(t, (s[0](t, b)<<n)&m)
			}, nil
		}
		return func(r *run, b *block, t *thread) {
			n := s[1](t, b) & 0xffffffff
			v := s[0](t, b) & m
			if signed {
				if n >= uint64(8*size) {
					n = uint64(8*size) - 1
				}
				d(t, uint64(sx(v)>>n)&m)
				return
			}
			if n >= uint64(8*size) {
				d(t, 0)
				return
			}
			d(t, v>>n)
		}, nil
	}
	unary := map[string]func(v uint64) uint64{
		"neg": func(v uint64) uint64 { return -v & m },
		"not": func(v uint64) uint64 { return ^v & m },
		"abs": func(v uint64) uint64 {
			if sx(v) < 0 {
				return -v & m
			}
			return v & m
		},
		"popc": func(v uint64) uint64 { return uint64(bits.OnesCount64(v & m)) },
	}
	if f, ok := unary[base]; ok {
		if base == "abs" && !signed {
			return nil, fmt.Errorf("abs takes a signed type")
		}
		dclass := class
		if base == "popc" {
			dclass = "b32"
		}
		d, s, err := cc.operands(args, 1, dclass, class)
		if err != nil {
			return nil, err
		}
		return func(r *run, b *block, t *thread) { d(t, f(s[0](t, b))) }, nil
	}
	if class == "pred" {
		d, s, err := cc.operands(args, 2, "pred", "pred")
		if err != nil {
			return nil, err
		}
		switch base {
		case "and":
			return func(r *run, b *block, t *thread) { d(t, s[0](t, b)&s[1](t, b)) }, nil
		case "or":
			return func(r *run, b *block, t *thread) { d(t, s[0](t, b)|s[1](t, b)) }, nil
		case "xor":
			return func(r *run, b *block, t *thread) { d(t, s[0](t, b)^s[1](t, b)) }, nil
		}
		return nil, fmt.Errorf("unsupported predicate instruction %s", base)
	}
	binary := map[string]func(r *run, x, y uint64) uint64{
		"add": func(r *run, x, y uint64) uint64 { return (x + y) & m },
		"sub": func(r *run, x, y uint64) uint64 { return (x - y) & m },
		"mul": func(r *run, x, y uint64) uint64 { return (x * y) & m },
		"and": func(r *run, x, y uint64) uint64 { return x & y & m },
		"or":  func(r *run, x, y uint64) uint64 { return (x | y) & m },
		"xor": func(r *run, x, y uint64) uint64 { return (x ^ y) & m },
		"min": func(r *run, x, y uint64) uint64 {
			if (signed && sx(x) <= sx(y)) || (!signed && x&m <= y&m) {
				return x & m
			}
			return y & m
		},
		"max": func(r *run, x, y uint64) uint64 {
			if (signed && sx(x) >= sx(y)) || (!signed && x&m >= y&m) {
				return x & m
			}
			return y & m
		},
		"div": func(r *run, x, y uint64) uint64 {
			if y&m == 0 {
				r.fault("integer division by zero")
				return 0
			}
			if signed {
				return uint64(sx(x)/sx(y)) & m
			}
			return (x & m) / (y & m)
		},
		"rem": func(r *run, x, y uint64) uint64 {
			if y&m == 0 {
				r.fault("integer remainder by zero")
				return 0
			}
			if signed {
				return uint64(sx(x)%sx(y)) & m
			}
			return (x & m) % (y & m)
		},
	}
	if base == "mad" {
		d, s, err := cc.operands(args, 3, class, class)
		if err != nil {
			return nil, err
		}
		return func(r *run, b *block, t *thread) { d(t, (s[0](t, b)*s[1](t, b)+s[2](t, b))&m) }, nil
	}
	f, ok := binary[base]
	if !ok {
		return nil, fmt.Errorf("unsupported instruction %s.%s", base, strings.Join(mods, "."))
	}
	d, s, err := cc.operands(args, 2, class, class)
	if err != nil {
		return nil, err
	}
	return func(r *run, b *block, t *thread) { d(t, f(r, s[0](t, b), s[1](t, b))) }, nil
}

// mulHi is the high half of the 2*size-byte product of x and y (size 4
// or 8), as mul.hi computes it.
func mulHi(x, y uint64, size int, signed bool) uint64 {
	if size == 4 {
		if signed {
			return uint64(uint32((int64(int32(x)) * int64(int32(y))) >> 32))
		}
		return (x & 0xffffffff) * (y & 0xffffffff) >> 32
	}
	hi, _ := bits.Mul64(x, y)
	if signed { // the signed high word from the unsigned one
		if int64(x) < 0 {
			hi -= y
		}
		if int64(y) < 0 {
			hi -= x
		}
	}
	return hi
}

// floatOp compiles float arithmetic. Correctly rounded operations are
// computed exactly as IEEE 754 defines them; .approx ones (ex2, lg2,
// rsqrt, rcp.approx) are computed accurately, within the hardware's
// documented bounds of them.
func (cc *compiler) floatOp(base string, mods []string, typ string, args []string) (func(*run, *block, *thread), error) {
	is32 := typ == "f32"
	ftz := has(mods, "ftz")
	for _, mm := range mods {
		switch mm {
		case "rn", "ftz", "approx", "full", "f32", "f64", "sat":
			if mm == "sat" {
				return nil, fmt.Errorf(".sat is not supported")
			}
		case "rz", "rm", "rp":
			return nil, fmt.Errorf("rounding mode .%s is not supported", mm)
		default:
			return nil, fmt.Errorf("unsupported modifier .%s on %s", mm, base)
		}
	}
	approx := has(mods, "approx")
	get := func(v uint64) float64 {
		if is32 {
			f := math.Float32frombits(uint32(v))
			if ftz {
				f = ftz32(f)
			}
			return float64(f)
		}
		return math.Float64frombits(v)
	}
	put := func(f float64) uint64 {
		if is32 {
			g := float32(f)
			if ftz {
				g = ftz32(g)
			}
			return uint64(math.Float32bits(g))
		}
		return math.Float64bits(f)
	}
	// add32 and the like round once to float32: float64 arithmetic of two
	// float32 values is exact for +, - and *, and float32(x/y) computed in
	// float64 then rounded is the correctly rounded float32 quotient.
	class := classOf(typ)
	switch base {
	case "add", "sub", "mul", "div", "min", "max", "copysign":
		if base == "div" && approx {
			return nil, fmt.Errorf("div.approx is not supported: use div.rn or div.full")
		}
		d, s, err := cc.operands(args, 2, class, class)
		if err != nil {
			return nil, err
		}
		var f func(x, y float64) float64
		switch base {
		case "add":
			f = func(x, y float64) float64 { return x + y }
		case "sub":
			f = func(x, y float64) float64 { return x - y }
		case "mul":
			f = func(x, y float64) float64 { return x * y }
		case "div":
			f = func(x, y float64) float64 { return x / y }
		case "copysign": // copysign d, a, b: |b| with a's sign
			f = func(x, y float64) float64 { return math.Copysign(y, x) }
		case "min", "max":
			mn := base == "min"
			f = func(x, y float64) float64 {
				switch {
				case x != x:
					return y // NaN only when both are
				case y != y:
					return x
				case x == 0 && y == 0:
					if mn == math.Signbit(x) {
						return x
					}
					return y
				case mn:
					return math.Min(x, y)
				}
				return math.Max(x, y)
			}
		}
		if is32 && base == "div" {
			return func(r *run, b *block, t *thread) {
				x, y := float32(get(s[0](t, b))), float32(get(s[1](t, b)))
				q := x / y
				if ftz {
					q = ftz32(q)
				}
				d(t, uint64(math.Float32bits(q)))
			}, nil
		}
		return func(r *run, b *block, t *thread) { d(t, put(f(get(s[0](t, b)), get(s[1](t, b))))) }, nil
	case "fma", "mad":
		if base == "mad" && !has(mods, "rn") {
			return nil, fmt.Errorf("mad on floats needs .rn (it is fma)")
		}
		d, s, err := cc.operands(args, 3, class, class)
		if err != nil {
			return nil, err
		}
		return func(r *run, b *block, t *thread) {
			d(t, put(math.FMA(get(s[0](t, b)), get(s[1](t, b)), get(s[2](t, b)))))
		}, nil
	}
	unary := map[string]func(x float64) float64{
		"neg":  func(x float64) float64 { return -x },
		"abs":  math.Abs,
		"sqrt": math.Sqrt,
		"rcp":  func(x float64) float64 { return 1 / x },
		"rsqrt": func(x float64) float64 {
			return 1 / math.Sqrt(x)
		},
		"ex2": math.Exp2,
		"lg2": math.Log2,
	}
	f, ok := unary[base]
	if !ok {
		return nil, fmt.Errorf("unsupported instruction %s.%s", base, strings.Join(mods, "."))
	}
	switch base {
	case "rsqrt", "ex2", "lg2":
		if !approx {
			return nil, fmt.Errorf("%s needs .approx", base)
		}
		if base != "rsqrt" && !is32 {
			return nil, fmt.Errorf("%s.approx is float32 only", base)
		}
	case "sqrt", "rcp":
		if approx && !is32 {
			return nil, fmt.Errorf("%s.approx.f64 is not supported: use .rn", base)
		}
	}
	d, s, err := cc.operands(args, 1, class, class)
	if err != nil {
		return nil, err
	}
	if is32 && (base == "sqrt" || base == "rcp") && !approx {
		// Correctly rounded in float32: computed in float64 and rounded
		// once, which for a square root and a reciprocal is exact.
		return func(r *run, b *block, t *thread) { d(t, put(f(get(s[0](t, b))))) }, nil
	}
	return func(r *run, b *block, t *thread) { d(t, put(f(get(s[0](t, b))))) }, nil
}
