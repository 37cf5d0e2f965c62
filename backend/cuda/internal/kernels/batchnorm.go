package kernels

import (
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// Batch normalization kernels (ops/batchnorm.go), x viewed as [outer, C,
// inner] with the features C in the middle, in float64. The sums per
// feature are folded in two steps whose order the shapes alone fix: the
// sums kernels give a block (cols) or a warp (planes) to each part of a
// feature's elements and write the part's two sums to partial [2, parts,
// C], which the reduce kernels fold over the parts into sums [2, C]; then a
// finishing kernel, a thread a feature, writes what follows from them. A
// coefficient table coef [rows, C] carries each feature's mean, r =
// 1/√(variance + eps), γ·r, β and the input gradient's k2 and k3 between
// the kernels.
//
//   - batch_norm_sums_<mode>_cols_<dtype> (partial, x, then centres or dy
//     and coef, rows, C, chunk, parts, blocks): features last (inner 1):
//     a block for 32
//     neighbouring features and chunk rows (BNChunk), each warp's lanes
//     folding rows warp, warp+8, ... of their features (a row's features
//     one coalesced load), the first warp adding the eight warps' sums in
//     order; parts is a divisor, blocks the groups of 32 features ×
//     parts.
//   - batch_norm_sums_<mode>_planes_<dtype> (partial, x, then centres or
//     dy and coef, outer, C, inner, wmax, planes, groups, windows, parts,
//     blocks): a warp for a
//     part of a feature's planes (BNPlaneParts), reading each plane by
//     windows of 32 elements aligned to 32 (lane l the window's element
//     l where it lies in the plane: a plane whose start is off its
//     sectors costs no more sectors than its bytes fill), then a shuffle
//     butterfly; groups and parts are divisors, blocks counts the warps
//     (features × parts).
//     Modes (BNModes): stats (Σd and Σd², d = x − K, K the feature's
//     first element, which the first part keeps in centres [C] float64),
//     grad (Σdy and Σdy·(x − mean), the mean from coef row 0).
//   - batch_norm_stats_<dtype> (mean, var, coef, sums, centres, gamma,
//     beta, C, count, eps, has_beta), a thread a feature: mean = K +
//     Σd/count and variance = Σd²/count − (Σd/count)² (not below 0) into
//     the outputs and coef row 0, then r, γ·r and β (0 without has_beta)
//     into coef rows 1-3.
//   - batch_norm_coef_<dtype> (coef, mean, var, gamma, beta, C, eps,
//     has_beta): a thread a feature writes coef rows 0-3 from given
//     statistics (the backward's).
//   - batch_norm_grad_coef_<dtype> (dgamma, dbeta, coef, sums, dmean,
//     dvar, C, count): dβ = Σdy and dγ = r·Σdy·(x − mean) (0 over
//     no elements) into the outputs, k2 = (2·dvar − γr·r·dγ)/count and k3
//     = (dmean − γr·dβ)/count into coef rows 4 and 5.
//   - batch_norm_apply_<dtype> (y, x, coef, outer, C, inner, per): a
//     thread an element: y = (x − mean)·γr + β (per = C·inner, a divisor
//     as inner is: the feature of element e is e / inner mod C).
//   - batch_norm_grad_<dtype> (dx, x, dy, coef, outer, C, inner, per): dx =
//     (γr·dy + k3) + k2·(x − mean), the product rounded before the sum as
//     the CPU's is (a feature of one element gets exactly 0).

// BNChunk is the rows of a part of each feature's fold by mode in the
// cols kernels (8 warps): a thread folds 12 elements of each operand (6
// in grad mode, which reads x and dy), so that a launch has a thread for
// every 16 elements it reads, the coefficients included.
func BNChunk(mode string) int { return 12 / bnOperands[mode] * ReduceBlock / 32 }

// BNModes are the sums kernels' modes: stats (Σd and Σd², d = x − K, K
// the feature's first element: the mean and variance in one pass, their
// cancellation bounded as the data's spread about one of its own values),
// grad (Σdy and Σdy·(x − mean)); each writes two sums, bnOperands says
// what it reads.
var (
	BNModes    = []string{"stats", "grad"}
	bnOperands = map[string]int{"stats": 1, "grad": 2}
)

// The half types have the kernels that read x and dy and write y and dx
// (the sums and the elementwise passes); a half x's statistics,
// parameters and coefficients are float32's (mixed precision's norms),
// which the float32 kernels finish.
func batchNormKernels() []*ptx.Kernel {
	var out []*ptx.Kernel
	for _, d := range slices.Concat(Floats, Halves) {
		for _, mode := range BNModes {
			out = append(out, bnSumsCols(mode, d), bnSumsPlanes(mode, d))
		}
		out = append(out, bnElementwise("batch_norm_apply", d), bnElementwise("batch_norm_grad", d))
		if !d.Half() {
			out = append(out, bnFinish("batch_norm_stats", d), bnFinish("batch_norm_grad_coef", d), bnCoef(d))
		}
	}
	return out
}

// bnSumsParams declares a sums kernel's leading parameters: partial, x,
// then centres (stats mode) or dy and coef (grad mode).
func bnSumsParams(k *ptx.Kernel, mode string) (partial, x, dy, coef, centres ptx.Reg) {
	partial, x = k.ParamPtr("partial"), k.ParamPtr("x")
	if mode == "grad" {
		dy, coef = k.ParamPtr("dy"), k.ParamPtr("coef")
	} else {
		centres = k.ParamPtr("centres")
	}
	return partial, x, dy, coef, centres
}

// bnKeepCentre stores the centre mu of feature f into centres [C]
// (float64) from the thread the first part's where is true: the
// finishing kernel reads them in order.
func bnKeepCentre(k *ptx.Kernel, mode string, centres, f, p, mu ptx.Reg, where ...ptx.Reg) {
	if mode != "stats" {
		return
	}
	skip, not := k.Label("not_first"), k.Reg(ptx.Pred)
	k.Op("setp.ne.u64 %s, %s, 0", not, p)
	k.Op("@%s bra %s", not, skip)
	for _, w := range where {
		k.Op("@!%s bra %s", w, skip)
	}
	store(k, F64, k.Addr(centres, f, 8), mu)
	k.Place(skip)
}

// bnCentre is feature f's centre in a sums kernel: its mean (coef row 0)
// in grad mode, its first element x[f·inner] in stats mode (0 where x is
// empty: there is no element to read).
func bnCentre(k *ptx.Kernel, mode string, d DType, x, coef, f, inner, total ptx.Reg) ptx.Reg {
	if mode == "grad" {
		return load(k, F64, k.Addr(coef, f, 8))
	}
	m := fm{k: k}
	centre, empty, skip := zero64(m), k.Reg(ptx.Pred), k.Label("empty")
	k.Op("setp.eq.u64 %s, %s, 0", empty, total)
	k.Op("@%s bra %s", empty, skip)
	at := k.Reg(ptx.U64)
	k.Op("mul.lo.s64 %s, %s, %s", at, f, inner)
	k.Op("mov.f64 %s, %s", centre, loadWide(k, d, k.Addr(x, at, d.Size())))
	k.Place(skip)
	return centre
}

// bnTerms adds element e's terms (x at e, the feature's centre mu) to accs;
// where valid is not the zero Reg, a lane it is false for adds zeros (its
// e an element of the plane all the same, read for nothing).
func bnTerms(k *ptx.Kernel, mode string, d DType, x, dy, e, mu ptx.Reg, accs []ptx.Reg, valid ptx.Reg) {
	m := fm{k: k}
	var zero ptx.Reg
	if valid != (ptx.Reg{}) {
		zero = zero64(m)
	}
	masked := func(t ptx.Reg) ptx.Reg {
		if valid == (ptx.Reg{}) {
			return t
		}
		return m.sel(valid, t, zero)
	}
	v := loadWide(k, d, k.Addr(x, e, d.Size()))
	switch mode {
	case "stats":
		c := masked(m.sub(v, mu))
		k.Op("add.rn.f64 %s, %s, %s", accs[0], accs[0], c)
		k.Op("fma.rn.f64 %s, %s, %s, %s", accs[1], c, c, accs[1])
	case "grad":
		g := loadWide(k, d, k.Addr(dy, e, d.Size()))
		k.Op("add.rn.f64 %s, %s, %s", accs[0], accs[0], masked(g))
		k.Op("add.rn.f64 %s, %s, %s", accs[1], accs[1], masked(m.mul(g, m.sub(v, mu))))
	}
}

// bnPartialAt is the index of sum a of feature f, part p in partial [k,
// parts, C].
func bnPartialAt(k *ptx.Kernel, a int, nc, f, parts, p ptx.Reg) ptx.Reg {
	at := k.Reg(ptx.U64)
	k.Op("mul.lo.s64 %s, %s, %d", at, parts, a)
	k.Op("add.s64 %s, %s, %s", at, at, p)
	k.Op("mad.lo.s64 %s, %s, %s, %s", at, at, nc, f)
	return at
}

// newAccs is n float64 registers holding 0.
func newAccs(m fm, n int) []ptx.Reg {
	accs := make([]ptx.Reg, n)
	for i := range accs {
		accs[i] = zero64(m)
	}
	return accs
}

func bnSumsCols(mode string, d DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("batch_norm_sums", mode, "cols", string(d)))
	partial, x, dy, coef, centres := bnSumsParams(k, mode)
	rows, nc := k.Param("rows", ptx.U64), k.Param("C", ptx.U64)
	chunk := k.Param("chunk", ptx.U64)
	parts, blocks := paramDivisor(k, "parts"), k.Param("blocks", ptx.U64)
	var p ptx.Reg // the block's part
	group := func(vb ptx.Reg) ptx.Reg {
		var g ptx.Reg
		g, p = divmod(k, vb, parts)
		return g
	}
	one := k.Reg(ptx.U64)
	k.Op("mov.u64 %s, 1", one)
	eachFeatureBlock(k, blocks, 2, group, nc, func(f ptx.Reg, accs []ptx.Reg, warp, step ptx.Reg) {
		mu := bnCentre(k, mode, d, x, coef, f, one, rows)
		first := k.Reg(ptx.Pred)
		k.Op("setp.eq.u64 %s, %s, 0", first, warp)
		bnKeepCentre(k, mode, centres, f, p, mu, first)
		start, count := part(k, p, rows, chunk)
		from, end := k.Reg(ptx.U64), k.Reg(ptx.U64)
		k.Op("add.s64 %s, %s, %s", from, start, warp)
		k.Op("add.s64 %s, %s, %s", end, start, count)
		k.Loop(from, end, step, func(row ptx.Reg) {
			e := k.Reg(ptx.U64)
			k.Op("mad.lo.s64 %s, %s, %s, %s", e, row, nc, f)
			bnTerms(k, mode, d, x, dy, e, mu, accs, ptx.Reg{})
		})
	}, func(f ptx.Reg, sums []ptx.Reg) {
		for a, v := range sums {
			store(k, F64, k.Addr(partial, bnPartialAt(k, a, nc, f, parts.v, p), 8), v)
		}
	})
	return k
}

// eachFeatureBlock writes the loop of a kernel whose blocks take groups
// of 32 neighbouring features (lane l: feature 32·group + l), over
// blocks virtual blocks (grid-stride), each of the group group(block)
// gives: fold adds this lane's share into accs (n float64 sums, zero
// first; lanes past nc skip it), then the first warp's lanes add the
// eight warps' sums in order and finish runs with them, a lane a
// feature.
func eachFeatureBlock(k *ptx.Kernel, blocks ptx.Reg, n int, group func(vb ptx.Reg) ptx.Reg, nc ptx.Reg,
	fold func(f ptx.Reg, accs []ptx.Reg, warp, step ptx.Reg), finish func(f ptx.Reg, sums []ptx.Reg)) {
	const warps = ReduceBlock / 32
	m := fm{k: k}
	b := newBlockRows(k, 8*n) // [sum][warp][lane]
	lane, warp, step := k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.U64)
	k.Op("and.b64 %s, %s, 31", lane, b.tid)
	k.Op("shr.u64 %s, %s, 5", warp, b.tid)
	k.Op("mov.u64 %s, %d", step, warps)
	slot := k.Reg(ptx.U64)
	k.Op("mad.lo.s64 %s, %s, 8, %s", slot, b.tid, b.sh)
	b.eachRow(blocks, func(vb ptx.Reg) {
		g := group(vb)
		f, valid := k.Reg(ptx.U64), k.Reg(ptx.Pred)
		k.Op("mad.lo.s64 %s, %s, 32, %s", f, g, lane)
		k.Op("setp.lt.u64 %s, %s, %s", valid, f, nc)
		accs := newAccs(m, n)
		skip := k.Label("feature_lane")
		k.Op("@!%s bra %s", valid, skip)
		fold(f, accs, warp, step)
		k.Place(skip)
		for a, acc := range accs {
			k.Op("st.shared.f64 [%s+%d], %s", slot, a*ReduceBlock*8, acc)
		}
		k.Op("bar.sync 0")
		pr, done := k.Reg(ptx.Pred), k.Label("features_done")
		k.Op("setp.ne.u64 %s, %s, 0", pr, warp)
		k.Op("@%s bra %s", pr, done)
		k.Op("@!%s bra %s", valid, done)
		sums := make([]ptx.Reg, n)
		for a := range sums {
			r := k.Reg(ptx.F64)
			k.Op("ld.shared.f64 %s, [%s+%d]", r, slot, a*ReduceBlock*8)
			for w := 1; w < warps; w++ {
				v := k.Reg(ptx.F64)
				k.Op("ld.shared.f64 %s, [%s+%d]", v, slot, (a*ReduceBlock+w*32)*8)
				k.Op("add.rn.f64 %s, %s, %s", r, r, v)
			}
			sums[a] = r
		}
		finish(f, sums)
		k.Place(done)
		k.Op("bar.sync 0") // the slots are read before the next block's
	})
}

func bnSumsPlanes(mode string, d DType) *ptx.Kernel {
	const warps = ReduceBlock / 32
	k := ptx.NewKernel(Name("batch_norm_sums", mode, "planes", string(d)))
	partial, x, dy, coef, centres := bnSumsParams(k, mode)
	outer, nc, inner, wmax := k.Param("outer", ptx.U64), k.Param("C", ptx.U64), k.Param("inner", ptx.U64), k.Param("wmax", ptx.U64)
	planes, groups, windows := k.Param("planes", ptx.U64), paramDivisor(k, "groups"), k.Param("windows", ptx.U64)
	parts, blocks := paramDivisor(k, "parts"), k.Param("blocks", ptx.U64)
	m := fm{k: k}
	add := func(a, c ptx.Reg) ptx.Reg { return m.add(a, c) }
	lane, first, stride, one := k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.U64)
	for _, r := range []struct {
		reg ptx.Reg
		sr  string
	}{{lane, "tid"}, {first, "ctaid"}, {stride, "nctaid"}} {
		r32 := k.Reg(ptx.U32)
		k.Op("mov.u32 %s, %%%s.x", r32, r.sr)
		k.Op("cvt.u64.u32 %s, %s", r.reg, r32)
	}
	warp := k.Reg(ptx.U64)
	k.Op("shr.u64 %s, %s, 5", warp, lane)
	k.Op("and.b64 %s, %s, 31", lane, lane)
	k.Op("mad.lo.s64 %s, %s, %d, %s", first, first, warps, warp) // this warp's first (feature, part)
	k.Op("mul.lo.s64 %s, %s, %d", stride, stride, warps)
	k.Op("mov.u64 %s, 1", one)
	total := k.Reg(ptx.U64)
	k.Op("mul.lo.s64 %s, %s, %s", total, outer, inner)
	k.Loop(first, blocks, stride, func(vw ptx.Reg) {
		f, p := divmod(k, vw, parts)
		mu := bnCentre(k, mode, d, x, coef, f, inner, total)
		first := k.Reg(ptx.Pred)
		k.Op("setp.eq.u64 %s, %s, 0", first, lane)
		bnKeepCentre(k, mode, centres, f, p, mu, first)
		accs := newAccs(m, 2)
		// The part's planes [o0, o1) and windows [w0, w1) of each.
		pg, wg := divmod(k, p, groups)
		o0, o1, w0, w1 := k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.U64)
		k.Op("mul.lo.s64 %s, %s, %s", o0, pg, planes)
		k.Op("add.s64 %s, %s, %s", o1, o0, planes)
		k.Op("min.u64 %s, %s, %s", o1, o1, outer)
		k.Op("mul.lo.s64 %s, %s, %s", w0, wg, windows)
		k.Op("add.s64 %s, %s, %s", w1, w0, windows)
		k.Op("min.u64 %s, %s, %s", w1, w1, wmax)
		k.Loop(o0, o1, one, func(o ptx.Reg) {
			// The plane x[start, end) of feature f, read by the aligned
			// windows of 32 elements from base that meet it: lane l takes
			// element base + 32·w + l, clamped into the plane and counted
			// only where it lies there (no branch: the warp's lanes read
			// together, the clamped ones within sectors it reads anyway).
			start, last, base, wend := k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.U64)
			k.Op("mad.lo.s64 %s, %s, %s, %s", start, o, nc, f)
			k.Op("mul.lo.s64 %s, %s, %s", start, start, inner)
			k.Op("add.s64 %s, %s, %s", last, start, inner)
			k.Op("and.b64 %s, %s, -32", base, start)
			k.Op("sub.s64 %s, %s, %s", wend, last, base)
			k.Op("add.s64 %s, %s, 31", wend, wend)
			k.Op("shr.u64 %s, %s, 5", wend, wend)
			k.Op("min.u64 %s, %s, %s", wend, wend, w1)
			k.Op("sub.s64 %s, %s, 1", last, last)
			k.Op("add.s64 %s, %s, %s", base, base, lane)
			k.Loop(w0, wend, one, func(w ptx.Reg) {
				e, at, before, after := k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.Pred), k.Reg(ptx.Pred)
				k.Op("mad.lo.s64 %s, %s, 32, %s", e, w, base)
				k.Op("setp.lt.u64 %s, %s, %s", before, e, start)
				k.Op("setp.gt.u64 %s, %s, %s", after, e, last)
				k.Op("max.u64 %s, %s, %s", at, e, start)
				k.Op("min.u64 %s, %s, %s", at, at, last)
				bnTerms(k, mode, d, x, dy, at, mu, accs, m.not(m.or(before, after)))
			})
		})
		pr, skip := k.Reg(ptx.Pred), k.Label("planes_lane")
		sums := make([]ptx.Reg, len(accs))
		for a, acc := range accs {
			sums[a] = warpCombine(k, ptx.F64, acc, 32, add)
		}
		k.Op("setp.ne.u64 %s, %s, 0", pr, lane)
		k.Op("@%s bra %s", pr, skip)
		for a, v := range sums {
			store(k, F64, k.Addr(partial, bnPartialAt(k, a, nc, f, parts.v, p), 8), v)
		}
		k.Place(skip)
	})
	return k
}

// BNPlaneParts is how the planes kernels split each feature's planes (o,
// f) of inner elements for mode: each plane read by at most wmax aligned
// windows of 32 elements, a part takes planes of them (small planes) or
// windows of one plane (large ones, groups parts a plane), about 12
// elements a lane (6 in grad mode); parts is the parts a feature.
func BNPlaneParts(mode string, outer, inner int) (wmax, planes, groups, windows, parts int) {
	wmax = (inner + 62) / 32
	each := 12 / bnOperands[mode]
	if wmax <= each {
		planes, groups, windows = max(1, each/wmax), 1, wmax
	} else {
		planes, groups = 1, (wmax+each-1)/each
		windows = (wmax + groups - 1) / groups
	}
	return wmax, planes, groups, windows, max(1, (outer+planes-1)/planes*groups)
}

// bnFinish writes the finishing kernels: a thread a feature reads its
// sums (sums [k, C], the parts' sums folded by the reduce kernels) and
// writes what follows.
func bnFinish(kind string, d DType) *ptx.Kernel {
	k := ptx.NewKernel(Name(kind, string(d)))
	var out, out2, gamma, beta, dmean, dvar ptx.Reg
	var centres ptx.Reg
	switch kind {
	case "batch_norm_stats":
		out, out2 = k.ParamPtr("mean"), k.ParamPtr("var")
	case "batch_norm_grad_coef":
		out, out2 = k.ParamPtr("dgamma"), k.ParamPtr("dbeta")
	}
	coef, sumsAt := k.ParamPtr("coef"), k.ParamPtr("sums")
	switch kind {
	case "batch_norm_stats":
		centres, gamma, beta = k.ParamPtr("centres"), k.ParamPtr("gamma"), k.ParamPtr("beta")
	case "batch_norm_grad_coef":
		dmean, dvar = k.ParamPtr("dmean"), k.ParamPtr("dvar")
	}
	nc, count := k.Param("C", ptx.U64), k.Param("count", ptx.F64)
	var eps, hasBeta ptx.Reg
	if kind == "batch_norm_stats" {
		eps, hasBeta = k.Param("eps", ptx.F64), k.Param("has_beta", ptx.U32)
	}
	m := fm{k: k}
	k.GridStride(nc, func(f ptx.Reg) {
		put := func(i int, v ptx.Reg) { store(k, F64, k.Addr(coef, coefAt(k, nc, i, f), 8), v) }
		row := func(i int) ptx.Reg { return load(k, F64, k.Addr(coef, coefAt(k, nc, i, f), 8)) }
		sum := func(a int) ptx.Reg { return load(k, F64, k.Addr(sumsAt, coefAt(k, nc, a, f), 8)) }
		switch kind {
		case "batch_norm_stats":
			// About the centre K: mean = K + Σd/M, variance = Σd²/M −
			// (Σd/M)², not below 0 (NaN for no elements, as the ops').
			shift := m.div(sum(0), count)
			mu := m.add(load(k, F64, k.Addr(centres, f, 8)), shift)
			v := m.max(m.sub(m.div(sum(1), count), m.mul(shift, shift)), zero64(m))
			nan := m.cmp("nan", shift, shift)
			v = m.sel(nan, shift, v)
			storeNarrow(k, d, k.Addr(out, f, d.Size()), mu)
			storeNarrow(k, d, k.Addr(out2, f, d.Size()), v)
			put(0, mu)
			bnScale(k, d, m, v, eps, gamma, beta, hasBeta, f, put)
		case "batch_norm_grad_coef":
			r, gr, db := row(1), row(2), sum(0)
			dg := m.mul(r, sum(1))
			empty, zero := k.Reg(ptx.Pred), zero64(m)
			k.Op("setp.eq.f64 %s, %s, %s", empty, count, zero)
			k.Op("selp.f64 %s, %s, %s, %s", dg, zero, dg, empty) // a sum of nothing, whatever r (NaN) is
			storeNarrow(k, d, k.Addr(out, f, d.Size()), dg)
			storeNarrow(k, d, k.Addr(out2, f, d.Size()), db)
			stat := func(p ptx.Reg) ptx.Reg { return loadWide(k, d, k.Addr(p, f, d.Size())) }
			put(4, m.div(m.sub(m.mul(m.c(2), stat(dvar)), m.mul(m.mul(gr, r), dg)), count))
			put(5, m.div(m.sub(stat(dmean), m.mul(gr, db)), count))
		}
	})
	return k
}

// bnScale writes coef rows 1-3 of feature f from its variance v: r, γ·r
// and β (0 without has_beta).
func bnScale(k *ptx.Kernel, d DType, m fm, v, eps, gamma, beta, hasBeta, f ptx.Reg, put func(i int, v ptx.Reg)) {
	sd := m.add(v, eps)
	k.Op("sqrt.rn.f64 %s, %s", sd, sd)
	r := m.div(m.c(1), sd)
	put(1, r)
	put(2, m.mul(loadWide(k, d, k.Addr(gamma, f, d.Size())), r))
	b := zero64(m)
	none, skip := k.Reg(ptx.Pred), k.Label("no_beta")
	k.Op("setp.eq.u32 %s, %s, 0", none, hasBeta)
	k.Op("@%s bra %s", none, skip)
	k.Op("mov.f64 %s, %s", b, loadWide(k, d, k.Addr(beta, f, d.Size())))
	k.Place(skip)
	put(3, b)
}

// bnElementwise writes the kernels of a thread an element: kind's
// operands, then (outer, C, inner, per).
func bnElementwise(kind string, d DType) *ptx.Kernel {
	k := ptx.NewKernel(Name(kind, string(d)))
	o, x := k.ParamPtr("out"), k.ParamPtr("x")
	var dy ptx.Reg
	if kind == "batch_norm_grad" {
		dy = k.ParamPtr("dy")
	}
	coef := k.ParamPtr("coef")
	outer, nc := k.Param("outer", ptx.U64), k.Param("C", ptx.U64)
	inner := paramDivisor(k, "inner")
	m := fm{k: k}
	cells(k, outer, nc, inner, func(e, _, f, _ ptx.Reg) {
		// coef row i, feature f
		row := func(i int) ptx.Reg { return load(k, F64, k.Addr(coef, coefAt(k, nc, i, f), 8)) }
		centered := m.sub(loadWide(k, d, k.Addr(x, e, d.Size())), row(0))
		var v ptx.Reg
		switch kind {
		case "batch_norm_apply":
			v = m.add(m.mul(centered, row(2)), row(3))
		case "batch_norm_grad":
			v = m.add(m.add(m.mul(row(2), loadWide(k, d, k.Addr(dy, e, d.Size()))), row(5)), m.mul(row(4), centered))
		}
		storeNarrow(k, d, k.Addr(o, e, d.Size()), v)
	})
	return k
}

// bnCoef writes batch_norm_coef_<d>.
func bnCoef(d DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("batch_norm_coef", string(d)))
	coef, mean, variance, gamma, beta := k.ParamPtr("coef"), k.ParamPtr("mean"), k.ParamPtr("var"), k.ParamPtr("gamma"), k.ParamPtr("beta")
	nc, eps, hasBeta := k.Param("C", ptx.U64), k.Param("eps", ptx.F64), k.Param("has_beta", ptx.U32)
	m := fm{k: k}
	k.GridStride(nc, func(f ptx.Reg) {
		put := func(i int, v ptx.Reg) { store(k, F64, k.Addr(coef, coefAt(k, nc, i, f), 8), v) }
		put(0, loadWide(k, d, k.Addr(mean, f, d.Size())))
		bnScale(k, d, m, loadWide(k, d, k.Addr(variance, f, d.Size())), eps, gamma, beta, hasBeta, f, put)
	})
	return k
}

// coefAt is the index of row i, feature f of a coefficient table [rows,
// C].
func coefAt(k *ptx.Kernel, nc ptx.Reg, i int, f ptx.Reg) ptx.Reg {
	at := k.Reg(ptx.U64)
	k.Op("mul.lo.s64 %s, %s, %d", at, nc, i)
	k.Op("add.s64 %s, %s, %s", at, at, f)
	return at
}
