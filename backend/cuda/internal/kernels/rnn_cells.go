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
//   - lstm_cell_<d> (h, next, xz, hz, c, total, h): with z = xz + hz,
//     next = σ(f)·c + σ(i)·tanh(g), h = σ(o)·tanh(next).
//   - lstm_cell_grad_<d> (dz, dc, xz, hz, c, dh, dnext, total, h): with t =
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

// cell is one element of a cell kernel's state: the kernel, its
// pointer parameters by name, the element e = (r, j) of [n, w].
type cell struct {
	k       *ptx.Kernel
	m       fm
	d       DType
	p       map[string]ptx.Reg
	e, r, j ptx.Reg
	w       ptx.Reg
}

// load reads element i of parameter name as float64.
func (c cell) load(name string, i ptx.Reg) ptx.Reg {
	return loadWide(c.k, c.d, c.k.Addr(c.p[name], i, c.d.Size()))
}

// put writes the float64 v as element i of parameter name, rounded once.
func (c cell) put(name string, i, v ptx.Reg) {
	store(c.k, c.d, c.k.Addr(c.p[name], i, c.d.Size()), fromCompute(c.k, c.d, narrow(c.k, c.d.Compute(), v)))
}

// gates returns the element indices of gates 0..n-1 of the element, in
// rows of n·w: (n·r + q)·w + j.
func (c cell) gates(n int) []ptx.Reg {
	at := make([]ptx.Reg, n)
	for q := range n {
		row := c.k.Reg(ptx.U64)
		c.k.Op("mul.lo.s64 %s, %s, %d", row, c.r, n)
		c.k.Op("add.s64 %s, %s, %d", row, row, q)
		at[q] = c.k.Reg(ptx.U64)
		c.k.Op("mad.lo.s64 %s, %s, %s, %s", at[q], row, c.w, c.j)
	}
	return at
}

// dsig is σ'(x) from s = σ(x): s·(1 − s).
func (c cell) dsig(s ptx.Reg) ptx.Reg { return c.m.mul(s, c.m.sub(c.m.c(1), s)) }

// cellKernel writes kernel name_<d>, its pointer parameters params then
// (total, w), body run for each element of the state.
func cellKernel(name string, d DType, params []string, body func(c cell)) *ptx.Kernel {
	k := ptx.NewKernel(Name(name, string(d)))
	p := map[string]ptx.Reg{}
	for _, n := range params {
		p[n] = k.ParamPtr(n)
	}
	total, w := k.Param("total", ptx.U64), paramDivisor(k, "w")
	k.GridStride(total, func(e ptx.Reg) {
		r, j := divmod(k, e, w)
		body(cell{k: k, m: fm{k: k}, d: d, p: p, e: e, r: r, j: j, w: w.v})
	})
	return k
}

func gruCellKernel(d DType, grad bool) *ptx.Kernel {
	name, params := "gru_cell", []string{"out", "xp", "hp", "h"}
	if grad {
		name, params = "gru_cell_grad", []string{"dxp", "dhp", "dh", "xp", "hp", "h", "dout"}
	}
	return cellKernel(name, d, params, func(c cell) {
		m, g := c.m, c.gates(3)
		z := activation(m, c.d, true, m.add(c.load("xp", g[0]), c.load("hp", g[0])))
		r := activation(m, c.d, true, m.add(c.load("xp", g[1]), c.load("hp", g[1])))
		hn := c.load("hp", g[2])
		n := activation(m, c.d, false, m.add(c.load("xp", g[2]), m.mul(r, hn)))
		h := c.load("h", c.e)
		if !grad {
			c.put("out", c.e, m.add(n, m.mul(z, m.sub(h, n))))
			return
		}
		dout := c.load("dout", c.e)
		dn := m.mul(m.mul(dout, m.sub(m.c(1), z)), m.sub(m.c(1), m.mul(n, n)))
		dr := m.mul(m.mul(dn, hn), c.dsig(r))
		dz := m.mul(m.mul(dout, m.sub(h, n)), c.dsig(z))
		for q, v := range []ptx.Reg{dz, dr, dn} {
			c.put("dxp", g[q], v)
		}
		for q, v := range []ptx.Reg{dz, dr, m.mul(dn, r)} {
			c.put("dhp", g[q], v)
		}
		c.put("dh", c.e, m.mul(dout, z))
	})
}

func lstmCellKernel(d DType, grad bool) *ptx.Kernel {
	name, params := "lstm_cell", []string{"h", "next", "xz", "hz", "c"}
	if grad {
		name, params = "lstm_cell_grad", []string{"dz", "dc", "xz", "hz", "c", "dh", "dnext"}
	}
	return cellKernel(name, d, params, func(c cell) {
		m, at := c.m, c.gates(4) // gate q of the row: z[r, q·w + j]
		z := func(q int) ptx.Reg { return m.add(c.load("xz", at[q]), c.load("hz", at[q])) }
		act := func(sigmoid bool, v ptx.Reg) ptx.Reg { return activation(m, c.d, sigmoid, v) }
		i, f, g, o := act(true, z(0)), act(true, z(1)), act(false, z(2)), act(true, z(3))
		cv := c.load("c", c.e)
		next := m.add(m.mul(f, cv), m.mul(i, g))
		t := act(false, next)
		if !grad {
			c.put("h", c.e, m.mul(o, t))
			c.put("next", c.e, next)
			return
		}
		dh := c.load("dh", c.e)
		dC := m.add(c.load("dnext", c.e), m.mul(m.mul(dh, o), m.sub(m.c(1), m.mul(t, t))))
		c.put("dz", at[0], m.mul(m.mul(dC, g), c.dsig(i)))
		c.put("dz", at[1], m.mul(m.mul(dC, cv), c.dsig(f)))
		c.put("dz", at[2], m.mul(m.mul(dC, i), m.sub(m.c(1), m.mul(g, g))))
		c.put("dz", at[3], m.mul(m.mul(dh, t), c.dsig(o)))
		c.put("dc", c.e, m.mul(dC, f))
	})
}
