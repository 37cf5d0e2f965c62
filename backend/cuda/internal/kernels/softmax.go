package kernels

import (
	"math"
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// Softmax kernels work along the last dimension, a warp or a block per
// row (newRowGroups: their last parameter is groupShift), for the float
// dtypes and the half types (loaded into float32, stored rounded once):
// the row's maximum m (NaN propagates), then the float64 sum s of
// e^(x−m) (each exponential float32's ex2.approx but for float64 rows),
// then the outputs, as the CPU computes them:
//
//   - softmax_<dtype> (out, x, rows, n): e^(x−m)/s.
//   - log_softmax_<dtype> (out, x, rows, n): (x−m) − log s, log s rounded
//     to the dtype first, formed as log k + log1p(r/k) (k the elements at
//     the maximum, r the others' sum), so that a log-probability near 0
//     keeps its relative precision.
//   - sparse_xent_<dtype>_<label dtype> (out, x, labels, err, rows, n): per
//     row, m − x[label] + log s; a label outside [0, n) gives NaN and its
//     row goes to the check slot err (checkedIndex).
//   - sparse_xent_grad_<dtype>_<label dtype> (out, x, labels, dy, err, rows,
//     n): the cross-entropy's gradient, (e^(x−m)/s − onehot(label))·dy[row],
//     in float64, rounded once; a bad label as sparse_xent's.
//   - log_softmax_grad_<dtype> (out, y, dy, rows, n): LogSoftmax's
//     gradient from its output y, dy − e^y·Σdy, the sum in float64.
//   - softmax_grad_<dtype> (out, y, dy, rows, n): Softmax's, y·(dy −
//     Σdy·y), likewise.

func softmaxKernels() []*ptx.Kernel {
	var out []*ptx.Kernel
	for _, d := range slices.Concat(Floats, Halves) {
		out = append(out, softmaxRows("softmax", d, ""), softmaxRows("log_softmax", d, ""))
		out = append(out, softmaxGradRows("log_softmax_grad", d), softmaxGradRows("softmax_grad", d))
		for _, l := range []DType{S32, S64} {
			out = append(out, softmaxRows("sparse_xent", d, l), softmaxRows("sparse_xent_grad", d, l))
		}
	}
	return out
}

func softmaxRows(kind string, d DType, label DType) *ptx.Kernel {
	name := Name(kind, string(d))
	if label != "" {
		name = Name(kind, string(d), string(label))
	}
	k := ptx.NewKernel(name)
	o, x := k.ParamPtr("out"), k.ParamPtr("x")
	var labels, dy, errSlot ptx.Reg
	if label != "" {
		labels = k.ParamPtr("labels")
		if kind == "sparse_xent_grad" {
			dy = k.ParamPtr("dy")
		}
		errSlot = k.ParamPtr("err")
	}
	rows, n := k.Param("rows", ptx.U64), k.Param("n", ptx.U64)
	m := fm{k: k}
	// A half dtype's values are loaded into float32 (its compute dtype c)
	// and stored rounded once from it.
	c := d.Compute()
	t := c.reg()
	ld := func(addr ptx.Reg) ptx.Reg { return toCompute(k, d, load(k, d, addr)) }
	st := func(addr, v ptx.Reg) { store(k, d, addr, fromCompute(k, d, v)) }
	b := newRowGroups(k, 8)
	b.eachRow(rows, func(row ptx.Reg) {
		base := k.Reg(ptx.U64)
		k.Op("mul.lo.s64 %s, %s, %s", base, row, n)
		elem := func(j ptx.Reg) ptx.Reg {
			at := k.Reg(ptx.U64)
			k.Op("add.s64 %s, %s, %s", at, base, j)
			return k.Addr(x, at, d.Size())
		}
		mx := k.Reg(t)
		mov(k, c, mx, reduceInit("max", c))
		b.eachElem(n, func(j ptx.Reg) { mov(k, c, mx, reduceCombine(k, "max", c, mx, ld(elem(j)))) })
		mx = b.tree(t, mx, func(a, v ptx.Reg) ptx.Reg { return reduceCombine(k, "max", c, a, v) })
		// diff is x − m in the dtype; shifted is it and e^(x − m) as
		// float64 (expFor: float32's ex2.approx but for float64 rows).
		diff := func(j ptx.Reg) ptx.Reg {
			v := k.Reg(t)
			k.Op("sub.rn.%s %s, %s, %s", t, v, ld(elem(j)), mx)
			return v
		}
		shifted := func(j ptx.Reg) (ptx.Reg, ptx.Reg) {
			v := diff(j)
			return v, m.expFor(c, widen(k, c, v))
		}
		sum := m.reg()
		k.Op("mov.f64 %s, %s", sum, m.c(0))
		// The log-probabilities' log Σ is log k + log1p(r/k), k the
		// elements at the maximum (x − m exactly 0) and r the others' sum
		// (as the CPU's logSumShifted): 1 + r rounded would lose r's digits.
		var logSum func() ptx.Reg
		if kind == "log_softmax" || kind == "sparse_xent" {
			ones := m.reg()
			k.Op("mov.f64 %s, %s", ones, m.c(0))
			b.eachElem(n, func(j ptx.Reg) {
				v, e := shifted(j)
				at := k.Reg(ptx.Pred)
				k.Op("setp.eq.%s %s, %s, %s", t, at, v, ptx.Imm(t, 0))
				k.Op("@%s add.rn.f64 %s, %s, %s", at, ones, ones, m.c(1))
				k.Op("@!%s add.rn.f64 %s, %s, %s", at, sum, sum, e)
			})
			sum = b.tree(ptx.F64, sum, func(a, c ptx.Reg) ptx.Reg { return m.add(a, c) })
			ones = b.tree(ptx.F64, ones, func(a, c ptx.Reg) ptx.Reg { return m.add(a, c) })
			logSum = func() ptx.Reg { return m.add(m.log(ones), m.log1p(m.div(sum, ones))) }
		} else {
			b.eachElem(n, func(j ptx.Reg) {
				_, e := shifted(j)
				k.Op("add.rn.f64 %s, %s, %s", sum, sum, e)
			})
			sum = b.tree(ptx.F64, sum, func(a, c ptx.Reg) ptx.Reg { return m.add(a, c) })
		}
		switch kind {
		case "softmax":
			inv := m.div(m.c(1), sum)
			b.eachElem(n, func(j ptx.Reg) {
				_, e := shifted(j)
				st(k.Addr(o, addU64(k, base, j), d.Size()), narrow(k, c, m.mul(e, inv)))
			})
		case "log_softmax":
			ls := narrow(k, c, logSum())
			b.eachElem(n, func(j ptx.Reg) {
				v := diff(j)
				r := k.Reg(t)
				k.Op("sub.rn.%s %s, %s, %s", t, r, v, ls)
				st(k.Addr(o, addU64(k, base, j), d.Size()), r)
			})
		case "sparse_xent_grad":
			id64, _ := checkedIndex(k, labels, label, row, n, errSlot)
			g := widen(k, c, ld(k.Addr(dy, row, d.Size())))
			scale := m.div(g, sum)
			b.eachElem(n, func(j ptx.Reg) {
				_, e := shifted(j)
				v := m.mul(e, scale)
				hit := k.Reg(ptx.Pred)
				k.Op("setp.eq.s64 %s, %s, %s", hit, j, id64)
				v = m.sel(hit, m.sub(v, g), v)
				st(k.Addr(o, addU64(k, base, j), d.Size()), narrow(k, c, v))
			})
		default: // sparse_xent
			b.first(func() {
				id64, bad := checkedIndex(k, labels, label, row, n, errSlot)
				loss, done := k.Reg(t), k.Label("loss")
				k.Op("mov.%s %s, %s", t, loss, ptx.Imm(t, math.NaN())) // a bad label's loss
				k.Op("@%s bra %s", bad, done)
				r := m.add(m.sub(widen(k, c, mx), widen(k, c, ld(elem(id64)))), logSum())
				k.Op("mov.%s %s, %s", t, loss, narrow(k, c, r))
				k.Place(done)
				st(k.Addr(o, row, d.Size()), loss)
			})
		}
	})
	return k
}

// softmaxGradRows is log_softmax_grad or softmax_grad for dtype d: the
// row's float64 sum (of dy, or of dy·y), then the outputs in the
// compute dtype (float32 for float32 and the half types: e^y by exp32,
// dy − e·s by one fma; the float64 path took about 60 instructions an
// element for its exponential).
func softmaxGradRows(kind string, d DType) *ptx.Kernel {
	k := ptx.NewKernel(Name(kind, string(d)))
	o, y, dy := k.ParamPtr("out"), k.ParamPtr("y"), k.ParamPtr("dy")
	rows, n := k.Param("rows", ptx.U64), k.Param("n", ptx.U64)
	m := fm{k: k}
	c := d.Compute()
	t := c.reg()
	b := newRowGroups(k, 8)
	b.eachRow(rows, func(row ptx.Reg) {
		base := k.Reg(ptx.U64)
		k.Op("mul.lo.s64 %s, %s, %s", base, row, n)
		// at loads element j of the row of p, in the compute dtype.
		at := func(p, j ptx.Reg) ptx.Reg {
			return toCompute(k, d, load(k, d, k.Addr(p, addU64(k, base, j), d.Size())))
		}
		sum := m.reg()
		k.Op("mov.f64 %s, %s", sum, m.c(0))
		b.eachElem(n, func(j ptx.Reg) {
			v := widen(k, c, at(dy, j))
			if kind == "softmax_grad" {
				v = m.mul(v, widen(k, c, at(y, j)))
			}
			k.Op("add.rn.f64 %s, %s, %s", sum, sum, v)
		})
		sum = b.tree(ptx.F64, sum, func(a, c ptx.Reg) ptx.Reg { return m.add(a, c) })
		s := narrow(k, c, sum)
		b.eachElem(n, func(j ptx.Reg) {
			yv, g := at(y, j), at(dy, j)
			r := k.Reg(t)
			switch {
			case kind == "softmax_grad":
				k.Op("sub.rn.%s %s, %s, %s", t, r, g, s)
				k.Op("mul.rn.%s %s, %s, %s", t, r, r, yv)
			case c == F64:
				r = m.sub(g, m.mul(m.exp(yv), s))
			default:
				e := exp32(k, yv)
				k.Op("neg.f32 %s, %s", e, e)
				k.Op("fma.rn.f32 %s, %s, %s, %s", r, e, s, g)
			}
			store(k, d, k.Addr(o, addU64(k, base, j), d.Size()), fromCompute(k, d, r))
		})
	})
	return k
}

// addU64 is a + b.
func addU64(k *ptx.Kernel, a, b ptx.Reg) ptx.Reg {
	r := k.Reg(ptx.U64)
	k.Op("add.s64 %s, %s, %s", r, a, b)
	return r
}

// widen is v (of float dtype d) as float64.
func widen(k *ptx.Kernel, d DType, v ptx.Reg) ptx.Reg {
	if d == F64 {
		return v
	}
	w := k.Reg(ptx.F64)
	k.Op("cvt.f64.f32 %s, %s", w, v)
	return w
}

// narrow is the float64 v rounded to float dtype d.
func narrow(k *ptx.Kernel, d DType, v ptx.Reg) ptx.Reg {
	if d == F64 {
		return v
	}
	r := k.Reg(ptx.F32)
	k.Op("cvt.rn.f32.f64 %s, %s", r, v)
	return r
}
