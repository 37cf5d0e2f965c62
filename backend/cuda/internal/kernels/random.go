package kernels

import (
	"math"
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// Random kernels compute the tensor package's stream (tensor.RNG:
// Philox4x32-10 blocks of four words, block base + b for thread b) and
// turn it into values exactly as the host does:
//
//   - rng_uniform_f32 (out, n, key0, key1, base, lo, hi): four values per
//     block, float32(lo) + float32(hi−lo)·(w>>8)·2⁻²⁴ per word.
//   - rng_uniform_f64: two values per block, lo + (hi−lo)·u, u the top 53
//     bits of a pair of words (the first word high).
//   - rng_normal_<f32|f64> (out, n, key0, key1, base, _, _): one
//     Box-Muller pair per block from its two uniforms u, v:
//     √(−2·log(1−u))·(cos 2πv, sin 2πv).
//   - rng_bernoulli_<dtype> (out, n, key0, key1, base, p, _): two values
//     per block, 1 where the uniform is below p, else 0, for every dtype,
//     the half types too (a mixed-precision model's dropout masks).
//   - rng_bernoulli_at_<dtype> (out, n, key0, key1, at, offset, p, _):
//     rng_bernoulli's, from block at[0] + offset: a base read on the device
//     when the kernel runs (ops.RngBernoulliAt: a recorded graph's draw
//     whose counter each call sets), for every dtype, the half types too.
//
// Every operation is correctly rounded and unfused, as Go computes on
// amd64, so uniforms and Bernoulli draws are bit for bit the host's;
// normals differ by the few ulps of the logarithm, sine and cosine.

// Philox4x32's round multipliers and key increments (Salmon et al., SC
// 2011).
const (
	philoxM0, philoxM1 = 0xD2511F53, 0xCD9E8D57
	philoxW0, philoxW1 = 0x9E3779B9, 0xBB67AE85
)

func randomKernels() []*ptx.Kernel {
	out := []*ptx.Kernel{randomKernel("uniform", F32), randomKernel("uniform", F64),
		randomKernel("normal", F32), randomKernel("normal", F64)}
	for _, d := range append(slices.Clone(All), BF16, F16) {
		out = append(out, randomKernel("bernoulli", d), randomKernelOf("bernoulli", d, true))
	}
	return out
}

// oneBits is 1 in dtype d's bits (as a u32 immediate).
func oneBits(d DType) uint32 {
	switch d {
	case BF16:
		return 0x3F80
	case F16:
		return 0x3C00
	}
	return 1
}

// philox returns the four words of block ctr (64-bit) under key (k0, k1).
func philox(k *ptx.Kernel, ctr, k0, k1 ptx.Reg) [4]ptx.Reg {
	var c [4]ptx.Reg
	for i := range c {
		c[i] = k.Reg(ptx.U32)
	}
	k.Op("cvt.u32.u64 %s, %s", c[0], ctr)
	hi := k.Reg(ptx.U64)
	k.Op("shr.u64 %s, %s, 32", hi, ctr)
	k.Op("cvt.u32.u64 %s, %s", c[1], hi)
	k.Op("mov.u32 %s, 0", c[2])
	k.Op("mov.u32 %s, 0", c[3])
	key0, key1, m0, m1 := k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("mov.u32 %s, %s", key0, k0)
	k.Op("mov.u32 %s, %s", key1, k1)
	k.Op("mov.u32 %s, %d", m0, philoxM0)
	k.Op("mov.u32 %s, %d", m1, philoxM1)
	// split returns the high and low words of a·b.
	split := func(a, b ptx.Reg) (hi, lo ptx.Reg) {
		p, h := k.Reg(ptx.U64), k.Reg(ptx.U64)
		hi, lo = k.Reg(ptx.U32), k.Reg(ptx.U32)
		k.Op("mul.wide.u32 %s, %s, %s", p, a, b)
		k.Op("cvt.u32.u64 %s, %s", lo, p)
		k.Op("shr.u64 %s, %s, 32", h, p)
		k.Op("cvt.u32.u64 %s, %s", hi, h)
		return hi, lo
	}
	for range 10 {
		hi0, lo0 := split(m0, c[0])
		hi1, lo1 := split(m1, c[2])
		n0, n2 := k.Reg(ptx.U32), k.Reg(ptx.U32)
		k.Op("xor.b32 %s, %s, %s", n0, hi1, c[1])
		k.Op("xor.b32 %s, %s, %s", n0, n0, key0)
		k.Op("xor.b32 %s, %s, %s", n2, hi0, c[3])
		k.Op("xor.b32 %s, %s, %s", n2, n2, key1)
		c = [4]ptx.Reg{n0, lo1, n2, lo0}
		k.Op("add.u32 %s, %s, %d", key0, key0, philoxW0)
		k.Op("add.u32 %s, %s, %d", key1, key1, philoxW1)
	}
	return c
}

// unit64 is the float64 in [0, 1) of the top 53 bits of hi:lo.
func unit64(k *ptx.Kernel, hi, lo ptx.Reg) ptx.Reg {
	w, l := k.Reg(ptx.U64), k.Reg(ptx.U64)
	k.Op("cvt.u64.u32 %s, %s", w, hi)
	k.Op("cvt.u64.u32 %s, %s", l, lo)
	k.Op("shl.b64 %s, %s, 32", w, w)
	k.Op("or.b64 %s, %s, %s", w, w, l)
	k.Op("shr.u64 %s, %s, 11", w, w)
	u := k.Reg(ptx.F64)
	k.Op("cvt.rn.f64.u64 %s, %s", u, w)
	k.Op("mul.rn.f64 %s, %s, %s", u, u, ptx.Imm(ptx.F64, 1.0/(1<<53)))
	return u
}

// PerBlock is the number of values a thread (a block of four words) of
// rng_<dist>_<d> gives: a word per float32 uniform, two per value
// otherwise (Box-Muller: two values from two uniforms).
func PerBlock(dist string, d DType) int {
	if dist == "uniform" && d == F32 {
		return 4
	}
	return 2
}

func randomKernel(dist string, d DType) *ptx.Kernel { return randomKernelOf(dist, d, false) }

// randomKernelOf is rng_<dist>_<d>, or with at rng_<dist>_at_<d>, whose
// base is read from the device.
func randomKernelOf(dist string, d DType, at bool) *ptx.Kernel {
	name := Name("rng", dist, string(d))
	if at {
		name = Name("rng", dist+"_at", string(d))
	}
	k := ptx.NewKernel(name)
	o := k.ParamPtr("out")
	n := k.Param("n", ptx.U64)
	k0, k1 := k.Param("key0", ptx.U32), k.Param("key1", ptx.U32)
	var base ptx.Reg
	if at {
		where, offset := k.ParamPtr("at"), k.Param("offset", ptx.U64)
		base = k.Load(ptx.U64, where)
		k.Op("add.s64 %s, %s, %s", base, base, offset)
	} else {
		base = k.Param("base", ptx.U64)
	}
	a, b := k.Param("a", ptx.F64), k.Param("b", ptx.F64)
	per := PerBlock(dist, d)
	blocks := k.Reg(ptx.U64)
	k.Op("add.s64 %s, %s, %d", blocks, n, per-1)
	k.Op("div.u64 %s, %s, %d", blocks, blocks, per)
	k.GridStride(blocks, func(blk ptx.Reg) {
		ctr := k.Reg(ptx.U64)
		k.Op("add.s64 %s, %s, %s", ctr, base, blk)
		w := philox(k, ctr, k0, k1)
		m := fm{k: k}
		var vals []ptx.Reg
		switch {
		case dist == "uniform" && d == F32:
			lo, span, s64 := k.Reg(ptx.F32), k.Reg(ptx.F32), m.sub(b, a)
			k.Op("cvt.rn.f32.f64 %s, %s", lo, a)
			k.Op("cvt.rn.f32.f64 %s, %s", span, s64)
			for _, word := range w {
				top, u := k.Reg(ptx.U32), k.Reg(ptx.F32)
				k.Op("shr.u32 %s, %s, 8", top, word)
				k.Op("cvt.rn.f32.u32 %s, %s", u, top)
				k.Op("mul.rn.f32 %s, %s, %s", u, u, ptx.Imm(ptx.F32, 1.0/(1<<24)))
				k.Op("mul.rn.f32 %s, %s, %s", u, span, u)
				k.Op("add.rn.f32 %s, %s, %s", u, lo, u)
				vals = append(vals, u)
			}
		case dist == "uniform":
			span := m.sub(b, a)
			for j := 0; j < 4; j += 2 {
				vals = append(vals, m.add(a, m.mul(span, unit64(k, w[j], w[j+1]))))
			}
		case dist == "normal":
			u, v := unit64(k, w[0], w[1]), unit64(k, w[2], w[3])
			rad := m.reg()
			k.Op("sqrt.rn.f64 %s, %s", rad, m.mul(m.c(-2), m.log(m.sub(m.c(1), u))))
			theta := m.mul(m.c(2*math.Pi), v)
			for _, z := range []ptx.Reg{m.mul(rad, m.sincos(theta, true)), m.mul(rad, m.sincos(theta, false))} {
				vals = append(vals, narrow(k, d, z))
			}
		default: // bernoulli
			for j := 0; j < 4; j += 2 {
				below, one := m.cmp("lt", unit64(k, w[j], w[j+1]), a), k.Reg(d.reg())
				k.Op("selp.%s %s, %s, %s, %s", d.reg(), one, ptx.Imm(d.reg(), float64(oneBits(d))), ptx.Imm(d.reg(), 0), below)
				vals = append(vals, one)
			}
		}
		first := k.Reg(ptx.U64)
		k.Op("mul.lo.s64 %s, %s, %d", first, blk, per)
		for j, v := range vals {
			i, p, skip := k.Reg(ptx.U64), k.Reg(ptx.Pred), k.Label("tail")
			k.Op("add.s64 %s, %s, %d", i, first, j)
			k.Op("setp.ge.u64 %s, %s, %s", p, i, n)
			k.Op("@%s bra %s", p, skip)
			store(k, d, k.Addr(o, i, d.Size()), v)
			k.Place(skip)
		}
	})
	return k
}
