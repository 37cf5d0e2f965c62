package kernels

import "github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"

// argsort_merge_<dtype> (dst, src, x, outer, n, width, per, first, desc,
// segs, inner): one pass of a bottom-up merge sort of the permutations of
// columns along n, the runs of width (a power of two) merged in pairs into
// runs of 2·width, a thread per (o, segment, b) of per output positions
// (per a power of two, at most 2·width, so a segment lies in one pair).
// The thread finds where its segment starts in the two runs by a binary
// search along its diagonal (the merge path), then merges per elements,
// the left run first on ties: a stable sort, NaN last (first when
// descending), as the
// CPU's and argsort_<dtype>'s. src holds int64 indices along n, read as
// the identity where first is 1; dst likewise. A column of n elements
// takes ceil(log2 n) passes of n/per threads each, where argsort_<dtype>
// runs a column on one thread.
func argsortMergeKernel(d DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("argsort_merge", string(d)))
	dst, src, x := k.ParamPtr("dst"), k.ParamPtr("src"), k.ParamPtr("x")
	outer, n, width, per := k.Param("outer", ptx.U64), k.Param("n", ptx.U64), k.Param("width", ptx.U64), k.Param("per", ptx.U64)
	first, desc := k.Reg(ptx.Pred), k.Reg(ptx.Pred)
	k.Op("setp.ne.u64 %s, %s, 0", first, k.Param("first", ptx.U64))
	k.Op("setp.ne.u64 %s, %s, 0", desc, k.Param("desc", ptx.U64))
	segs, inner := paramDivisor(k, "segs"), paramDivisor(k, "inner")
	u64 := func() ptx.Reg { return k.Reg(ptx.U64) }
	runs := u64()
	k.Op("mul.lo.s64 %s, %s, %s", runs, outer, segs.v)
	columns(k, runs, inner, func(os, b ptx.Reg) {
		oi, s := divmod(k, os, segs)
		at := func(arr, j ptx.Reg) ptx.Reg { return k.Addr(arr, slot(k, oi, n, j, inner.v, b), 8) }
		index := func(j ptx.Reg) ptx.Reg { // src[j], or j on the first pass
			v := u64()
			k.Op("mov.u64 %s, %s", v, j)
			read := k.Label("indexed")
			k.Op("@%s bra %s", first, read)
			k.Op("mov.u64 %s, %s", v, k.Load(ptx.U64, at(src, j)))
			k.Place(read)
			return v
		}
		value := func(j ptx.Reg) ptx.Reg { return load(k, d, k.Addr(x, slot(k, oi, n, index(j), inner.v, b), d.Size())) }
		// The segment [q, q+per) ∩ [0, n), in the pair [lo, hi) whose left
		// run ends at mid.
		q, lo, mid, hi, span, end := u64(), u64(), u64(), u64(), u64(), u64()
		k.Op("mul.lo.s64 %s, %s, %s", q, s, per)
		k.Op("add.s64 %s, %s, %s", span, width, width)
		k.Op("sub.s64 %s, %s, 1", lo, span)
		k.Op("not.b64 %s, %s", lo, lo)
		k.Op("and.b64 %s, %s, %s", lo, q, lo)
		k.Op("add.s64 %s, %s, %s", mid, lo, width)
		k.Op("min.u64 %s, %s, %s", mid, mid, n)
		k.Op("add.s64 %s, %s, %s", hi, lo, span)
		k.Op("min.u64 %s, %s, %s", hi, hi, n)
		k.Op("add.s64 %s, %s, %s", end, q, per)
		k.Op("min.u64 %s, %s, %s", end, end, n)
		// The merge path: i, the left run's elements among the pair's
		// first diag outputs, is the least i in [max(0, diag-nR),
		// min(diag, nL)] whose left element sorts after (not tied with)
		// the right one it faces, right[diag-1-i].
		diag, nl, nr, a, z := u64(), u64(), u64(), u64(), u64()
		k.Op("sub.s64 %s, %s, %s", diag, q, lo)
		k.Op("sub.s64 %s, %s, %s", nl, mid, lo)
		k.Op("sub.s64 %s, %s, %s", nr, hi, mid)
		p := k.Reg(ptx.Pred)
		k.Op("sub.s64 %s, %s, %s", a, diag, nr)
		k.Op("setp.lt.s64 %s, %s, 0", p, a)
		k.Op("@%s mov.u64 %s, 0", p, a)
		k.Op("min.u64 %s, %s, %s", z, diag, nl)
		search, found := k.Label("search"), k.Label("found")
		k.Place(search)
		k.Op("setp.ge.u64 %s, %s, %s", p, a, z)
		k.Op("@%s bra %s", p, found)
		m, li, rj := u64(), u64(), u64()
		k.Op("add.s64 %s, %s, %s", m, a, z)
		k.Op("shr.u64 %s, %s, 1", m, m)
		k.Op("add.s64 %s, %s, %s", li, lo, m)
		k.Op("add.s64 %s, %s, %s", rj, mid, diag)
		k.Op("sub.s64 %s, %s, %s", rj, rj, m)
		k.Op("sub.s64 %s, %s, 1", rj, rj)
		after := sortsBefore(k, d, desc, value(rj), value(li)) // right[diag-1-m] before left[m]
		k.Op("@%s mov.u64 %s, %s", after, z, m)
		k.Op("@!%s add.s64 %s, %s, 1", after, a, m)
		k.Op("bra.uni %s", search)
		k.Place(found)
		i, j := u64(), u64()
		k.Op("add.s64 %s, %s, %s", i, lo, a)
		k.Op("add.s64 %s, %s, %s", j, mid, diag)
		k.Op("sub.s64 %s, %s, %s", j, j, a)
		mergeRuns(k, d, desc, q, end, i, j, mid, hi, n, value, index,
			func(q, v ptx.Reg) { k.Store(ptx.U64, at(dst, q), v) })
	})
	return k
}

// mergeRuns writes outputs [from, to) of the merge of the runs [i, mid)
// and [j, hi) of a column of n, advancing i and j: the left run's element
// first on ties (a stable sort). value(p) is the element at run position
// p, index(p) what is written for it, put(q, v) writes output q.
func mergeRuns(k *ptx.Kernel, d DType, desc, from, to, i, j, mid, hi, n ptx.Reg,
	value, index func(p ptx.Reg) ptx.Reg, put func(q, v ptx.Reg)) {
	last, one := k.Reg(ptx.U64), k.Reg(ptx.U64)
	k.Op("sub.s64 %s, %s, 1", last, n)
	k.Op("mov.u64 %s, 1", one)
	k.Loop(from, to, one, func(q ptx.Reg) {
		ic, jc := k.Reg(ptx.U64), k.Reg(ptx.U64) // in bounds, for the loads
		k.Op("min.u64 %s, %s, %s", ic, i, last)
		k.Op("min.u64 %s, %s, %s", jc, j, last)
		right := sortsBefore(k, d, desc, value(jc), value(ic))
		leftDone, rightLeft := k.Reg(ptx.Pred), k.Reg(ptx.Pred)
		k.Op("setp.ge.u64 %s, %s, %s", leftDone, i, mid)
		k.Op("or.pred %s, %s, %s", right, right, leftDone)
		k.Op("setp.lt.u64 %s, %s, %s", rightLeft, j, hi)
		k.Op("and.pred %s, %s, %s", right, right, rightLeft)
		at := k.Reg(ptx.U64)
		k.Op("selp.u64 %s, %s, %s, %s", at, jc, ic, right)
		put(q, index(at))
		k.Op("@%s add.s64 %s, %s, 1", right, j, j)
		k.Op("@!%s add.s64 %s, %s, 1", right, i, i)
	})
}
