package kernels

import (
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// Recurrent sequence kernels (ops.LSTMSequence, ops.GRUSequence): a block
// runs every step of SeqRows batch rows, the state in shared memory,
// where a loop of steps launches a GEMM and a cell kernel each way a
// step. The block has 4·h
// threads (h at most SeqMaxWidth): in the product each owns a gate
// column j (z[b][j] = xz + Σ_k h[b][k]·u[k][j], in float64 by fused
// multiply-adds in k's order, as the CPU's kernel adds), in the cell each
// an element (b, j) of the rows' state, (tid / h, tid mod h). Steps are
// separated by barriers; u is read from global memory each step (L2 holds
// it). Float64 throughout, each step's z, h and c rounded to the dtype as
// the CPU's kernel rounds them; the half types' kernels round them to
// float32 and store their outputs as the half type, to the bit what the
// float32 kernel between the dispatch's casts gives (ops' "through
// float32"), without the casts.
//
//   - lstm_seq_<d> (ys, hT, cT, zs, hp, cp, xz, u, h0, c0, n, t, w): the
//     forward; zs, hp and cp are what the backward reads.
//   - gru_seq_<d>, gru_seq_grad_<d>: the GRU's likewise (gruSeqKernel),
//     the product over 3·h columns by the threads below 3·h.
//   - lstm_seq_grad_<d> (dz, dh0, dc0, ut, zs, cp, dys, dhT, dcT, dzs,
//     dhp, dcp, n, t, w): from the last step back, the cell's gradient
//     of an element a thread, then dH = dz·uᵀ + dhp by thread (g, k): the
//     sum over gate g's rows of uᵀ's column k for each row, the four
//     gates' sums added in order by thread (b, k).

// SeqRows is the batch rows a block of the sequence kernels runs;
// SeqMaxWidth the widest state they take (4·h threads a block, and three
// float64 arrays of SeqRows·h, SeqRows·4h and SeqRows·h: 48 KiB).
const (
	SeqRows     = 4
	SeqMaxWidth = 256
)

func rnnSequenceKernels() []*ptx.Kernel {
	var out []*ptx.Kernel
	for _, d := range slices.Concat(Floats, Halves) {
		out = append(out, lstmSeqKernel(d), lstmSeqGradKernel(d), gruSeqKernel(d), gruSeqGradKernel(d))
	}
	return out
}

// seq is a sequence kernel being written and its geometry.
type seq struct {
	k       *ptx.Kernel
	m       fm
	d       DType
	n, t, w ptx.Reg // batch rows, steps, state width (u64)
	tid     ptx.Reg // the thread, in [0, 4w)
	r0      ptx.Reg // the block's first row
	eb, ej  ptx.Reg // the thread's element of the state: row r0+eb, column ej
	ok      ptx.Reg // whether row r0+eb is in the batch
	state   ptx.Reg // the element's index in an [n w] array
}

// newSeqKernel starts kernel name_<d> of the pointer parameters ptrs
// (by name in p) then (n, t, w), and its geometry.
func newSeqKernel(name string, d DType, ptrs ...string) (*ptx.Kernel, map[string]ptx.Reg, *seq) {
	k := ptx.NewKernel(Name(name, string(d)))
	p := map[string]ptx.Reg{}
	for _, n := range ptrs {
		p[n] = k.ParamPtr(n)
	}
	return k, p, newSeq(k, d)
}

func newSeq(k *ptx.Kernel, d DType) *seq {
	k.MaxThreads(4 * SeqMaxWidth) // registers for blocks of 1024
	s := &seq{k: k, m: fm{k: k}, d: d}
	s.n, s.t, s.w = k.Param("n", ptx.U64), k.Param("t", ptx.U64), k.Param("w", ptx.U64)
	tid32, cta, w32 := k.Reg(ptx.U32), k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("mov.u32 %s, %%tid.x", tid32)
	k.Op("mov.u32 %s, %%ctaid.x", cta)
	k.Op("cvt.u32.u64 %s, %s", w32, s.w)
	eb32, ej32 := k.Reg(ptx.U32), k.Reg(ptx.U32)
	k.Op("div.u32 %s, %s, %s", eb32, tid32, w32)
	k.Op("rem.u32 %s, %s, %s", ej32, tid32, w32)
	s.tid, s.r0, s.eb, s.ej = k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.U64)
	k.Op("cvt.u64.u32 %s, %s", s.tid, tid32)
	k.Op("mul.wide.u32 %s, %s, %d", s.r0, cta, SeqRows)
	k.Op("cvt.u64.u32 %s, %s", s.eb, eb32)
	k.Op("cvt.u64.u32 %s, %s", s.ej, ej32)
	row := s.add(s.r0, s.eb)
	s.ok = k.Reg(ptx.Pred)
	k.Op("setp.lt.u64 %s, %s, %s", s.ok, row, s.n)
	s.state = s.mad(row, s.w, s.ej)
	return s
}

// loadState puts the thread's element of the [n w] array at from (0 for
// a row past the batch) at the shared address at.
func (s *seq) loadState(from, at ptx.Reg) {
	v := zero64(s.m)
	s.onlyIf(s.ok, func() { s.k.Op("mov.f64 %s, %s", v, loadWide(s.k, s.d, s.elem(from, s.state))) })
	s.stShared(at, 0, v)
}

// storeState writes the float64 at the shared address at as the
// thread's element of the [n w] array at to (rows in the batch only).
func (s *seq) storeState(at, to ptx.Reg) {
	s.onlyIf(s.ok, func() { storeNarrow(s.k, s.d, s.elem(to, s.state), s.ldShared(at, 0)) })
}

// add is a + b (u64).
func (s *seq) add(a, b ptx.Reg) ptx.Reg {
	r := s.k.Reg(ptx.U64)
	s.k.Op("add.s64 %s, %s, %s", r, a, b)
	return r
}

// mad is a·b + c (u64; b a register or an immediate).
func (s *seq) mad(a ptx.Reg, b any, c ptx.Reg) ptx.Reg {
	r := s.k.Reg(ptx.U64)
	s.k.Op("mad.lo.s64 %s, %s, %v, %s", r, a, b, c)
	return r
}

// shared declares a float64 array of SeqRows rows of cols·SeqMaxWidth
// columns, laid out [column][row] (a column's rows side by side).
func (s *seq) shared(name string, cols int) ptx.Reg {
	return s.k.Shared(name, cols*SeqMaxWidth*SeqRows*8, 16)
}

// sharedAt is the shared address of (column col, row b) of an array at
// base (b a register or a constant row).
func (s *seq) sharedAt(base, col ptx.Reg, b any) ptx.Reg {
	i := s.k.Reg(ptx.U64)
	if r, ok := b.(ptx.Reg); ok {
		s.k.Op("mad.lo.s64 %s, %s, %d, %s", i, col, SeqRows, r)
	} else {
		s.k.Op("mul.lo.s64 %s, %s, %d", i, col, SeqRows)
		s.k.Op("add.s64 %s, %s, %d", i, i, b)
	}
	return s.mad(i, 8, base)
}

// constant is a new u64 register holding v.
func (s *seq) constant(v int) ptx.Reg {
	r := s.k.Reg(ptx.U64)
	s.k.Op("mov.u64 %s, %d", r, v)
	return r
}

// elem is the global address of element i of the d array at base.
func (s *seq) elem(base, i ptx.Reg) ptx.Reg { return s.k.Addr(base, i, s.d.Size()) }

// round is the float64 v rounded to the dtype, as float64.
func (s *seq) round(v ptx.Reg) ptx.Reg {
	return widen(s.k, s.d.Compute(), narrow(s.k, s.d.Compute(), v))
}

// ldShared and stShared read and write a float64 of shared memory.
func (s *seq) ldShared(addr ptx.Reg, off int) ptx.Reg {
	r := s.k.Reg(ptx.F64)
	s.k.Op("ld.shared.f64 %s, [%s+%d]", r, addr, off)
	return r
}

// ldRows reads the SeqRows float64 rows of a shared column at addr
// (16-byte aligned), two to a load.
func (s *seq) ldRows(addr ptx.Reg) [SeqRows]ptx.Reg {
	var v [SeqRows]ptx.Reg
	for b := 0; b < SeqRows; b += 2 {
		v[b], v[b+1] = s.k.Reg(ptx.F64), s.k.Reg(ptx.F64)
		s.k.Op("ld.shared.v2.f64 {%s, %s}, [%s+%d]", v[b], v[b+1], addr, 8*b)
	}
	return v
}

func (s *seq) stShared(addr ptx.Reg, off int, v any) {
	s.k.Op("st.shared.f64 [%s+%d], %s", addr, off, v)
}

// onlyIf runs body where p holds (a branch around it).
func (s *seq) onlyIf(p ptx.Reg, body func()) {
	skip := s.k.Label("skip")
	s.k.Op("@!%s bra %s", p, skip)
	body()
	s.k.Place(skip)
}

// steps writes a loop over the steps, forward or back, body given the
// step (u64).
func (s *seq) steps(back bool, body func(step ptx.Reg)) {
	k := s.k
	i, p := k.Reg(ptx.U64), k.Reg(ptx.Pred)
	k.Op("mov.u64 %s, 0", i)
	top, done := k.Label("step"), k.Label("steps_done")
	k.Place(top)
	k.Op("setp.ge.u64 %s, %s, %s", p, i, s.t)
	k.Op("@%s bra %s", p, done)
	step := i
	if back {
		step = k.Reg(ptx.U64)
		k.Op("sub.s64 %s, %s, %s", step, s.t, i)
		k.Op("sub.s64 %s, %s, 1", step, step)
	}
	body(step)
	k.Op("add.s64 %s, %s, 1", i, i)
	k.Op("bra.uni %s", top)
	k.Place(done)
}

// product adds to acc (a float64 a row) n terms in order: the d weight
// at wAt, then stride elements on each term, times the rows' float64
// column at rows, then the next column (SeqRows·8 bytes on), by fused
// multiply-adds. The addresses advance by increments.
func (s *seq) product(acc [SeqRows]ptx.Reg, wAt, stride, rows, n ptx.Reg) {
	k := s.k
	wp, rp, step := k.Reg(ptx.U64), k.Reg(ptx.U64), k.Reg(ptx.U64)
	k.Op("mov.u64 %s, %s", wp, wAt)
	k.Op("mov.u64 %s, %s", rp, rows)
	k.Op("mul.lo.s64 %s, %s, %d", step, stride, s.d.Size())
	term := func() { // the next term, and the addresses past it
		wv := loadWide(k, s.d, wp)
		hv := s.ldRows(rp)
		for b := range SeqRows {
			k.Op("fma.rn.f64 %s, %s, %s, %s", acc[b], hv[b], wv, acc[b])
		}
		k.Op("add.s64 %s, %s, %s", wp, wp, step)
		k.Op("add.s64 %s, %s, %d", rp, rp, SeqRows*8)
	}
	// Two terms an iteration (the loop's own instructions halved), then
	// the last where n is odd.
	even := k.Reg(ptx.U64)
	k.Op("and.b64 %s, %s, -2", even, n)
	k.Loop(s.constant(0), even, s.constant(2), func(ptx.Reg) {
		term()
		term()
	})
	odd := k.Reg(ptx.Pred)
	k.Op("setp.lt.u64 %s, %s, %s", odd, even, n)
	s.onlyIf(odd, term)
}

// carryBack sets the thread's element of the state's gradient, at hAt in
// shared memory, to acc plus its share of dg·uᵀ, where dg ([gates·w]
// [rows] at dsh) holds the step's gate gradients: thread (g, k) = (eb,
// ej), g below gates, sums gate g's rows of column k of uᵀ (at ut, [gates·w
// w]: a warp's threads read a row side by side) against each row's dg;
// the partial sums, written over dg, are then added to acc in the gates'
// order by thread (b, k) = (eb, ej). Barriers between, and after.
func (s *seq) carryBack(gates int, ut, dsh, acc, hAt ptx.Reg) {
	k := s.k
	var part [SeqRows]ptx.Reg
	for b := range part {
		part[b] = zero64(s.m)
	}
	active := k.Reg(ptx.Pred)
	k.Op("setp.lt.u64 %s, %s, %s", active, s.tid, s.mad(s.w, gates, s.constant(0)))
	s.onlyIf(active, func() {
		first := s.mad(s.eb, s.w, s.constant(0)) // gate g's first row of uᵀ
		s.product(part, s.elem(ut, s.mad(first, s.w, s.ej)), s.w, s.sharedAt(dsh, first, 0), s.w)
	})
	k.Op("bar.sync 0")
	s.onlyIf(active, func() {
		mine := s.sharedAt(dsh, s.tid, 0) // partial (g, k): column g·w + k
		for b := range SeqRows {
			s.stShared(mine, 8*b, part[b])
		}
	})
	k.Op("bar.sync 0")
	for q := range gates {
		k.Op("add.rn.f64 %s, %s, %s", acc, acc, s.ldShared(s.sharedAt(dsh, s.mad(s.constant(q), s.w, s.ej), s.eb), 0))
	}
	s.stShared(hAt, 0, acc)
	k.Op("bar.sync 0")
}

// cellAt is the thread's element's index in a [n t w] array at step
// (row r0+eb, column ej), and the same row's start in a [n t g·w] array
// of g gates.
func (s *seq) cellAt(step ptx.Reg, g int) (e, gates ptx.Reg) {
	row := s.mad(s.add(s.r0, s.eb), s.t, step) // (r·t + step)
	e = s.mad(row, s.w, s.ej)
	gates = s.k.Reg(ptx.U64)
	s.k.Op("mul.lo.s64 %s, %s, %s", gates, row, s.mad(s.w, g, s.constant(0)))
	return e, gates
}

// gates returns σ(i), σ(f), tanh(g), σ(o) of the pre-activations z.
func (s *seq) gates(z [4]ptx.Reg) (i, f, g, o ptx.Reg) {
	return s.act(true, z[0]), s.act(true, z[1]), s.act(false, z[2]), s.act(true, z[3])
}

// act is σ (sigmoid) or tanh of v for the kernel's dtype (activation).
func (s *seq) act(sigmoid bool, v ptx.Reg) ptx.Reg { return activation(s.m, s.d, sigmoid, v) }

func lstmSeqKernel(d DType) *ptx.Kernel {
	k, p, s := newSeqKernel("lstm_seq", d, "ys", "hT", "cT", "zs", "hp", "cp", "xz", "u", "h0", "c0")
	m := s.m
	hsh, zsh, csh := s.shared("sh_h", 1), s.shared("sh_z", 4), s.shared("sh_c", 1)
	// The thread's element: (column ej, row eb) of hs and cs.
	hAt, cAt := s.sharedAt(hsh, s.ej, s.eb), s.sharedAt(csh, s.ej, s.eb)
	s.loadState(p["h0"], hAt)
	s.loadState(p["c0"], cAt)
	k.Op("bar.sync 0")
	w4 := k.Reg(ptx.U64)
	k.Op("shl.b64 %s, %s, 2", w4, s.w)
	zCol := s.sharedAt(zsh, s.tid, 0) // the thread's gate column's rows
	s.steps(false, func(step ptx.Reg) {
		// The product: column tid of z for each of the block's rows.
		var acc [SeqRows]ptx.Reg
		var zAt [SeqRows]ptx.Reg
		var rowOK [SeqRows]ptx.Reg
		for b := range SeqRows {
			row := s.add(s.r0, s.constant(b))
			rowOK[b] = k.Reg(ptx.Pred)
			k.Op("setp.lt.u64 %s, %s, %s", rowOK[b], row, s.n)
			zAt[b] = s.mad(s.mad(row, s.t, step), w4, s.tid)
			acc[b] = zero64(m)
			b := b
			s.onlyIf(rowOK[b], func() { k.Op("mov.f64 %s, %s", acc[b], loadWide(k, d, s.elem(p["xz"], zAt[b]))) })
		}
		s.product(acc, s.elem(p["u"], s.tid), w4, hsh, s.w)
		for b := range SeqRows {
			z := s.round(acc[b])
			s.stShared(zCol, 8*b, z)
			b := b
			s.onlyIf(rowOK[b], func() { storeNarrow(k, d, s.elem(p["zs"], zAt[b]), z) })
		}
		k.Op("bar.sync 0")
		// The cell: the thread's element (eb, ej).
		var z [4]ptx.Reg
		for q := range 4 {
			col := s.mad(s.constant(q), s.w, s.ej)
			z[q] = s.ldShared(s.sharedAt(zsh, col, s.eb), 0)
		}
		hv, cv := s.ldShared(hAt, 0), s.ldShared(cAt, 0)
		i, f, g, o := s.gates(z)
		next := m.add(m.mul(f, cv), m.mul(i, g))
		nextR, hn := s.round(next), s.round(m.mul(o, s.act(false, next)))
		s.onlyIf(s.ok, func() {
			e, _ := s.cellAt(step, 1)
			storeNarrow(k, d, s.elem(p["hp"], e), hv)
			storeNarrow(k, d, s.elem(p["cp"], e), cv)
			storeNarrow(k, d, s.elem(p["ys"], e), hn)
		})
		s.stShared(hAt, 0, hn)
		s.stShared(cAt, 0, nextR)
		k.Op("bar.sync 0")
	})
	s.storeState(hAt, p["hT"])
	s.storeState(cAt, p["cT"])
	return k
}

func lstmSeqGradKernel(d DType) *ptx.Kernel {
	k, p, s := newSeqKernel("lstm_seq_grad", d, "dz", "dh0", "dc0", "ut", "zs", "cp", "dys", "dhT", "dcT", "dzs", "dhp", "dcp")
	m := s.m
	dHsh, dzsh, dCsh := s.shared("sh_dh", 1), s.shared("sh_dz", 4), s.shared("sh_dc", 1)
	hAt, cAt := s.sharedAt(dHsh, s.ej, s.eb), s.sharedAt(dCsh, s.ej, s.eb)
	s.loadState(p["dhT"], hAt)
	s.loadState(p["dcT"], cAt)
	w4 := k.Reg(ptx.U64)
	k.Op("shl.b64 %s, %s, 2", w4, s.w)
	s.steps(true, func(step ptx.Reg) {
		// The cell's gradient: the thread's element (eb, ej); rows past
		// the batch leave zeros for the product.
		var dz [4]ptx.Reg
		for q := range 4 {
			dz[q] = zero64(m)
		}
		e, gates := s.cellAt(step, 4)
		s.onlyIf(s.ok, func() {
			var z [4]ptx.Reg
			var at [4]ptx.Reg
			for q := range 4 {
				at[q] = s.add(gates, s.mad(s.constant(q), s.w, s.ej))
				z[q] = loadWide(k, d, s.elem(p["zs"], at[q]))
			}
			cv := loadWide(k, d, s.elem(p["cp"], e))
			i, f, g, o := s.gates(z)
			tn := s.act(false, m.add(m.mul(f, cv), m.mul(i, g)))
			dh := m.add(loadWide(k, d, s.elem(p["dys"], e)), s.ldShared(hAt, 0))
			dNext := m.add(s.ldShared(cAt, 0), m.mul(m.mul(dh, o), m.sub(m.c(1), m.mul(tn, tn))))
			one := m.c(1)
			for q, v := range []ptx.Reg{
				m.mul(m.mul(dNext, g), m.mul(i, m.sub(one, i))),
				m.mul(m.mul(dNext, cv), m.mul(f, m.sub(one, f))),
				m.mul(m.mul(dNext, i), m.sub(one, m.mul(g, g))),
				m.mul(m.mul(dh, tn), m.mul(o, m.sub(one, o))),
			} {
				r := s.round(m.add(v, loadWide(k, d, s.elem(p["dzs"], at[q]))))
				k.Op("mov.f64 %s, %s", dz[q], r)
				storeNarrow(k, d, s.elem(p["dz"], at[q]), r)
			}
			s.stShared(cAt, 0, m.add(m.mul(dNext, f), loadWide(k, d, s.elem(p["dcp"], e))))
		})
		for q := range 4 {
			s.stShared(s.sharedAt(dzsh, s.mad(s.constant(q), s.w, s.ej), s.eb), 0, dz[q])
		}
		k.Op("bar.sync 0")
		acc := zero64(m)
		s.onlyIf(s.ok, func() { k.Op("mov.f64 %s, %s", acc, loadWide(k, d, s.elem(p["dhp"], e))) })
		s.carryBack(4, p["ut"], dzsh, acc, hAt)
	})
	s.storeState(hAt, p["dh0"])
	s.storeState(cAt, p["dc0"])
	return k
}

// gruSeqKernel is gru_seq_<d> (ys, hT, hps, hp, xp, u, b, h0, n, t, w):
// the GRU's forward, the block's threads below 3·h each a column of the
// recurrent terms hp = h·u + b (its sum started from b's term), then
// every thread an element of the rows' state.
func gruSeqKernel(d DType) *ptx.Kernel {
	k, p, s := newSeqKernel("gru_seq", d, "ys", "hT", "hps", "hp", "xp", "u", "b", "h0")
	m := s.m
	hsh, rsh := s.shared("sh_h", 1), s.shared("sh_r", 3)
	hAt := s.sharedAt(hsh, s.ej, s.eb)
	s.loadState(p["h0"], hAt)
	k.Op("bar.sync 0")
	w3 := s.mad(s.w, 3, s.constant(0))
	column := k.Reg(ptx.Pred) // the thread owns a column of the recurrent terms
	k.Op("setp.lt.u64 %s, %s, %s", column, s.tid, w3)
	s.steps(false, func(step ptx.Reg) {
		s.onlyIf(column, func() {
			var acc [SeqRows]ptx.Reg
			bias := loadWide(k, d, s.elem(p["b"], s.tid))
			for b := range acc {
				acc[b] = m.reg()
				k.Op("mov.f64 %s, %s", acc[b], bias)
			}
			s.product(acc, s.elem(p["u"], s.tid), w3, hsh, s.w)
			col := s.sharedAt(rsh, s.tid, 0)
			for b := range SeqRows {
				v := s.round(acc[b])
				s.stShared(col, 8*b, v)
				row := s.add(s.r0, s.constant(b))
				ok := k.Reg(ptx.Pred)
				k.Op("setp.lt.u64 %s, %s, %s", ok, row, s.n)
				s.onlyIf(ok, func() { storeNarrow(k, d, s.elem(p["hps"], s.mad(s.mad(row, s.t, step), w3, s.tid)), v) })
			}
		})
		k.Op("bar.sync 0")
		prev := s.ldShared(hAt, 0)
		next := zero64(m)
		s.onlyIf(s.ok, func() {
			e, _ := s.cellAt(step, 1)
			x, rec := s.gruTerms(p["xp"], rsh, step)
			_, _, _, v := s.gruGates(x, rec, prev)
			k.Op("mov.f64 %s, %s", next, s.round(v))
			storeNarrow(k, d, s.elem(p["hp"], e), prev)
			storeNarrow(k, d, s.elem(p["ys"], e), next)
		})
		s.stShared(hAt, 0, next)
		k.Op("bar.sync 0")
	})
	s.storeState(hAt, p["hT"])
	return k
}

// gruTerms loads the thread's element's three input terms from the [n t
// 3w] array xp at step and its three recurrent terms from the shared
// array rsh ([3w][rows]).
func (s *seq) gruTerms(xp, rsh, step ptx.Reg) (x, rec [3]ptx.Reg) {
	_, gates := s.cellAt(step, 3)
	for q := range 3 {
		col := s.mad(s.constant(q), s.w, s.ej)
		x[q] = loadWide(s.k, s.d, s.elem(xp, s.add(gates, col)))
		rec[q] = s.ldShared(s.sharedAt(rsh, col, s.eb), 0)
	}
	return x, rec
}

// gruGates returns z, r, the candidate c and the new state c + z·(h − c)
// from the input terms x, the recurrent terms rec and the state h.
func (s *seq) gruGates(x, rec [3]ptx.Reg, h ptx.Reg) (z, r, c, next ptx.Reg) {
	m := s.m
	z, r = s.act(true, m.add(x[0], rec[0])), s.act(true, m.add(x[1], rec[1]))
	c = s.act(false, m.add(x[2], m.mul(r, rec[2])))
	return z, r, c, m.add(c, m.mul(z, m.sub(h, c)))
}

// gruSeqGradKernel is gru_seq_grad_<d> (dxp, drec, dh0, xp, ut, hps, hp,
// dys, dhT, dhps, dhp, n, t, w): from the last step back, the cell's
// gradient of an element a thread (its direct term dh·z kept), then dH =
// dh·z + dhp + drec·uᵀ, the sum over gate g's rows of uᵀ's column k by
// thread (g, k) for g below 3, the gates' sums added in order by thread
// (b, k).
func gruSeqGradKernel(d DType) *ptx.Kernel {
	k, p, s := newSeqKernel("gru_seq_grad", d, "dxp", "drec", "dh0", "xp", "ut", "hps", "hp", "dys", "dhT", "dhps", "dhp")
	m := s.m
	dHsh, drsh := s.shared("sh_dh", 1), s.shared("sh_dr", 3)
	hAt := s.sharedAt(dHsh, s.ej, s.eb)
	s.loadState(p["dhT"], hAt)
	s.steps(true, func(step ptx.Reg) {
		var dr [3]ptx.Reg
		for q := range dr {
			dr[q] = zero64(m)
		}
		direct := zero64(m)
		e, gates := s.cellAt(step, 3)
		s.onlyIf(s.ok, func() {
			var x [3]ptx.Reg
			var rec [3]ptx.Reg
			var at [3]ptx.Reg
			for q := range 3 {
				at[q] = s.add(gates, s.mad(s.constant(q), s.w, s.ej))
				x[q] = loadWide(k, d, s.elem(p["xp"], at[q]))
				rec[q] = loadWide(k, d, s.elem(p["hps"], at[q]))
			}
			prev := loadWide(k, d, s.elem(p["hp"], e))
			z, r, c, _ := s.gruGates(x, rec, prev)
			dh := m.add(loadWide(k, d, s.elem(p["dys"], e)), s.ldShared(hAt, 0))
			one := m.c(1)
			dc := m.mul(m.mul(dh, m.sub(one, z)), m.sub(one, m.mul(c, c)))
			dR := m.mul(m.mul(dc, rec[2]), m.mul(r, m.sub(one, r)))
			dZ := m.mul(m.mul(dh, m.sub(prev, c)), m.mul(z, m.sub(one, z)))
			for q, v := range []ptx.Reg{dZ, dR, dc} {
				storeNarrow(k, d, s.elem(p["dxp"], at[q]), v)
			}
			for q, v := range []ptx.Reg{dZ, dR, m.mul(dc, r)} {
				rv := s.round(m.add(v, loadWide(k, d, s.elem(p["dhps"], at[q]))))
				k.Op("mov.f64 %s, %s", dr[q], rv)
				storeNarrow(k, d, s.elem(p["drec"], at[q]), rv)
			}
			k.Op("mul.rn.f64 %s, %s, %s", direct, dh, z)
		})
		for q := range 3 {
			s.stShared(s.sharedAt(drsh, s.mad(s.constant(q), s.w, s.ej), s.eb), 0, dr[q])
		}
		k.Op("bar.sync 0")
		acc := direct
		s.onlyIf(s.ok, func() { k.Op("add.rn.f64 %s, %s, %s", acc, acc, loadWide(k, d, s.elem(p["dhp"], e))) })
		s.carryBack(3, p["ut"], drsh, acc, hAt)
	})
	s.storeState(hAt, p["dh0"])
	return k
}
