package kernels

import (
	"fmt"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// Index arithmetic divides by sizes known only at run time. A division of
// 64-bit integers is a routine of some seventy instructions on NVIDIA
// GPUs, so a kernel divides by a size through constants the host computes
// once (DivMagic): a multiply-high, an add and a shift, in 32 bits, where
// every dividend is below 2^31; otherwise (tensors of 2^31 elements or
// more) it divides in 64 bits.

// narrowLimit bounds the dividends of the 32-bit path.
const narrowLimit = 1 << 31

// DivMagic returns the constants that divide a 32-bit n < 2^31 by d (1 <=
// d < 2^31) without a division: n/d = (mulhi(n, magic) + n) >> shift, as
// Granlund and Montgomery's round-up method gives them (shift the least s
// with 2^s >= d).
func DivMagic(d uint32) (magic, shift uint32) {
	if d == 0 || d >= narrowLimit {
		panic(fmt.Sprintf("kernels: DivMagic(%d) outside [1, 2^31)", d))
	}
	for uint64(1)<<shift < uint64(d) {
		shift++
	}
	m := (uint64(1)<<32)*((uint64(1)<<shift)-uint64(d))/uint64(d) + 1
	return uint32(m), shift
}

// Divisor returns what the host passes for a divisor parameter of value v
// in a kernel whose dividends are all below limit: DivMagic's constants,
// or zeros (the kernel then divides in 64 bits) where v or limit is 2^31
// or more.
func Divisor(v, limit int) (magic, shift uint32) {
	if v <= 0 || v >= narrowLimit || limit > narrowLimit {
		return 0, 0
	}
	return DivMagic(uint32(v))
}

// divisor is a divisor parameter: the value (64-bit) and Divisor's
// constants.
type divisor struct{ v, magic, shift ptx.Reg }

// paramDivisor declares divisor parameter name: name (.u64), then
// name_magic and name_shift (.u32).
func paramDivisor(k *ptx.Kernel, name string) divisor {
	return divisor{k.Param(name, ptx.U64), k.Param(name+"_magic", ptx.U32), k.Param(name+"_shift", ptx.U32)}
}

// divmod writes e / d and e % d (64-bit registers): in 32 bits through
// d's constants where the host gave them, else in 64.
func divmod(k *ptx.Kernel, e ptx.Reg, d divisor) (q, r ptx.Reg) {
	q, r = k.Reg(ptx.U64), k.Reg(ptx.U64)
	p := k.Reg(ptx.Pred)
	narrow, done := k.Label("narrow_div"), k.Label("div_done")
	k.Op("setp.ne.u32 %s, %s, 0", p, d.magic)
	k.Op("@%s bra %s", p, narrow)
	k.Op("div.u64 %s, %s, %s", q, e, d.v)
	k.Op("rem.u64 %s, %s, %s", r, e, d.v)
	k.Op("bra.uni %s", done)
	k.Place(narrow)
	e32, v32 := k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("cvt.u32.u64 %s, %s", e32, e)
	k.Op("cvt.u32.u64 %s, %s", v32, d.v)
	q32, r32 := divide32(k, e32, v32, d.magic, d.shift)
	k.Op("cvt.u64.u32 %s, %s", q, q32)
	k.Op("cvt.u64.u32 %s, %s", r, r32)
	k.Place(done)
	return q, r
}

// divide32 writes e / d and e % d for 32-bit e < 2^31 through d's
// DivMagic constants.
func divide32(k *ptx.Kernel, e, d, magic, shift ptx.Reg) (q, r ptx.Reg) {
	q, r = k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("mul.hi.u32 %s, %s, %s", q, e, magic)
	k.Op("add.u32 %s, %s, %s", q, q, e)
	k.Op("shr.u32 %s, %s, %s", q, q, shift)
	k.Op("mul.lo.u32 %s, %s, %s", r, q, d)
	k.Op("sub.u32 %s, %s, %s", r, e, r)
	return q, r
}
