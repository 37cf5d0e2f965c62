package kernels

import (
	"encoding/binary"
	"fmt"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// Window kernels lay an XLA window over an operand (the patches of
// convolution, ReduceWindow, SelectAndScatter). The window is the
// byte-array parameter "w" (WindowGeometry). Windows are numbered
// row-major over the window positions, taps row-major over the window.
//
//   - window_patches_<width> (out, x, pad, n, w): out[win, tap] = the
//     operand element under the tap, or *pad where the tap is on padding;
//     a thread per output element (n of them).
//   - window_scatter_<dtype> (out, dy, n, w), the adjoint: each of the n
//     operand elements sums dy[win, tap] over the taps on it, windows in
//     order (as the CPU adds them), with no atomics.
//   - window_reduce_<sum|max|min>_<dtype> (out, x, init, n, w): each of n
//     windows reduces *init and its taps in order, a tap on padding
//     counting as *init.
//   - window_select_<ge|le>_<dtype> (sel, x, n, w): for each of n windows
//     the operand offset (s64) of its first largest (ge) or smallest
//     element, a NaN winning over numbers, padding never chosen; -1 where
//     every tap is on padding.
//   - window_select_scatter_<dtype> (out, sel, src, init, n, w): each of n
//     operand elements is *init plus src[win] of the windows that
//     selected it, windows in order.
//   - window_select_gather_<width> (out, sel, dy, n): out[win] =
//     dy[sel[win]], or zero where sel is -1.
//   - window_select_put_<ge|le>_<dtype> (out, x, src, init, n, w): for
//     windows that do not overlap, SelectAndScatter in one pass over the n
//     windows, each writing its block (the elements in no window are the
//     caller's to fill).

// WindowDim is one dimension of a window laid over an operand: the
// operand's size N and stride XStride (in elements), the number of window
// positions Out, and the window's size, stride, dilations and low padding
// (negative removes).
type WindowDim struct {
	N, Out, Win, Stride, WindowDilation, PadLow, BaseDilation, XStride int
}

// The parameter's layout: the first dimension used (MaxRank - rank: the
// dimensions sit at the end, the leading unused ones of size 1), the
// number of taps, whether the narrow path applies (every index and
// position below 2^31: sizes divide through DivMagic's constants, in 32
// bits) and the taps' constants; then eight int64 fields per dimension,
// then the constants (u32 magic, u32 shift) of the six fields that index
// arithmetic divides by, per dimension.
const (
	wgFirst, wgTaps, wgNarrow, wgTapsMagic = 0, 8, 16, 24
	wgDims                                 = 32
	wgN, wgOut, wgWin                      = 0, 1, 2
	wgStride, wgWDil, wgPad                = 3, 4, 5
	wgBDil, wgXStride                      = 6, 7
	wgFields                               = 8
	wgMagic                                = wgDims + 8*wgFields*MaxRank
	// WindowGeometrySize is the parameter's size in bytes.
	WindowGeometrySize = wgMagic + 8*len(dividedFields)*MaxRank
)

// dividedFields are the fields index arithmetic divides by, in the order
// of their constants.
var dividedFields = [...]int{wgN, wgOut, wgWin, wgStride, wgWDil, wgBDil}

// magicSlot is the offset of the constants of field f of dimension d.
func magicSlot(d, f int) int {
	for i, g := range dividedFields {
		if g == f {
			return wgMagic + 8*(len(dividedFields)*d+i)
		}
	}
	panic(fmt.Sprintf("kernels: field %d is not divided by", f))
}

// WindowGeometry fills the parameter for the dimensions dims (at most
// MaxRank; a rank-0 operand is passed as one dimension of size 1).
func WindowGeometry(dims []WindowDim) []byte {
	if len(dims) > MaxRank {
		panic(fmt.Sprintf("kernels: a window of rank %d", len(dims)))
	}
	b := make([]byte, WindowGeometrySize)
	put := func(off int, v int) { binary.LittleEndian.PutUint64(b[off:], uint64(int64(v))) }
	first := MaxRank - len(dims)
	put(wgFirst, first)
	taps, windows, elems := 1, 1, 1
	narrow := true
	all := make([]WindowDim, MaxRank)
	for d := range MaxRank {
		wd := WindowDim{N: 1, Out: 1, Win: 1, Stride: 1, WindowDilation: 1, BaseDilation: 1}
		if d >= first {
			wd = dims[d-first]
		}
		all[d] = wd
		taps, windows, elems = taps*wd.Win, windows*wd.Out, elems*wd.N
		// The positions in the dilated, padded operand stay below this.
		span := wd.Out*wd.Stride + wd.Win*wd.WindowDilation + abs(wd.PadLow) + wd.N*wd.BaseDilation
		narrow = narrow && span < narrowLimit && taps*windows < narrowLimit && elems < narrowLimit
		for f, v := range []int{wd.N, wd.Out, wd.Win, wd.Stride, wd.WindowDilation, wd.PadLow, wd.BaseDilation, wd.XStride} {
			put(wgDims+8*(wgFields*d+f), v)
		}
	}
	put(wgTaps, taps)
	if narrow {
		put(wgNarrow, 1)
		putMagic(b[wgTapsMagic:], taps)
		for d, wd := range all {
			for _, f := range dividedFields {
				v := []int{wd.N, wd.Out, wd.Win, wd.Stride, wd.WindowDilation, wd.PadLow, wd.BaseDilation, wd.XStride}[f]
				putMagic(b[magicSlot(d, f):], v)
			}
		}
	}
	return b
}

// putMagic writes DivMagic's constants for v (nothing for 0, a size that
// no index is divided by).
func putMagic(b []byte, v int) {
	if v > 0 {
		m, s := DivMagic(uint32(v))
		binary.LittleEndian.PutUint32(b, m)
		binary.LittleEndian.PutUint32(b[4:], s)
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// wdiv divides by the window's fields: in 64 bits (signed where asked),
// or on the narrow path through the constants WindowGeometry stores. A
// kernel is written twice, once for each, and takes the narrow copy where
// the flag is set (the branch is uniform, once per thread).
type wdiv struct {
	k      *ptx.Kernel
	narrow bool
}

// divmod writes x / field f of dimension d and the remainder, x >= 0; the
// results are s64 registers where signed, else u64.
func (w wdiv) divmod(x ptx.Reg, d, f int, signed bool) (q, r ptx.Reg) {
	return w.divide(x, field(w.k, d, f), d, magicSlot(d, f), signed)
}

// divide is divmod by v, whose constants are at slot (d < 0: no field).
func (w wdiv) divide(x, v ptx.Reg, d, slot int, signed bool) (q, r ptx.Reg) {
	k, t, sign := w.k, ptx.U64, "u"
	if signed {
		t, sign = ptx.S64, "s"
	}
	q, r = k.Reg(t), k.Reg(t)
	if !w.narrow {
		k.Op("div.%s64 %s, %s, %s", sign, q, x, v)
		k.Op("rem.%s64 %s, %s, %s", sign, r, x, v)
		return q, r
	}
	x32, v32 := k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("cvt.u32.u64 %s, %s", x32, x)
	k.Op("cvt.u32.u64 %s, %s", v32, v)
	q32, r32 := divide32(k, x32, v32, k.LoadField32("w", slot), k.LoadField32("w", slot+4))
	k.Op("cvt.u64.u32 %s, %s", q, q32)
	k.Op("cvt.u64.u32 %s, %s", r, r32)
	return q, r
}

// divmodUnlessOne is divmod, skipped (x / 1 = x, remainder 0) where the
// field is 1, as a window's size, stride or dilation mostly is along
// some dimensions: a uniform branch costs less than the division.
func (w wdiv) divmodUnlessOne(x ptx.Reg, d, f int, signed bool) (q, r ptx.Reg) {
	k := w.k
	one, done, p := k.Label("one"), k.Label("divided"), k.Reg(ptx.Pred)
	k.Op("setp.eq.s64 %s, %s, 1", p, field(k, d, f))
	k.Op("@%s bra %s", p, one)
	q, r = w.divmod(x, d, f, signed)
	k.Op("bra.uni %s", done)
	k.Place(one)
	k.Op("mov.u64 %s, %s", q, x)
	k.Op("mov.u64 %s, 0", r)
	k.Place(done)
	return q, r
}

// bothPaths writes body for the 64-bit path and for the narrow one, and
// runs the one the geometry's flag picks.
func bothPaths(k *ptx.Kernel, body func(w wdiv)) {
	narrow, done, p := k.Label("narrow"), k.Label("paths"), k.Reg(ptx.Pred)
	k.Op("setp.ne.u64 %s, %s, 0", p, k.LoadField("w", wgNarrow))
	k.Op("@%s bra %s", p, narrow)
	body(wdiv{k: k})
	k.Op("bra.uni %s", done)
	k.Place(narrow)
	body(wdiv{k: k, narrow: true})
	k.Place(done)
}

func windowKernels() []*ptx.Kernel {
	var out []*ptx.Kernel
	for _, ct := range copyTypes {
		out = append(out, patchesKernel(ct.name, ct.t), selectGatherKernel(ct.name, ct.t))
	}
	for _, d := range Numeric {
		out = append(out, windowScatterKernel(d), selectScatterKernel(d),
			windowSelectKernel(d, true), windowSelectKernel(d, false), selectPutKernel(d, true), selectPutKernel(d, false))
		for _, kind := range []string{"sum", "max", "min"} {
			out = append(out, windowReduceKernel(kind, d))
		}
	}
	return out
}

// field reads field f of dimension d of the window parameter.
func field(k *ptx.Kernel, d, f int) ptx.Reg { return k.LoadField("w", wgDims+8*(wgFields*d+f)) }

// windowParams declares the parameters after the pointers: the element
// count and the window.
func windowParams(k *ptx.Kernel) ptx.Reg {
	n := k.Param("n", ptx.U64)
	k.ParamBytes("w", WindowGeometrySize)
	return n
}

// unused branches to label when dimension d is before the first used.
func unused(k *ptx.Kernel, first ptx.Reg, d int, label string) {
	p := k.Reg(ptx.Pred)
	k.Op("setp.gt.u64 %s, %s, %d", p, first, d)
	k.Op("@%s bra %s", p, label)
}

// falsePred returns a predicate register holding false.
func falsePred(k *ptx.Kernel) ptx.Reg {
	p, z := k.Reg(ptx.Pred), k.Reg(ptx.U64)
	k.Op("mov.u64 %s, 0", z)
	k.Op("setp.ne.u64 %s, %s, %s", p, z, z)
	return p
}

// orIf sets acc |= (a <cmp> b), compared as typ.
func orIf(k *ptx.Kernel, acc ptx.Reg, cmp, typ string, a ptx.Reg, b any) {
	p := k.Reg(ptx.Pred)
	k.Op("setp.%s.%s %s, %s, %s", cmp, typ, p, a, b)
	k.Op("or.pred %s, %s, %s", acc, acc, p)
}

// tapOffset returns the operand offset of tap t of window win and a
// predicate set when the tap is on padding (the offset is then
// meaningless).
func tapOffset(w wdiv, win, t ptx.Reg) (off, pad ptx.Reg) {
	k := w.k
	first := k.LoadField("w", wgFirst)
	off, pad = k.Reg(ptx.S64), falsePred(k)
	rw, rt := k.Reg(ptx.U64), k.Reg(ptx.U64)
	k.Op("mov.u64 %s, 0", off)
	k.Op("mov.u64 %s, %s", rw, win)
	k.Op("mov.u64 %s, %s", rt, t)
	end := k.Label("taps")
	for d := MaxRank - 1; d >= 0; d-- {
		unused(k, first, d, end)
		qt, kd := w.divmodUnlessOne(rt, d, wgWin, false)
		qw, od := w.divmod(rw, d, wgOut, false)
		k.Op("mov.u64 %s, %s", rt, qt)
		k.Op("mov.u64 %s, %s", rw, qw)
		// p = o·stride + k·dilation - low padding, in the dilated operand.
		p := k.Reg(ptx.S64)
		k.Op("mul.lo.s64 %s, %s, %s", p, od, field(k, d, wgStride))
		k.Op("mad.lo.s64 %s, %s, %s, %s", p, kd, field(k, d, wgWDil), p)
		k.Op("sub.s64 %s, %s, %s", p, p, field(k, d, wgPad))
		orIf(k, pad, "lt", "s64", p, "0")
		k.Op("max.s64 %s, %s, 0", p, p)
		q, r := w.divmodUnlessOne(p, d, wgBDil, true)
		orIf(k, pad, "ne", "s64", r, "0")
		orIf(k, pad, "ge", "s64", q, field(k, d, wgN))
		k.Op("mad.lo.s64 %s, %s, %s, %s", off, q, field(k, d, wgXStride), off)
	}
	k.Place(end)
	return off, pad
}

// eachTap runs body for each tap of window win in order, with its
// operand offset and whether it is on padding.
func eachTap(w wdiv, win ptx.Reg, body func(off, pad ptx.Reg)) {
	upTo(w.k, w.k.LoadField("w", wgTaps), func(t ptx.Reg) { body(tapOffset(w, win, t)) })
}

// windowsOver runs body(win, t) for each tap t of a window win that lies
// on operand element e, windows in increasing order. Along dimension d
// the element sits at P = i·base dilation + low padding of the dilated,
// padded operand, and tap k of window o covers it when o·stride +
// k·dilation = P: k runs over [lo, hi] (o within [0, out)), taking the
// k whose remainder divides by the stride. Taps walk backwards, so that
// the windows (o falls as k rises) go forwards.
func windowsOver(w wdiv, e ptx.Reg, body func(win, t ptx.Reg)) {
	k := w.k
	first := k.LoadField("w", wgFirst)
	var pos, lo, hi, cur [MaxRank]ptx.Reg
	for d := range MaxRank {
		pos[d], lo[d], hi[d], cur[d] = k.Reg(ptx.S64), k.Reg(ptx.S64), k.Reg(ptx.S64), k.Reg(ptx.S64)
		for _, r := range []ptx.Reg{pos[d], lo[d], hi[d]} {
			k.Op("mov.u64 %s, 0", r)
		}
	}
	none, rem := falsePred(k), k.Reg(ptx.U64)
	k.Op("mov.u64 %s, %s", rem, e)
	split, done := k.Label("split"), k.Label("windows")
	for d := MaxRank - 1; d >= 0; d-- {
		unused(k, first, d, split)
		q, i := w.divmod(rem, d, wgN, false)
		k.Op("mov.u64 %s, %s", rem, q)
		k.Op("mad.lo.s64 %s, %s, %s, %s", pos[d], i, field(k, d, wgBDil), field(k, d, wgPad))
		orIf(k, none, "lt", "s64", pos[d], "0")
		wd, p := field(k, d, wgWDil), k.Reg(ptx.S64)
		k.Op("max.s64 %s, %s, 0", p, pos[d])
		qh, _ := w.divmodUnlessOne(p, d, wgWDil, true)
		k.Op("mov.s64 %s, %s", hi[d], qh)
		last := k.Reg(ptx.S64)
		k.Op("sub.s64 %s, %s, 1", last, field(k, d, wgWin))
		k.Op("min.s64 %s, %s, %s", hi[d], hi[d], last)
		// lo = ceil(max(P - (out-1)·stride, 0) / dilation)
		num := k.Reg(ptx.S64)
		k.Op("sub.s64 %s, %s, 1", num, field(k, d, wgOut))
		k.Op("mul.lo.s64 %s, %s, %s", num, num, field(k, d, wgStride))
		k.Op("sub.s64 %s, %s, %s", num, pos[d], num)
		k.Op("max.s64 %s, %s, 0", num, num)
		k.Op("add.s64 %s, %s, %s", num, num, wd)
		k.Op("sub.s64 %s, %s, 1", num, num)
		ql, _ := w.divmodUnlessOne(num, d, wgWDil, true)
		k.Op("mov.s64 %s, %s", lo[d], ql)
		orIf(k, none, "gt", "s64", lo[d], hi[d])
	}
	k.Place(split)
	k.Op("@%s bra %s", none, done)
	for d := range MaxRank {
		k.Op("mov.u64 %s, %s", cur[d], hi[d])
	}
	top := k.Label("window")
	k.Place(top)
	// The window of the current taps, if every remainder divides.
	skip, misses := k.Label("skip"), k.Reg(ptx.Pred)
	win, t := k.Reg(ptx.U64), k.Reg(ptx.U64)
	k.Op("mov.u64 %s, 0", win)
	k.Op("mov.u64 %s, 0", t)
	for d := range MaxRank {
		next := k.Label("dim")
		unused(k, first, d, next)
		diff := k.Reg(ptx.S64)
		k.Op("mul.lo.s64 %s, %s, %s", diff, cur[d], field(k, d, wgWDil))
		k.Op("sub.s64 %s, %s, %s", diff, pos[d], diff) // >= 0: cur <= hi
		o, r := w.divmodUnlessOne(diff, d, wgStride, true)
		k.Op("setp.ne.s64 %s, %s, 0", misses, r)
		k.Op("@%s bra %s", misses, skip)
		k.Op("mad.lo.s64 %s, %s, %s, %s", win, win, field(k, d, wgOut), o)
		k.Op("mad.lo.s64 %s, %s, %s, %s", t, t, field(k, d, wgWin), cur[d])
		k.Place(next)
	}
	body(win, t)
	k.Place(skip)
	// The previous taps, last dimension fastest.
	for d := MaxRank - 1; d >= 0; d-- {
		unused(k, first, d, done)
		more := k.Reg(ptx.Pred)
		k.Op("setp.gt.s64 %s, %s, %s", more, cur[d], lo[d])
		k.Op("@%s sub.s64 %s, %s, 1", more, cur[d], cur[d])
		k.Op("@%s bra %s", more, top)
		k.Op("mov.u64 %s, %s", cur[d], hi[d])
	}
	k.Place(done)
}

func patchesKernel(width string, t ptx.Type) *ptx.Kernel {
	k := ptx.NewKernel(Name("window_patches", width))
	o, x, pv := k.ParamPtr("out"), k.ParamPtr("x"), k.ParamPtr("pad")
	n := windowParams(k)
	taps := k.LoadField("w", wgTaps)
	bothPaths(k, func(w wdiv) {
		k.GridStride(n, func(e ptx.Reg) {
			win, tap := w.divide(e, taps, -1, wgTapsMagic, false)
			off, pad := tapOffset(w, win, tap)
			src, at := k.Reg(ptx.U64), k.Addr(x, off, t.Size())
			k.Op("selp.u64 %s, %s, %s, %s", src, pv, at, pad)
			k.Store(t, k.Addr(o, e, t.Size()), k.Load(t, src))
		})
	})
	return k
}

func windowScatterKernel(d DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("window_scatter", string(d)))
	o, dy := k.ParamPtr("out"), k.ParamPtr("dy")
	n := windowParams(k)
	taps := k.LoadField("w", wgTaps)
	bothPaths(k, func(w wdiv) {
		k.GridStride(n, func(e ptx.Reg) {
			acc := k.Reg(d.reg())
			k.Op("mov.%s %s, %s", bits(d.reg()), acc, ptx.Imm(d.reg(), 0))
			windowsOver(w, e, func(win, t ptx.Reg) {
				at := k.Reg(ptx.U64)
				k.Op("mad.lo.s64 %s, %s, %s, %s", at, win, taps, t)
				k.Op("mov.%s %s, %s", bits(d.reg()), acc, binaryOp(k, "add", d, acc, load(k, d, k.Addr(dy, at, d.Size()))))
			})
			store(k, d, k.Addr(o, e, d.Size()), acc)
		})
	})
	return k
}

func windowReduceKernel(kind string, d DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("window_reduce", kind, string(d)))
	o, x, ip := k.ParamPtr("out"), k.ParamPtr("x"), k.ParamPtr("init")
	n := windowParams(k)
	op := map[string]string{"sum": "add", "max": "max", "min": "min"}[kind]
	bothPaths(k, func(w wdiv) {
		k.GridStride(n, func(win ptx.Reg) {
			init := load(k, d, ip)
			acc := k.Reg(d.reg())
			k.Op("mov.%s %s, %s", bits(d.reg()), acc, init)
			eachTap(w, win, func(off, pad ptx.Reg) {
				v, inside := k.Reg(d.reg()), k.Label("inside")
				k.Op("mov.%s %s, %s", bits(d.reg()), v, init)
				k.Op("@%s bra %s", pad, inside)
				k.Op("ld.global.%s %s, [%s]", d.mem(), v, k.Addr(x, off, d.Size()))
				k.Place(inside)
				k.Op("mov.%s %s, %s", bits(d.reg()), acc, binaryOp(k, op, d, acc, v))
			})
			store(k, d, k.Addr(o, win, d.Size()), acc)
		})
	})
	return k
}

func windowSelectKernel(d DType, ge bool) *ptx.Kernel {
	k := ptx.NewKernel(Name("window_select", selName(ge), string(d)))
	so, x := k.ParamPtr("sel"), k.ParamPtr("x")
	n := windowParams(k)
	bothPaths(k, func(w wdiv) {
		k.GridStride(n, func(win ptx.Reg) {
			k.Store(ptx.S64, k.Addr(so, win, 8), selectOf(w, d, ge, x, win))
		})
	})
	return k
}

func selName(ge bool) string {
	if ge {
		return "ge"
	}
	return "le"
}

// selectOf returns the operand offset (s64) of window win's first largest
// (ge) or smallest element of x, a NaN winning over numbers, padding never
// chosen; -1 where every tap is on padding.
func selectOf(w wdiv, d DType, ge bool, x, win ptx.Reg) ptx.Reg {
	k := w.k
	cmp := map[bool]string{true: "gt", false: "lt"}[ge]
	at, best := k.Reg(ptx.S64), k.Reg(d.reg())
	k.Op("mov.s64 %s, -1", at)
	k.Op("mov.%s %s, %s", bits(d.reg()), best, ptx.Imm(d.reg(), 0))
	eachTap(w, win, func(off, pad ptx.Reg) {
		next, take := k.Label("tap"), k.Label("take")
		k.Op("@%s bra %s", pad, next)
		v := load(k, d, k.Addr(x, off, d.Size()))
		p := k.Reg(ptx.Pred)
		k.Op("setp.lt.s64 %s, %s, 0", p, at) // the first tap inside
		k.Op("@%s bra %s", p, take)
		k.Op("setp.%s.%s %s, %s, %s", cmp, cmpType(d), p, v, best)
		if d.float() { // or v is the first NaN
			vn, bn := k.Reg(ptx.Pred), k.Reg(ptx.Pred)
			k.Op("setp.nan.%s %s, %s, %s", d.reg(), vn, v, v)
			k.Op("setp.num.%s %s, %s, %s", d.reg(), bn, best, best)
			k.Op("and.pred %s, %s, %s", vn, vn, bn)
			k.Op("or.pred %s, %s, %s", p, p, vn)
		}
		k.Op("@!%s bra %s", p, next)
		k.Place(take)
		k.Op("mov.u64 %s, %s", at, off)
		k.Op("mov.%s %s, %s", bits(d.reg()), best, v)
		k.Place(next)
	})
	return at
}

// selectPutKernel writes window_select_put_<ge|le>_<dtype> (out, x, src,
// init, n, w): for windows that do not overlap (no operand element in two),
// SelectAndScatter in one pass over the n windows: each window writes its
// block of out, *init + src[win] at its chosen element and *init at its
// other taps inside the operand (the caller fills the elements in no
// window).
func selectPutKernel(d DType, ge bool) *ptx.Kernel {
	k := ptx.NewKernel(Name("window_select_put", selName(ge), string(d)))
	o, x, src, ip := k.ParamPtr("out"), k.ParamPtr("x"), k.ParamPtr("src"), k.ParamPtr("init")
	n := windowParams(k)
	bothPaths(k, func(w wdiv) {
		k.GridStride(n, func(win ptx.Reg) {
			at := selectOf(w, d, ge, x, win)
			found := k.Reg(ptx.Pred)
			k.Op("setp.ge.s64 %s, %s, 0", found, at)
			putBlock(k, d, found, at, load(k, d, ip), k.Addr(src, win, d.Size()), func(body func(pad, idx ptx.Reg)) {
				eachTap(w, win, func(off, pad ptx.Reg) { body(pad, off) })
			}, o)
		})
	})
	return k
}

func selectScatterKernel(d DType) *ptx.Kernel {
	k := ptx.NewKernel(Name("window_select_scatter", string(d)))
	o, sp, src, ip := k.ParamPtr("out"), k.ParamPtr("sel"), k.ParamPtr("src"), k.ParamPtr("init")
	n := windowParams(k)
	bothPaths(k, func(w wdiv) {
		k.GridStride(n, func(e ptx.Reg) {
			acc := load(k, d, ip)
			windowsOver(w, e, func(win, _ ptx.Reg) {
				// Every lane reads its window's value, chosen or not: a
				// warp's neighbours read whole sectors, without branching.
				chosen, p := k.Reg(ptx.Pred), k.Load(ptx.S64, k.Addr(sp, win, 8))
				sum := binaryOp(k, "add", d, acc, load(k, d, k.Addr(src, win, d.Size())))
				k.Op("setp.eq.s64 %s, %s, %s", chosen, p, e)
				k.Op("selp.%s %s, %s, %s, %s", bits(d.reg()), acc, sum, acc, chosen)
			})
			store(k, d, k.Addr(o, e, d.Size()), acc)
		})
	})
	return k
}

func selectGatherKernel(width string, t ptx.Type) *ptx.Kernel {
	k := ptx.NewKernel(Name("window_select_gather", width))
	o, sp, dy := k.ParamPtr("out"), k.ParamPtr("sel"), k.ParamPtr("dy")
	n := k.Param("n", ptx.U64)
	k.GridStride(n, func(win ptx.Reg) {
		at, v := k.Load(ptx.S64, k.Addr(sp, win, 8)), k.Reg(t)
		none, store := k.Reg(ptx.Pred), k.Label("store")
		k.Op("mov.%s %s, 0", bits(t), v)
		k.Op("setp.lt.s64 %s, %s, 0", none, at)
		k.Op("@%s bra %s", none, store)
		k.Op("ld.global.%s %s, [%s]", t, v, k.Addr(dy, at, t.Size()))
		k.Place(store)
		k.Store(t, k.Addr(o, win, t.Size()), v)
	})
	return k
}
