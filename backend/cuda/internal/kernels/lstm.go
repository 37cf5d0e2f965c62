package kernels

import (
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// LSTM cell kernels (ops/lstm.go), a thread per element (r, j) of the
// cell [n, h], z [n, 4h] holding the gates' pre-activations i, f, g, o
// side by side; in float64, rounded once (a half type through float32,
// as the CPU's dispatch computes it):
//
//   - lstm_cell_<d> (h, next, z, c, total, h): next = σ(f)·c + σ(i)·tanh(g),
//     h = σ(o)·tanh(next).
//   - lstm_cell_grad_<d> (dz, dc, z, c, dh, dnext, total, h): with t =
//     tanh(next) recomputed and dC = dnext + dh·σ(o)·(1 − t²), the gates'
//     gradients dC·tanh(g)·σ'(i), dC·c·σ'(f), dC·σ(i)·(1 − tanh²(g)),
//     dh·t·σ'(o), and dc = dC·σ(f).
func lstmKernels() []*ptx.Kernel {
	var out []*ptx.Kernel
	for _, d := range slices.Concat(Floats, Halves) {
		out = append(out, lstmCellKernel(d, false), lstmCellKernel(d, true))
	}
	return out
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
		// Gate q of the row: z[r, q·w + j], at (4r + q)·w + j.
		gateAt := make([]ptx.Reg, 4)
		for q := range 4 {
			row := k.Reg(ptx.U64)
			k.Op("mul.lo.s64 %s, %s, 4", row, r)
			k.Op("add.s64 %s, %s, %d", row, row, q)
			gateAt[q] = k.Reg(ptx.U64)
			k.Op("mad.lo.s64 %s, %s, %s, %s", gateAt[q], row, w.v, j)
		}
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
