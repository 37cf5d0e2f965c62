package kernels

import (
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// Recurrent cell kernels (ops/rnn_cells.go), a thread per element (r, j)
// of the state [n, h], the gates' terms side by side in rows of 4h (the
// LSTM's z: i, f, g, o) or 3h (the GRU's xp and hp: z, r, n); in float64,
// rounded once (a half type through float32, as the CPU's dispatch
// computes it):
//
//   - lstm_cell_<d> (h, next, z, c, total, h): next = σ(f)·c + σ(i)·tanh(g),
//     h = σ(o)·tanh(next).
//   - lstm_cell_grad_<d> (dz, dc, z, c, dh, dnext, total, h): with t =
//     tanh(next) recomputed and dC = dnext + dh·σ(o)·(1 − t²), the gates'
//     gradients dC·tanh(g)·σ'(i), dC·c·σ'(f), dC·σ(i)·(1 − tanh²(g)),
//     dh·t·σ'(o), and dc = dC·σ(f).
//   - gru_cell_<d> (out, xp, hp, h, total, h): h' = n + z·(h − n).
//   - gru_cell_grad_<d> (dxp, dhp, dh, xp, hp, h, dout, total, h): dn =
//     dh'·(1 − z)·(1 − n²), dr = dn·hp_n·σ'(r), dz = dh'·(h − n)·σ'(z);
//     dxp = [dz, dr, dn], dhp = [dz, dr, dn·r], dh = dh'·z.
func rnnCellKernels() []*ptx.Kernel {
	var out []*ptx.Kernel
	for _, d := range slices.Concat(Floats, Halves) {
		out = append(out, lstmCellKernel(d, false), lstmCellKernel(d, true), gruCellKernel(d, false), gruCellKernel(d, true))
	}
	return out
}

// gateAddrs returns the element indices of gates 0..gates-1 of row r's
// element j, in rows of gates·w: (gates·r + q)·w + j.
func gateAddrs(k *ptx.Kernel, gates int, r, j, w ptx.Reg) []ptx.Reg {
	at := make([]ptx.Reg, gates)
	for q := range gates {
		row := k.Reg(ptx.U64)
		k.Op("mul.lo.s64 %s, %s, %d", row, r, gates)
		k.Op("add.s64 %s, %s, %d", row, row, q)
		at[q] = k.Reg(ptx.U64)
		k.Op("mad.lo.s64 %s, %s, %s, %s", at[q], row, w, j)
	}
	return at
}

func gruCellKernel(d DType, grad bool) *ptx.Kernel {
	name := "gru_cell"
	if grad {
		name = "gru_cell_grad"
	}
	k := ptx.NewKernel(Name(name, string(d)))
	var o0, o1, o2, dout ptx.Reg
	if grad {
		o0, o1, o2 = k.ParamPtr("dxp"), k.ParamPtr("dhp"), k.ParamPtr("dh")
	} else {
		o0 = k.ParamPtr("out")
	}
	xp, hp, h := k.ParamPtr("xp"), k.ParamPtr("hp"), k.ParamPtr("h")
	if grad {
		dout = k.ParamPtr("dout")
	}
	total, w := k.Param("total", ptx.U64), paramDivisor(k, "w")
	m := fm{k}
	k.GridStride(total, func(e ptx.Reg) {
		r, j := divmod(k, e, w)
		at := func(p, i ptx.Reg) ptx.Reg { return k.Addr(p, i, d.Size()) }
		put := func(p, i, v ptx.Reg) { store(k, d, at(p, i), fromCompute(k, d, narrow(k, d.Compute(), v))) }
		g := gateAddrs(k, 3, r, j, w.v)
		term := func(p ptx.Reg, q int) ptx.Reg { return loadWide(k, d, at(p, g[q])) }
		z := m.sigmoid(m.add(term(xp, 0), term(hp, 0)))
		rg := m.sigmoid(m.add(term(xp, 1), term(hp, 1)))
		hn := term(hp, 2)
		n := m.tanh(m.add(term(xp, 2), m.mul(rg, hn)))
		hv := loadWide(k, d, at(h, e))
		if !grad {
			put(o0, e, m.add(n, m.mul(z, m.sub(hv, n))))
			return
		}
		gv := loadWide(k, d, at(dout, e))
		dsig := func(s ptx.Reg) ptx.Reg { return m.mul(s, m.sub(m.c(1), s)) }
		dn := m.mul(m.mul(gv, m.sub(m.c(1), z)), m.sub(m.c(1), m.mul(n, n)))
		dr := m.mul(m.mul(dn, hn), dsig(rg))
		dz := m.mul(m.mul(gv, m.sub(hv, n)), dsig(z))
		put(o0, g[0], dz)
		put(o0, g[1], dr)
		put(o0, g[2], dn)
		put(o1, g[0], dz)
		put(o1, g[1], dr)
		put(o1, g[2], m.mul(dn, rg))
		put(o2, e, m.mul(gv, z))
	})
	return k
}

func lstmCellKernel(d DType, grad bool) *ptx.Kernel {
	name := "lstm_cell"
	if grad {
		name = "lstm_cell_grad"
	}
	k := ptx.NewKernel(Name(name, string(d)))
	var o0, o1, z, c, dh, dnext ptx.Reg
	if grad {
		o0, o1, z, c, dh, dnext = k.ParamPtr("dz"), k.ParamPtr("dc"), k.ParamPtr("z"), k.ParamPtr("c"), k.ParamPtr("dh"), k.ParamPtr("dnext")
	} else {
		o0, o1, z, c = k.ParamPtr("h"), k.ParamPtr("next"), k.ParamPtr("z"), k.ParamPtr("c")
	}
	total, w := k.Param("total", ptx.U64), paramDivisor(k, "w")
	m := fm{k}
	k.GridStride(total, func(e ptx.Reg) {
		r, j := divmod(k, e, w)
		at := func(p, i ptx.Reg) ptx.Reg { return k.Addr(p, i, d.Size()) }
		put := func(p, i, v ptx.Reg) { store(k, d, at(p, i), fromCompute(k, d, narrow(k, d.Compute(), v))) }
		gateAt := gateAddrs(k, 4, r, j, w.v) // gate q of the row: z[r, q·w + j]
		gate := func(q int) ptx.Reg { return loadWide(k, d, at(z, gateAt[q])) }
		i, f, g, o := m.sigmoid(gate(0)), m.sigmoid(gate(1)), m.tanh(gate(2)), m.sigmoid(gate(3))
		cv := loadWide(k, d, at(c, e))
		next := m.add(m.mul(f, cv), m.mul(i, g))
		t := m.tanh(next)
		if !grad {
			put(o0, e, m.mul(o, t))
			put(o1, e, next)
			return
		}
		dhv := loadWide(k, d, at(dh, e))
		dC := m.add(loadWide(k, d, at(dnext, e)), m.mul(m.mul(dhv, o), m.sub(m.c(1), m.mul(t, t))))
		dsig := func(s ptx.Reg) ptx.Reg { return m.mul(s, m.sub(m.c(1), s)) }
		put(o0, gateAt[0], m.mul(m.mul(dC, g), dsig(i)))
		put(o0, gateAt[1], m.mul(m.mul(dC, cv), dsig(f)))
		put(o0, gateAt[2], m.mul(m.mul(dC, i), m.sub(m.c(1), m.mul(g, g))))
		put(o0, gateAt[3], m.mul(m.mul(dhv, t), dsig(o)))
		put(o1, e, m.mul(dC, f))
	})
	return k
}
