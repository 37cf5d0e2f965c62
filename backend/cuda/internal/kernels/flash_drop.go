package kernels

import "github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"

// dropStream is a dropped flash kernel's (a _drop twin's) view of the
// Philox stream its weights' keep bits come from, as ops.DropoutAt draws
// them (tensor.RandBernoulliAt): weight (i, j) of batch matrix bm, query
// i and key j, is element e = (bm·tq + i)·tk + j, kept where the top 53
// bits of the two words of its draw (block base + e/2, words 0-1 or 2-3
// as e is even or odd, the first high) are below thresh; a kept weight
// is multiplied by rscale, 1/(1−rate).
type dropStream struct {
	key0, key1   ptx.Reg // u32
	base, thresh ptx.Reg // u64
	rscale       ptx.Reg // f32
}

// dropParams declares the dropped kernels' trailing parameters (dkey0,
// dkey1, dat, doffset, dthresh, drscale) and finds the first block:
// *dat + doffset, or doffset where dat is 0.
func dropParams(k *ptx.Kernel) *dropStream {
	d := &dropStream{key0: k.Param("dkey0", ptx.U32), key1: k.Param("dkey1", ptx.U32)}
	at, offset := k.Param("dat", ptx.U64), k.Param("doffset", ptx.U64)
	d.thresh, d.rscale = k.Param("dthresh", ptx.U64), k.Param("drscale", ptx.F32)
	d.base = k.Reg(ptx.U64)
	has := k.Reg(ptx.Pred)
	k.Op("mov.u64 %s, 0", d.base)
	k.Op("setp.ne.u64 %s, %s, 0", has, at)
	k.Op("cvta.to.global.u64 %s, %s", at, at)
	k.Op("@%s ld.global.u64 %s, [%s]", has, d.base, at)
	k.Op("add.s64 %s, %s, %s", d.base, d.base, offset)
	return d
}

// draw is the Philox block holding element e's (u64) draw.
func (d *dropStream) draw(k *ptx.Kernel, e ptx.Reg) [4]ptx.Reg {
	ctr := k.Reg(ptx.U64)
	k.Op("shr.u64 %s, %s, 1", ctr, e)
	k.Op("add.s64 %s, %s, %s", ctr, ctr, d.base)
	return philox(k, ctr, d.key0, d.key1)
}

// keeps is whether the draw of words hi, lo (u32) keeps its weight.
func (d *dropStream) keeps(k *ptx.Kernel, hi, lo ptx.Reg) ptx.Reg {
	m, l, keep := k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.Pred)
	k.Op("cvt.u64.u32 %s, %s", m, hi)
	k.Op("cvt.u64.u32 %s, %s", l, lo)
	k.Op("shl.b64 %s, %s, 32", m, m)
	k.Op("or.b64 %s, %s, %s", m, m, l)
	k.Op("shr.u64 %s, %s, 11", m, m)
	k.Op("setp.lt.u64 %s, %s, %s", keep, m, d.thresh)
	return keep
}

// words are the two words of element e's (u64) draw, high and low: of
// its block (draw), words 0-1 where e is even, 2-3 where odd.
func (d *dropStream) words(k *ptx.Kernel, e ptx.Reg) (hi, lo ptx.Reg) {
	w := d.draw(k, e)
	odd, t := k.Reg(ptx.Pred), k.Reg(ptx.U64)
	k.Op("and.b64 %s, %s, 1", t, e)
	k.Op("setp.ne.u64 %s, %s, 0", odd, t)
	hi, lo = k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("selp.b32 %s, %s, %s, %s", hi, w[2], w[0], odd)
	k.Op("selp.b32 %s, %s, %s, %s", lo, w[3], w[1], odd)
	return hi, lo
}

// factor is weight (i, j)'s multiplier (f32) in batch matrix bm (i, j,
// bm, tq, tk u64): rscale where the stream keeps it, else 0.
func (d *dropStream) factor(k *ptx.Kernel, bm, tq, tk, i, j ptx.Reg) ptx.Reg {
	e := k.Reg(ptx.U64)
	k.Op("mad.lo.s64 %s, %s, %s, %s", e, bm, tq, i)
	k.Op("mad.lo.s64 %s, %s, %s, %s", e, e, tk, j)
	hi, lo := d.words(k, e)
	f := k.Reg(ptx.F32)
	k.Op("selp.f32 %s, %s, 0f00000000, %s", f, d.rscale, d.keeps(k, hi, lo))
	return f
}
