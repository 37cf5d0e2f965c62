package kernels

import "github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"

// Along-axis kernels index each element separately, x viewed as [outer,
// n, inner] and the indices as [outer, K, inner]:
//
//   - take_along_<width>_<index dtype> (out, x, idx, err, outer, n, K,
//     inner): out[o,k,b] = x[o, idx[o,k,b], b], a thread per output
//     element.
//   - put_along_add_<dtype>_<index dtype> (out, idx, upd, err, outer, n,
//     K, inner), out holding base: out[o, idx[o,k,b], b] += upd[o,k,b], a
//     thread per (o, b) in k order.
//
// Both check their indices on the device (checkedIndex, index.go).
//   - arg_max_<dtype>, arg_min_<dtype> (out, x, cand, outer, n, steps,
//     chunk, chunks, inner): the first extreme along n as int64, a NaN
//     counting as the extreme (NumPy's rule, as the CPU), a thread per
//     chunk (o, j, b) of chunk steps of steps, writing out[o, j, b]; step
//     s is element s along n, or element cand[o, s, b] where cand is not
//     0 (the chunks' choices, in order, for a second pass). One chunk of
//     n steps is a column a thread.

func alongKernels() []*ptx.Kernel {
	var out []*ptx.Kernel
	for _, id := range []DType{S32, S64} {
		for _, ct := range copyTypes {
			out = append(out, takeAlongKernel(ct.name, ct.t, id))
		}
		for _, d := range Numeric {
			out = append(out, putAlongAddKernel(d, id))
		}
	}
	for _, d := range Numeric {
		out = append(out, argExtremeKernel(d, true), argExtremeKernel(d, false),
			cumulativeKernel(d, "cumsum", "add"), cumulativeKernel(d, "cumprod", "mul"), argsortKernel(d), argsortMergeKernel(d))
	}
	return out
}

// alongParams declares (outer, n, K, inner), inner a divisor.
func alongParams(k *ptx.Kernel) (outer, n, nk ptx.Reg, inner divisor) {
	return k.Param("outer", ptx.U64), k.Param("n", ptx.U64), k.Param("K", ptx.U64), paramDivisor(k, "inner")
}

// columns runs body for each (o, b) of [outer, inner], a thread each.
func columns(k *ptx.Kernel, outer ptx.Reg, inner divisor, body func(o, b ptx.Reg)) {
	cols := k.Reg(ptx.U64)
	k.Op("mul.lo.s64 %s, %s, %s", cols, outer, inner.v)
	k.GridStride(cols, func(c ptx.Reg) { body(divmod(k, c, inner)) })
}

// cells runs body for each element e = (a, b, c) of the row-major index
// space [na, nb, nc], a thread each. It declares the kernel's last
// parameter, the divisor "per" (nb·nc).
func cells(k *ptx.Kernel, na, nb ptx.Reg, nc divisor, body func(e, a, b, c ptx.Reg)) {
	per := paramDivisor(k, "per")
	total := k.Reg(ptx.U64)
	k.Op("mul.lo.s64 %s, %s, %s", total, na, per.v)
	k.GridStride(total, func(e ptx.Reg) {
		a, rest := divmod(k, e, per)
		b, c := divmod(k, rest, nc)
		body(e, a, b, c)
	})
}

// chunkBounds is where chunk j of chunk steps of n starts and ends:
// j·chunk and min((j+1)·chunk, n).
func chunkBounds(k *ptx.Kernel, j, chunk, n ptx.Reg) (first, last ptx.Reg) {
	first, last = k.Reg(ptx.U64), k.Reg(ptx.U64)
	k.Op("mul.lo.s64 %s, %s, %s", first, j, chunk)
	k.Op("add.s64 %s, %s, %s", last, first, chunk)
	k.Op("min.u64 %s, %s, %s", last, last, n)
	return first, last
}

// upTo runs body for j = 0 .. n-1 in order.
func upTo(k *ptx.Kernel, n ptx.Reg, body func(j ptx.Reg)) {
	zero, one := k.Reg(ptx.U64), k.Reg(ptx.U64)
	k.Op("mov.u64 %s, 0", zero)
	k.Op("mov.u64 %s, 1", one)
	k.Loop(zero, n, one, body)
}

func takeAlongKernel(width string, t ptx.Type, id DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("take_along", width, string(id)))
	o, x, idx, errSlot := k.ParamPtr("out"), k.ParamPtr("x"), k.ParamPtr("idx"), k.ParamPtr("err")
	outer, n, nk, inner := alongParams(k)
	cells(k, outer, nk, inner, func(e, oi, _, b ptx.Reg) {
		v, bad := checkedIndex(k, idx, id, e, n, errSlot)
		val := k.Reg(t)
		k.Op("mov.%s %s, 0", bits(t), val) // a bad index takes zero
		skip := k.Label("taken")
		k.Op("@%s bra %s", bad, skip)
		k.Op("ld.global.%s %s, [%s]", t, val, k.Addr(x, slot(k, oi, n, v, inner.v, b), t.Size()))
		k.Place(skip)
		k.Store(t, k.Addr(o, e, t.Size()), val)
	})
	return k
}

func putAlongAddKernel(d, id DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("put_along_add", string(d), string(id)))
	o, idx, u, errSlot := k.ParamPtr("out"), k.ParamPtr("idx"), k.ParamPtr("upd"), k.ParamPtr("err")
	outer, n, nk, inner := alongParams(k)
	columns(k, outer, inner, func(oi, b ptx.Reg) {
		upTo(k, nk, func(j ptx.Reg) {
			at := slot(k, oi, nk, j, inner.v, b)
			v, bad := checkedIndex(k, idx, id, at, n, errSlot)
			skip := k.Label("put")
			k.Op("@%s bra %s", bad, skip) // a bad index adds nothing
			dst := k.Addr(o, slot(k, oi, n, v, inner.v, b), d.Size())
			sum := binaryOp(k, "add", d, load(k, d, dst), load(k, d, k.Addr(u, at, d.Size())))
			store(k, d, dst, sum)
			k.Place(skip)
		})
	})
	return k
}

func argExtremeKernel(d DType, isMax bool) *ptx.Kernel {
	name := "arg_min"
	if isMax {
		name = "arg_max"
	}
	k := ptx.NewKernel(Name(name, string(d)))
	o, x, cand := k.ParamPtr("out"), k.ParamPtr("x"), k.ParamPtr("cand")
	outer, n, steps, chunk := k.Param("outer", ptx.U64), k.Param("n", ptx.U64), k.Param("steps", ptx.U64), k.Param("chunk", ptx.U64)
	chunks, inner := paramDivisor(k, "chunks"), paramDivisor(k, "inner")
	fromCand := k.Reg(ptx.Pred)
	k.Op("setp.ne.u64 %s, %s, 0", fromCand, cand)
	runs := k.Reg(ptx.U64) // (o, j) pairs
	k.Op("mul.lo.s64 %s, %s, %s", runs, outer, chunks.v)
	columns(k, runs, inner, func(oj, b ptx.Reg) {
		oi, j := divmod(k, oj, chunks)
		// position is the element along n at step s: s, or cand[o, s, b].
		position := func(s ptx.Reg) ptx.Reg {
			pos := k.Reg(ptx.U64)
			k.Op("mov.u64 %s, %s", pos, s)
			read := k.Label("placed")
			k.Op("@!%s bra %s", fromCand, read)
			k.Op("mov.u64 %s, %s", pos, k.Load(ptx.U64, k.Addr(cand, slot(k, oi, steps, s, inner.v, b), 8)))
			k.Place(read)
			return pos
		}
		first, last := chunkBounds(k, j, chunk, steps)
		best := position(first)
		bestV := load(k, d, k.Addr(x, slot(k, oi, n, best, inner.v, b), d.Size()))
		next, one := k.Reg(ptx.U64), k.Reg(ptx.U64)
		k.Op("mov.u64 %s, 1", one)
		k.Op("add.s64 %s, %s, 1", next, first)
		done := k.Label("arg_done")
		k.Loop(next, last, one, func(s ptx.Reg) {
			if d.float() { // the best is NaN: nothing beats it
				p := k.Reg(ptx.Pred)
				k.Op("setp.nan.%s %s, %s, %s", d.reg(), p, bestV, bestV)
				k.Op("@%s bra %s", p, done)
			}
			pos := position(s)
			v := load(k, d, k.Addr(x, slot(k, oi, n, pos, inner.v, b), d.Size()))
			better := k.Reg(ptx.Pred)
			cmp := map[bool]string{true: "gt", false: "lt"}[isMax]
			if d.float() {
				cmp += "u" // or unordered: v is NaN
			}
			k.Op("setp.%s.%s %s, %s, %s", cmp, cmpType(d), better, v, bestV)
			k.Op("selp.u64 %s, %s, %s, %s", best, pos, best, better)
			k.Op("selp.%s %s, %s, %s, %s", d.reg(), bestV, v, bestV, better)
		})
		k.Place(done)
		at := k.Reg(ptx.U64)
		k.Op("mad.lo.s64 %s, %s, %s, %s", at, oj, inner.v, b)
		store(k, S64, k.Addr(o, at, 8), best)
	})
	return k
}

// cumsum_<dtype> and cumprod_<dtype> (out, x, start, outer, n, chunk,
// total, chunks, inner, reverse, exclusive): running sums (op "add") or
// products ("mul") along n, a thread per chunk (o, j, b) of chunk steps of
// a column. The thread starts from start[o, j, b] (the identity where
// start is 0) and walks steps j·chunk .. min((j+1)·chunk, n)-1 in order,
// step s being element s, or n-1-s when reverse is 1; it leaves each
// element out of its own result when exclusive is 1, and where total is 1
// writes only its chunk's result, to out[o, j, b]. With one chunk (chunk
// n, chunks 1) a thread runs a whole column, as the CPU does.
func cumulativeKernel(d DType, name, op string) *ptx.Kernel {
	k := ptx.NewKernel(Name(name, string(d)))
	o, x, start := k.ParamPtr("out"), k.ParamPtr("x"), k.ParamPtr("start")
	outer, n, chunk, total := k.Param("outer", ptx.U64), k.Param("n", ptx.U64), k.Param("chunk", ptx.U64), k.Param("total", ptx.U64)
	chunks, inner := paramDivisor(k, "chunks"), paramDivisor(k, "inner")
	reverse, exclusive := k.Param("reverse", ptx.U64), k.Param("exclusive", ptx.U64)
	rev, exc, tot, from := k.Reg(ptx.Pred), k.Reg(ptx.Pred), k.Reg(ptx.Pred), k.Reg(ptx.Pred)
	k.Op("setp.ne.u64 %s, %s, 0", rev, reverse)
	k.Op("setp.ne.u64 %s, %s, 0", exc, exclusive)
	k.Op("setp.ne.u64 %s, %s, 0", tot, total)
	k.Op("setp.ne.u64 %s, %s, 0", from, start)
	identity := 0.0
	if op == "mul" {
		identity = 1
	}
	runs := k.Reg(ptx.U64) // (o, j) pairs
	k.Op("mul.lo.s64 %s, %s, %s", runs, outer, chunks.v)
	columns(k, runs, inner, func(oj, b ptx.Reg) {
		oi, j := divmod(k, oj, chunks)
		here := k.Reg(ptx.U64) // [o, j, b] in start's and the totals' layout
		k.Op("mad.lo.s64 %s, %s, %s, %s", here, oj, inner.v, b)
		acc := k.Reg(d.reg())
		mov(k, d, acc, ptx.Imm(d.reg(), identity))
		started := k.Label("started")
		k.Op("@!%s bra %s", from, started)
		mov(k, d, acc, load(k, d, k.Addr(start, here, d.Size())))
		k.Place(started)
		first, last := chunkBounds(k, j, chunk, n)
		one := k.Reg(ptx.U64)
		k.Op("mov.u64 %s, 1", one)
		k.Loop(first, last, one, func(step ptx.Reg) {
			pos, back := k.Reg(ptx.U64), k.Reg(ptx.U64)
			k.Op("sub.s64 %s, %s, %s", back, n, step)
			k.Op("sub.s64 %s, %s, 1", back, back)
			k.Op("selp.u64 %s, %s, %s, %s", pos, back, step, rev)
			at := slot(k, oi, n, pos, inner.v, b)
			next := binaryOp(k, op, d, acc, load(k, d, k.Addr(x, at, d.Size())))
			stored := k.Label("stored")
			k.Op("@%s bra %s", tot, stored)
			v := k.Reg(d.reg())
			k.Op("selp.%s %s, %s, %s, %s", d.reg(), v, acc, next, exc)
			store(k, d, k.Addr(o, at, d.Size()), v)
			k.Place(stored)
			mov(k, d, acc, next)
		})
		done := k.Label("totalled")
		k.Op("@!%s bra %s", tot, done)
		store(k, d, k.Addr(o, here, d.Size()), acc)
		k.Place(done)
	})
	return k
}

// argsort_<dtype> (out, tmp, x, outer, n, inner, desc): the stable
// permutation sorting each column along n, NaN last (first when
// descending: the ascending order reversed, as the CPU); a thread per (o, b) column runs a bottom-up merge sort between out
// and tmp (int64, the output's shape), ending in out.
func argsortKernel(d DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("argsort", string(d)))
	out, tmp, x := k.ParamPtr("out"), k.ParamPtr("tmp"), k.ParamPtr("x")
	outer, n, inner := k.Param("outer", ptx.U64), k.Param("n", ptx.U64), paramDivisor(k, "inner")
	desc := k.Reg(ptx.Pred)
	k.Op("setp.ne.u64 %s, %s, 0", desc, k.Param("desc", ptx.U64))
	u64 := func() ptx.Reg { return k.Reg(ptx.U64) }
	columns(k, outer, inner, func(oi, b ptx.Reg) {
		at := func(arr, j ptx.Reg) ptx.Reg { return k.Addr(arr, slot(k, oi, n, j, inner.v, b), 8) }
		value := func(arr, j ptx.Reg) ptx.Reg {
			return load(k, d, k.Addr(x, slot(k, oi, n, k.Load(ptx.U64, at(arr, j)), inner.v, b), d.Size()))
		}
		upTo(k, n, func(j ptx.Reg) { k.Store(ptx.U64, at(out, j), j) })
		src, dst, width := u64(), u64(), u64()
		k.Op("mov.u64 %s, %s", src, out)
		k.Op("mov.u64 %s, %s", dst, tmp)
		k.Op("mov.u64 %s, 1", width)
		p := k.Reg(ptx.Pred)
		pass, passDone := k.Label("pass"), k.Label("pass_done")
		k.Place(pass)
		k.Op("setp.ge.u64 %s, %s, %s", p, width, n)
		k.Op("@%s bra %s", p, passDone)
		zero, span := u64(), u64()
		k.Op("mov.u64 %s, 0", zero)
		k.Op("add.s64 %s, %s, %s", span, width, width)
		k.Loop(zero, n, span, func(lo ptx.Reg) {
			mid, hi, i, j := u64(), u64(), u64(), u64()
			k.Op("add.s64 %s, %s, %s", mid, lo, width)
			k.Op("min.u64 %s, %s, %s", mid, mid, n)
			k.Op("add.s64 %s, %s, %s", hi, lo, span)
			k.Op("min.u64 %s, %s, %s", hi, hi, n)
			k.Op("mov.u64 %s, %s", i, lo)
			k.Op("mov.u64 %s, %s", j, mid)
			mergeRuns(k, d, desc, lo, hi, i, j, mid, hi, n,
				func(p ptx.Reg) ptx.Reg { return value(src, p) },
				func(p ptx.Reg) ptx.Reg { return k.Load(ptx.U64, at(src, p)) },
				func(q, v ptx.Reg) { k.Store(ptx.U64, at(dst, q), v) })
		})
		swap := u64()
		k.Op("mov.u64 %s, %s", swap, src)
		k.Op("mov.u64 %s, %s", src, dst)
		k.Op("mov.u64 %s, %s", dst, swap)
		k.Op("add.s64 %s, %s, %s", width, width, width)
		k.Op("bra.uni %s", pass)
		k.Place(passDone)
		// The sorted run is in src: copy it to out when that is tmp.
		done := k.Label("sorted")
		k.Op("setp.eq.u64 %s, %s, %s", p, src, out)
		k.Op("@%s bra %s", p, done)
		upTo(k, n, func(j ptx.Reg) { k.Store(ptx.U64, at(out, j), k.Load(ptx.U64, at(tmp, j))) })
		k.Place(done)
	})
	return k
}

// sortsBefore is the predicate "a sorts strictly before b": a is not NaN
// and b is NaN or a < b; when desc, b is not NaN and a is NaN or a > b
// (the ascending order reversed: NaN first).
func sortsBefore(k *ptx.Kernel, d DType, desc, a, b ptx.Reg) ptx.Reg {
	lt, gt, r := k.Reg(ptx.Pred), k.Reg(ptx.Pred), k.Reg(ptx.Pred)
	ct := cmpType(d)
	if d.float() {
		// ltu/gtu: true when b is NaN; a NaN is then excluded below.
		k.Op("setp.ltu.%s %s, %s, %s", ct, lt, a, b)
		k.Op("setp.gtu.%s %s, %s, %s", ct, gt, a, b)
	} else {
		k.Op("setp.lt.%s %s, %s, %s", ct, lt, a, b)
		k.Op("setp.gt.%s %s, %s, %s", ct, gt, a, b)
	}
	k.Op("mov.pred %s, %s", r, lt)
	k.Op("@%s mov.pred %s, %s", desc, r, gt)
	if d.float() {
		// ltu/gtu hold where either is NaN: the one sorting first must be
		// a number ascending (a), the one sorting last descending (b).
		num, bn := k.Reg(ptx.Pred), k.Reg(ptx.Pred)
		k.Op("setp.num.%s %s, %s, %s", ct, num, a, a)
		k.Op("setp.num.%s %s, %s, %s", ct, bn, b, b)
		k.Op("@%s mov.pred %s, %s", desc, num, bn)
		k.Op("and.pred %s, %s, %s", r, r, num)
	}
	return r
}
