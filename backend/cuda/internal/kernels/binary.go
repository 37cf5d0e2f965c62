package kernels

import (
	"fmt"
	"math"
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// Binary kernels compute out[i] = a op b elementwise, as the CPU does
// (integer division by zero -1 and remainder by zero the dividend, as XLA
// defines them; float Max and Min propagate NaN; Rem is C's fmod, exact):
//   - <op>_<dtype>_vv (out, a, b, n): both operands full, row-major;
//   - <op>_<dtype>_bc (out, a, b, n, g): operands at g's offsets 0 and 1
//     with g's strides 0 and 1 over the output's shape (0 broadcasts).
// The ops: add, sub, mul, div, rem, max, min, pow, relugrad (b where a >
// 0), and for floats tanhgrad and sigmoidgrad (Tanh's and Sigmoid's
// backward from the output a and the gradient b), gelutanhgrad and
// gelugrad (GeluTanh's and Gelu's from the input a), addrelu (Relu(a + b), rounded as the
// two ops are: a fused convolution's bias and activation in one pass) and
// the activations' UnitBinaryOps (units.go).

// BinaryOps lists the ops per dtype.
func BinaryOps(d DType) []string {
	ops := []string{"add", "sub", "mul", "div", "rem", "max", "min", "pow", "relugrad"}
	if d.float() {
		ops = append(ops, "tanhgrad", "sigmoidgrad", "gelutanhgrad", "gelugrad", "addrelu", "atan2", "hypot", "logaddexp", "zeta", "polygamma", "igamma", "igammac")
		ops = append(ops, "erfcgrad", "erfcxgrad", "ndtrgrad", "logndtrgrad", "ndtrigrad")
		ops = append(ops, UnitBinaryOps...)
	}
	return ops
}

// SingleTypes are the dtypes whose binary ops have kernels with one
// operand a single value (family "single"): <op>_<dtype>_vs (out, a, b,
// n), b one value, and <op>_<dtype>_sv, a one value; the full operand
// read 16 bytes a thread as vv's are, the single value once a thread,
// where a broadcast kernel finds each element's coordinates (about 28
// instructions an element against 8). A scaled tensor, LeakyRelu's
// slope, a dropout mask's scale: the arithmetic and the slopes (SingleOps)
// of float32 and the half types.
var (
	SingleTypes = slices.Concat([]DType{F32}, Halves)
	SingleOps   = []string{"add", "sub", "mul", "div", "max", "min", "pow", "prelu", "preluslope"}
)

func singleKernels() []*ptx.Kernel {
	var out []*ptx.Kernel
	for _, d := range SingleTypes {
		cd := d.Compute()
		for _, op := range SingleOps {
			for _, first := range []bool{false, true} {
				out = append(out, elementwiseSingle(Name(op, string(d), singleVariant(first)), d, first, func(k *ptx.Kernel, x, y ptx.Reg) ptx.Reg {
					return fromCompute(k, d, binaryOp(k, op, cd, toCompute(k, d, x), toCompute(k, d, y)))
				}))
			}
		}
	}
	return out
}

// singleVariant is the name of the variant whose first operand (or
// second) is the single value.
func singleVariant(first bool) string {
	if first {
		return "sv"
	}
	return "vs"
}

// elementwiseSingle writes a two-input elementwise kernel of dtype d whose
// first operand (or second) is one value, loaded once.
func elementwiseSingle(name string, d DType, first bool, f func(k *ptx.Kernel, x, y ptx.Reg) ptx.Reg) *ptx.Kernel {
	k := ptx.NewKernel(name)
	o, a, b := k.ParamPtr("out"), k.ParamPtr("a"), k.ParamPtr("b")
	n := k.Param("n", ptx.U64)
	full, single := a, b
	if first {
		full, single = b, a
	}
	v := load(k, d, single)
	vectorized(k, n, d, d, []ptx.Reg{full}, o, func(xs []ptx.Reg) ptx.Reg {
		if first {
			return f(k, v, xs[0])
		}
		return f(k, xs[0], v)
	})
	return k
}

func binaryKernels() []*ptx.Kernel {
	return pairKernels(slices.Concat(Numeric, Halves), BinaryOps, func(d DType) DType { return d }, binaryOp)
}

// pairKernels builds both variants (same shape, broadcast) of each op of
// opsOf(d) for each dtype d of dts, with result dtype res(d) and the body
// f computes (in d's compute dtype: the half types' values widened to
// float32 and a half result rounded once).
func pairKernels(dts []DType, opsOf func(DType) []string, res func(DType) DType,
	f func(k *ptx.Kernel, op string, d DType, x, y ptx.Reg) ptx.Reg) []*ptx.Kernel {
	var out []*ptx.Kernel
	for _, d := range dts {
		cd := d.Compute()
		for _, op := range opsOf(cd) {
			for _, bc := range []bool{false, true} {
				out = append(out, elementwise2(Name(op, string(d), variant(bc)), d, res(d), bc, slices.Contains(LongOps, op), func(k *ptx.Kernel, x, y ptx.Reg) ptx.Reg {
					return fromCompute(k, res(d), f(k, op, cd, toCompute(k, d, x), toCompute(k, d, y)))
				}))
			}
		}
	}
	return out
}

func variant(bc bool) string {
	if bc {
		return "bc"
	}
	return "vv"
}

// elementwise2 writes a two-input elementwise kernel reading dtype in and
// writing dtype res, computing f on each pair (one pair a thread where
// long).
func elementwise2(name string, in, res DType, bc, long bool, f func(k *ptx.Kernel, x, y ptx.Reg) ptx.Reg) *ptx.Kernel {
	k := ptx.NewKernel(name)
	o, a, b := k.ParamPtr("out"), k.ParamPtr("a"), k.ParamPtr("b")
	n := k.Param("n", ptx.U64)
	g := ""
	if bc {
		g = k.ParamBytes("g", GeometrySize)
	}
	if !bc {
		elementwise(k, n, in, res, long, []ptx.Reg{a, b}, o, func(xs []ptx.Reg) ptx.Reg { return f(k, xs[0], xs[1]) })
		return k
	}
	k.GridStride(n, func(i ptx.Reg) {
		off := offsets(k, g, i, 2)
		x := load(k, in, k.Addr(a, off[0], in.Size()))
		y := load(k, in, k.Addr(b, off[1], in.Size()))
		store(k, res, k.Addr(o, i, res.Size()), f(k, x, y))
	})
	return k
}

// LongOps are the elementwise ops whose bodies are long (the gamma
// family's series, recurrences and sums, the normal family's rational
// approximations and exponentials, several hundred instructions):
// their kernels take one element a thread, where vectorized's groups
// would copy the body four to ten times into the module for a kernel
// that is bound by its arithmetic, not by memory.
var LongOps = []string{"lgamma", "digamma", "zeta", "polygamma", "igamma", "igammac", "erfc", "erfcx", "ndtr", "logndtr", "ndtri",
	"erfcgrad", "erfcxgrad", "ndtrgrad", "logndtrgrad", "ndtrigrad", "besseli0", "besseli0e", "besseli1", "besseli1e"}

// elementwise is vectorized, or where long a grid-stride loop of one
// element a thread.
func elementwise(k *ptx.Kernel, n ptx.Reg, in, res DType, long bool, ins []ptx.Reg, o ptx.Reg, f func(xs []ptx.Reg) ptx.Reg) {
	if !long {
		vectorized(k, n, in, res, ins, o, f)
		return
	}
	k.GridStride(n, func(i ptx.Reg) {
		xs := make([]ptx.Reg, len(ins))
		for j, p := range ins {
			xs[j] = load(k, in, k.Addr(p, i, in.Size()))
		}
		store(k, res, k.Addr(o, i, res.Size()), f(xs))
	})
}

// vectorized writes out[i] = f(ins[0][i], ...) over n elements of full
// operands of dtype in, the result of dtype res (vectorizedMixed).
func vectorized(k *ptx.Kernel, n ptx.Reg, in, res DType, ins []ptx.Reg, o ptx.Reg, f func(xs []ptx.Reg) ptx.Reg) {
	ops := make([]operand, len(ins))
	for i, p := range ins {
		ops[i] = operand{p, in}
	}
	vectorizedMixed(k, n, ops, res, o, f)
}

// Lanes is how many elements a thread of an elementwise kernel of full
// operands of dtypes ds takes at a time where they are aligned
// (vectorizedMixed): 16 bytes of the widest.
func Lanes(ds ...DType) int {
	widest := 1
	for _, d := range ds {
		widest = max(widest, d.Size())
	}
	return 16 / widest
}

// operand is a kernel's pointer to elements of a dtype.
type operand struct {
	ptr ptx.Reg
	d   DType
}

// vectorizedMixed writes out[i] = f(ins[0][i], ...) over n elements of
// full operands, each of its own dtype: where every pointer is 16-byte
// aligned, each thread takes a group of 16 / (the widest element size)
// elements, so that the widest operands move 16 bytes at a time (v2 or
// v4) and the narrower ones as many as their group holds (bytes and
// halves packed into 32-bit words); the last n mod lanes elements one at
// a time; otherwise element by element.
func vectorizedMixed(k *ptx.Kernel, n ptx.Reg, ins []operand, res DType, o ptx.Reg, f func(xs []ptx.Reg) ptx.Reg) {
	scalar := func(i ptx.Reg) {
		xs := make([]ptx.Reg, len(ins))
		for j, q := range ins {
			xs[j] = load(k, q.d, k.Addr(q.ptr, i, q.d.Size()))
		}
		store(k, res, k.Addr(o, i, res.Size()), f(xs))
	}
	ds := []DType{res}
	for _, q := range ins {
		ds = append(ds, q.d)
	}
	lanes := Lanes(ds...)
	// Aligned: every pointer's low four bits clear.
	bits16, p := k.Reg(ptx.U64), k.Reg(ptx.Pred)
	k.Op("mov.u64 %s, %s", bits16, o)
	for _, q := range ins {
		k.Op("or.b64 %s, %s, %s", bits16, bits16, q.ptr)
	}
	k.Op("and.b64 %s, %s, 15", bits16, bits16)
	k.Op("setp.ne.u64 %s, %s, 0", p, bits16)
	unaligned, done := k.Label("unaligned"), k.Label("elementwise_done")
	k.Op("@%s bra %s", p, unaligned)
	groups, tail, shift := k.Reg(ptx.U64), k.Reg(ptx.U64), 0
	for 1<<shift < lanes {
		shift++
	}
	k.Op("shr.u64 %s, %s, %d", groups, n, shift)
	k.Op("shl.b64 %s, %s, %d", tail, groups, shift)
	k.GridStride(groups, func(g ptx.Reg) {
		xs := make([][]ptx.Reg, len(ins))
		for j, q := range ins {
			xs[j] = loadGroup(k, q.d, k.Addr(q.ptr, g, lanes*q.d.Size()), lanes)
		}
		rs := make([]ptx.Reg, lanes)
		for l := range rs {
			args := make([]ptx.Reg, len(ins))
			for j := range ins {
				args[j] = xs[j][l]
			}
			rs[l] = f(args)
		}
		storeGroup(k, res, k.Addr(o, g, lanes*res.Size()), rs)
	})
	k.GridStrideFrom(tail, n, scalar)
	k.Op("bra.uni %s", done)
	k.Place(unaligned)
	k.GridStride(n, scalar)
	k.Place(done)
}

// loadGroup loads lanes consecutive elements of d at addr (aligned to
// their total size) into a register each: elements of 4 or 8 bytes with
// one vector load, narrower ones as packed 32-bit words (or one narrower
// load) taken apart.
func loadGroup(k *ptx.Kernel, d DType, addr ptx.Reg, lanes int) []ptx.Reg {
	size := d.Size()
	if size >= 4 || lanes == 1 {
		if lanes == 1 {
			return []ptx.Reg{load(k, d, addr)}
		}
		rs := make([]ptx.Reg, lanes)
		for l := range rs {
			rs[l] = k.Reg(d.reg())
		}
		k.Op("ld.global.v%d.%s %s, [%s]", lanes, d.mem(), regList(rs), addr)
		return rs
	}
	words := packedLoad(k, addr, lanes*size)
	per, mask := 4/size, uint32(1)<<(8*size)-1
	rs := make([]ptx.Reg, lanes)
	for l := range rs {
		rs[l] = k.Reg(ptx.U32)
		k.Op("shr.b32 %s, %s, %d", rs[l], words[l/per], 8*size*(l%per))
		k.Op("and.b32 %s, %s, %d", rs[l], rs[l], mask)
	}
	return rs
}

// packedLoad loads bytes (2 to 16) at addr as 32-bit words (2 bytes into
// the low half of one).
func packedLoad(k *ptx.Kernel, addr ptx.Reg, bytes int) []ptx.Reg {
	ws := make([]ptx.Reg, max(bytes/4, 1))
	for i := range ws {
		ws[i] = k.Reg(ptx.U32)
	}
	switch bytes {
	case 2:
		k.Op("ld.global.u16 %s, [%s]", ws[0], addr)
	case 4:
		k.Op("ld.global.u32 %s, [%s]", ws[0], addr)
	default:
		k.Op("ld.global.v%d.u32 %s, [%s]", len(ws), regList(ws), addr)
	}
	return ws
}

// storeGroup stores vs, consecutive elements of d, at addr (aligned to
// their total size): loadGroup's inverse.
func storeGroup(k *ptx.Kernel, d DType, addr ptx.Reg, vs []ptx.Reg) {
	size := d.Size()
	if size >= 4 || len(vs) == 1 {
		if len(vs) == 1 {
			store(k, d, addr, vs[0])
			return
		}
		k.Op("st.global.v%d.%s [%s], %s", len(vs), d.mem(), addr, regList(vs))
		return
	}
	per, mask := 4/size, uint32(1)<<(8*size)-1
	bytes := len(vs) * size
	ws := make([]ptx.Reg, max(bytes/4, 1))
	for i := range ws {
		ws[i] = k.Reg(ptx.U32)
		k.Op("mov.u32 %s, 0", ws[i])
	}
	for l, v := range vs {
		b := k.Reg(ptx.U32)
		k.Op("and.b32 %s, %s, %d", b, v, mask)
		k.Op("shl.b32 %s, %s, %d", b, b, 8*size*(l%per))
		k.Op("or.b32 %s, %s, %s", ws[l/per], ws[l/per], b)
	}
	switch bytes {
	case 2:
		k.Op("st.global.u16 [%s], %s", addr, ws[0])
	case 4:
		k.Op("st.global.u32 [%s], %s", addr, ws[0])
	default:
		k.Op("st.global.v%d.u32 [%s], %s", len(ws), addr, regList(ws))
	}
}

// regList is "{%r1, %r2, ...}".
func regList(rs []ptx.Reg) string {
	s := "{"
	for i, r := range rs {
		if i > 0 {
			s += ", "
		}
		s += r.String()
	}
	return s + "}"
}

// load reads an element of dtype d into a register of d.reg().
func load(k *ptx.Kernel, d DType, addr ptx.Reg) ptx.Reg {
	r := k.Reg(d.reg())
	k.Op("ld.global.%s %s, [%s]", d.mem(), r, addr)
	return r
}

func store(k *ptx.Kernel, d DType, addr, v ptx.Reg) { k.Op("st.global.%s [%s], %s", d.mem(), addr, v) }

// itype is the instruction type for integer arithmetic on d.
func itype(d DType) string {
	switch d {
	case S32:
		return "s32"
	case S64:
		return "s64"
	}
	return "u32"
}

// cmpType is the type setp compares d's registers as.
func cmpType(d DType) string {
	if d.float() {
		return string(d.reg())
	}
	return itype(d)
}

func binaryOp(k *ptx.Kernel, op string, d DType, x, y ptx.Reg) ptx.Reg {
	t := d.reg()
	r := k.Reg(t)
	if op == "relugrad" { // y where x > 0 (not NaN), else 0
		p := k.Reg(ptx.Pred)
		k.Op("setp.gt.%s %s, %s, %s", cmpType(d), p, x, ptx.Imm(t, 0))
		k.Op("selp.%s %s, %s, %s, %s", t, r, y, ptx.Imm(t, 0), p)
		return r
	}
	if d.float() {
		if slices.Contains(UnitBinaryOps, op) {
			return unitBinaryOp(k, op, d, x, y)
		}
		switch op {
		case "add", "sub", "mul", "div":
			k.Op("%s.rn.%s %s, %s, %s", op, t, r, x, y)
		case "addrelu": // the sum where > 0 or NaN, else +0 (relu's rule)
			p := k.Reg(ptx.Pred)
			k.Op("add.rn.%s %s, %s, %s", t, r, x, y)
			k.Op("setp.gtu.%s %s, %s, %s", t, p, r, ptx.Imm(t, 0))
			k.Op("selp.%s %s, %s, %s, %s", t, r, r, ptx.Imm(t, 0), p)
		case "max", "min":
			// PTX max/min return the number when one operand is NaN; the
			// CPU's propagate NaN: x+y is NaN then.
			nan, sum := k.Reg(ptx.Pred), k.Reg(t)
			k.Op("%s.%s %s, %s, %s", op, t, r, x, y)
			k.Op("setp.nan.%s %s, %s, %s", t, nan, x, y)
			k.Op("add.rn.%s %s, %s, %s", t, sum, x, y)
			k.Op("selp.%s %s, %s, %s, %s", t, r, sum, r, nan)
		case "rem":
			fmod(k, d, x, y, r)
		case "pow":
			return inF64x2(k, d, x, y, fm.pow)
		case "atan2":
			return inF64x2(k, d, x, y, fm.atan2)
		case "hypot":
			return inF64x2(k, d, x, y, fm.hypot)
		case "logaddexp":
			return inF64x2(k, d, x, y, fm.logaddexp)
		case "zeta":
			return inF64x2(k, d, x, y, fm.zeta)
		case "polygamma":
			return inF64x2(k, d, x, y, fm.polygamma)
		case "igamma", "igammac":
			return inF64x2(k, d, x, y, func(m fm, a, x ptx.Reg) ptx.Reg { return m.igamma(a, x, op == "igammac") })
		case "erfcgrad", "erfcxgrad", "ndtrgrad", "logndtrgrad", "ndtrigrad":
			return inF64x2(k, d, x, y, func(m fm, x, dy ptx.Reg) ptx.Reg { return m.mul(dy, normalGrads[op](m, x)) })
		case "gelugrad":
			if d == F32 { // and the half types, computing in it
				return geluGrad32(k, x, y)
			}
			return inF64x2(k, d, x, y, func(m fm, x, y ptx.Reg) ptx.Reg { return m.gelugrad(x, y, true) })
		case "gelutanhgrad":
			if d == F32 { // and the half types, computing in it
				return geluTanhGrad32(k, x, y)
			}
			return inF64x2(k, d, x, y, fm.gelutanhgrad)
		case "tanhgrad", "sigmoidgrad":
			// From the output x and the gradient y, rounded at each step as
			// the CPU's: y·(1 - x·x) and y·x·(1 - x).
			one, u := ptx.Imm(t, 1), k.Reg(t)
			if op == "tanhgrad" {
				k.Op("mul.rn.%s %s, %s, %s", t, u, x, x)
				k.Op("sub.rn.%s %s, %s, %s", t, u, one, u)
				k.Op("mul.rn.%s %s, %s, %s", t, r, y, u)
			} else {
				k.Op("sub.rn.%s %s, %s, %s", t, u, one, x)
				k.Op("mul.rn.%s %s, %s, %s", t, r, y, x)
				k.Op("mul.rn.%s %s, %s, %s", t, r, r, u)
			}
		default:
			panic("kernels: float binary op " + op)
		}
		return r
	}
	it := itype(d)
	switch op {
	case "add", "sub":
		k.Op("%s.%s %s, %s, %s", op, it, r, x, y)
	case "mul":
		k.Op("mul.lo.%s %s, %s, %s", it, r, x, y)
	case "max", "min":
		k.Op("%s.%s %s, %s, %s", op, it, r, x, y)
	case "div", "rem":
		// By zero: -1 (all bits set) for div, the dividend for rem.
		zero, done := k.Reg(ptx.Pred), k.Label("by0")
		k.Op("setp.eq.%s %s, %s, 0", it, zero, y)
		if op == "div" {
			all := "-1"
			if d == U8 {
				all = "255"
			}
			k.Op("mov.%s %s, %s", it, r, all)
		} else {
			k.Op("mov.%s %s, %s", bits(t), r, x)
		}
		k.Op("@%s bra %s", zero, done)
		k.Op("%s.%s %s, %s, %s", op, it, r, x, y)
		k.Place(done)
	case "pow":
		intPow(k, d, x, y, r)
	default:
		panic("kernels: integer binary op " + op)
	}
	return r
}

func bits(t ptx.Type) string {
	if t.Size() == 8 {
		return "b64"
	}
	return "b32"
}

// fmod sets r to C's fmod(x, y), exactly: |x| reduced by |y| times powers
// of two, largest first (each subtraction is exact, Sterbenz's lemma), the
// sign of x kept; NaN for y = 0, an infinite x or a NaN; x for an
// infinite y.
func fmod(k *ptx.Kernel, d DType, x, y, r ptx.Reg) {
	t := d.reg()
	ax, ay, tt, h := k.Reg(t), k.Reg(t), k.Reg(t), k.Reg(t)
	p := k.Reg(ptx.Pred)
	nan := ptx.Imm(t, math.NaN())
	inf := ptx.Imm(t, math.Inf(1))
	done, grow, grown, loop, next := k.Label("fmod_done"), k.Label("fmod_grow"), k.Label("fmod_grown"), k.Label("fmod_loop"), k.Label("fmod_next")
	k.Op("abs.%s %s, %s", t, ax, x)
	k.Op("abs.%s %s, %s", t, ay, y)
	k.Op("mov.%s %s, %s", t, r, nan)
	// NaN operands, y = 0 or x infinite: NaN.
	k.Op("setp.nan.%s %s, %s, %s", t, p, x, y)
	k.Op("@%s bra %s", p, done)
	k.Op("setp.eq.%s %s, %s, %s", t, p, ay, ptx.Imm(t, 0))
	k.Op("@%s bra %s", p, done)
	k.Op("setp.eq.%s %s, %s, %s", t, p, ax, inf)
	k.Op("@%s bra %s", p, done)
	// |x| < |y| (y infinite included): x.
	k.Op("mov.%s %s, %s", t, r, x)
	k.Op("setp.lt.%s %s, %s, %s", t, p, ax, ay)
	k.Op("@%s bra %s", p, done)
	// tt: the largest |y|·2^k with tt <= |x|.
	k.Op("mov.%s %s, %s", t, tt, ay)
	k.Place(grow)
	k.Op("add.rn.%s %s, %s, %s", t, h, tt, tt)
	k.Op("setp.gt.%s %s, %s, %s", t, p, h, ax)
	k.Op("@%s bra %s", p, grown)
	k.Op("mov.%s %s, %s", t, tt, h)
	k.Op("bra.uni %s", grow)
	k.Place(grown)
	k.Place(loop)
	k.Op("setp.lt.%s %s, %s, %s", t, p, ax, tt)
	k.Op("@%s bra %s", p, next)
	k.Op("sub.rn.%s %s, %s, %s", t, ax, ax, tt)
	k.Place(next)
	k.Op("setp.eq.%s %s, %s, %s", t, p, tt, ay)
	k.Op("@%s bra %s", p, fmt.Sprint(done+"_sign"))
	k.Op("mul.rn.%s %s, %s, %s", t, tt, tt, ptx.Imm(t, 0.5))
	k.Op("bra.uni %s", loop)
	k.Place(done + "_sign")
	k.Op("copysign.%s %s, %s, %s", t, r, x, ax)
	k.Place(done)
}

// intPow sets r to x^y by squaring; a negative exponent gives 0 unless
// |x| is 1 (the CPU's rule).
func intPow(k *ptx.Kernel, d DType, x, y, r ptx.Reg) {
	t := d.reg()
	it := itype(d)
	base, e, bit := k.Reg(t), k.Reg(t), k.Reg(t)
	p := k.Reg(ptx.Pred)
	loop, skip, done, positive, notOne := k.Label("pow_loop"), k.Label("pow_skip"), k.Label("pow_done"), k.Label("pow_pos"), k.Label("pow_not1")
	k.Op("mov.%s %s, 1", it, r)
	k.Op("mov.%s %s, %s", bits(t), base, x)
	k.Op("mov.%s %s, %s", bits(t), e, y)
	if d != U8 {
		k.Op("setp.ge.%s %s, %s, 0", it, p, e)
		k.Op("@%s bra %s", p, positive)
		// Negative exponent: 1 for x = 1, ±1 for x = -1, else 0.
		k.Op("setp.eq.%s %s, %s, 1", it, p, base)
		k.Op("@%s bra %s", p, done)
		k.Op("mov.%s %s, 0", it, r)
		k.Op("setp.ne.%s %s, %s, -1", it, p, base)
		k.Op("@%s bra %s", p, notOne)
		k.Op("and.%s %s, %s, 1", bits(t), bit, e)
		k.Op("setp.eq.%s %s, %s, 0", it, p, bit)
		k.Op("selp.%s %s, 1, -1, %s", it, r, p)
		k.Place(notOne)
		k.Op("bra.uni %s", done)
	}
	k.Place(positive)
	k.Place(loop)
	k.Op("setp.eq.%s %s, %s, 0", it, p, e)
	k.Op("@%s bra %s", p, done)
	k.Op("and.%s %s, %s, 1", bits(t), bit, e)
	k.Op("setp.eq.%s %s, %s, 0", it, p, bit)
	k.Op("@%s bra %s", p, skip)
	k.Op("mul.lo.%s %s, %s, %s", it, r, r, base)
	k.Place(skip)
	k.Op("mul.lo.%s %s, %s, %s", it, base, base, base)
	if d == U8 {
		k.Op("and.b32 %s, %s, 255", base, base)
		k.Op("and.b32 %s, %s, 255", r, r)
	}
	k.Op("shr.%s %s, %s, 1", it, e, e)
	k.Op("bra.uni %s", loop)
	k.Place(done)
}
