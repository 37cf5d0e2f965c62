package kernels

import (
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// Normalization kernels (ops/layernorm.go): a warp or a block per row of
// the last dimension (newRowGroups: their last parameter is groupShift),
// as the softmax's, the statistics and sums in float64 (the half types
// read and written as such, their statistics float32):
//
//   - layer_norm_<dtype>, layer_norm_scale_<dtype> (no offset) and
//     rms_norm_<dtype> (out, mean, rstd, x, gamma[, beta], rows, n, eps):
//     the row's mean m (0 for RMSNorm) and rstd = 1/√(Σ(x−m)²/n + eps),
//     out = (x−m)·rstd·gamma (+ beta); mean and rstd [rows] in the dtype.
//   - layer_norm_grad_<dtype> and rms_norm_grad_<dtype> (dx, prod, x,
//     gamma, mean, rstd, dy, dmean, drstd, rows, n): with x̂ = (x−m)·rstd
//     (less its row's mean: m as stored is rounded to the dtype, the
//     forward's deviations are from the float64 mean),
//     dx = rstd·dy·gamma + shift + slope·x̂, shift = (dmean − rstd·Σdy·gamma)/n
//     (0 for RMSNorm), slope = −(rstd·Σdy·gamma·x̂ + rstd²·drstd)/n; and
//     prod = dy·x̂ (float32 for the half types), whose column sums, a
//     reduction apart, are the scale's gradient, rounded once.
//
// Each half dtype's have twins <kind>_<dtype>_pf32 whose gamma and beta
// are float32 (mixed precision's norms: the parameters stay float32, x
// and out are the half type).

func normKernels() []*ptx.Kernel {
	var out []*ptx.Kernel
	for _, d := range slices.Concat(Floats, Halves) {
		params := []DType{d}
		if d.Half() {
			params = append(params, F32)
		}
		for _, pd := range params {
			for _, kind := range []string{"layer_norm", "layer_norm_scale", "rms_norm"} {
				out = append(out, normRows(kind, d, pd))
			}
			out = append(out, normGradRows("layer_norm_grad", d, pd), normGradRows("rms_norm_grad", d, pd))
		}
	}
	return append(out, batchNormKernels()...)
}

// NormName is the name of a norm kernel of kind for x of dtype d and
// parameters of dtype pd.
func NormName(kind string, d, pd DType) string {
	if pd != d {
		return Name(kind, string(d), "p"+string(pd))
	}
	return Name(kind, string(d))
}

// eachNormRow writes a row kernel over [rows, n] of dtype d: body runs
// for each of the block's rows with n as float64 and at, the address of
// element j of the row in a tensor at p of elements of size bytes.
func eachNormRow(k *ptx.Kernel, d DType, rows, n ptx.Reg, body func(b *blockRows, nf, row ptx.Reg, at func(p, j ptx.Reg, size int) ptx.Reg)) {
	nf := fm{k: k}.reg()
	k.Op("cvt.rn.f64.u64 %s, %s", nf, n)
	b := newRowGroups(k, 8)
	b.eachRow(rows, func(row ptx.Reg) {
		base := k.Reg(ptx.U64)
		k.Op("mul.lo.s64 %s, %s, %s", base, row, n)
		body(b, nf, row, func(p, j ptx.Reg, size int) ptx.Reg { return k.Addr(p, addU64(k, base, j), size) })
	})
}

// loadWide is the element of dtype d at addr as float64 (a half type's
// through float32).
func loadWide(k *ptx.Kernel, d DType, addr ptx.Reg) ptx.Reg {
	return widen(k, d.Compute(), toCompute(k, d, load(k, d, addr)))
}

// storeNarrow stores the float64 v at addr as dtype d (a half type's
// through float32, as the CPU rounds it).
func storeNarrow(k *ptx.Kernel, d DType, addr, v ptx.Reg) {
	store(k, d, addr, fromCompute(k, d, narrow(k, d.Compute(), v)))
}

// zero64 is a new float64 register holding 0.
func zero64(m fm) ptx.Reg {
	r := m.reg()
	m.k.Op("mov.f64 %s, %s", r, m.c(0))
	return r
}

func normRows(kind string, d, pd DType) *ptx.Kernel {
	k := ptx.NewKernel(NormName(kind, d, pd))
	o, mean, rstd, x, gamma := k.ParamPtr("out"), k.ParamPtr("mean"), k.ParamPtr("rstd"), k.ParamPtr("x"), k.ParamPtr("gamma")
	var beta ptx.Reg
	if kind == "layer_norm" {
		beta = k.ParamPtr("beta")
	}
	rows, n, eps := k.Param("rows", ptx.U64), k.Param("n", ptx.U64), k.Param("eps", ptx.F64)
	m := fm{k: k}
	add := func(a, c ptx.Reg) ptx.Reg { return m.add(a, c) }
	eachNormRow(k, d, rows, n, func(b *blockRows, nf, row ptx.Reg, at func(p, j ptx.Reg, size int) ptx.Reg) {
		xj := func(j ptx.Reg) ptx.Reg { return loadWide(k, d, at(x, j, d.Size())) }
		mu := zero64(m)
		if kind != "rms_norm" {
			sum := zero64(m)
			b.eachElem(n, func(j ptx.Reg) { k.Op("add.rn.f64 %s, %s, %s", sum, sum, xj(j)) })
			k.Op("div.rn.f64 %s, %s, %s", mu, b.tree(ptx.F64, sum, add), nf)
		}
		ss := zero64(m)
		b.eachElem(n, func(j ptx.Reg) {
			c := m.sub(xj(j), mu)
			k.Op("fma.rn.f64 %s, %s, %s, %s", ss, c, c, ss)
		})
		v := m.add(m.div(b.tree(ptx.F64, ss, add), nf), eps)
		k.Op("sqrt.rn.f64 %s, %s", v, v)
		rs := m.div(m.c(1), v)
		b.eachElem(n, func(j ptx.Reg) {
			y := m.mul(m.mul(m.sub(xj(j), mu), rs), loadWide(k, pd, k.Addr(gamma, j, pd.Size())))
			if kind == "layer_norm" {
				y = m.add(y, loadWide(k, pd, k.Addr(beta, j, pd.Size())))
			}
			storeNarrow(k, d, at(o, j, d.Size()), y)
		})
		st := d.Compute() // the statistics' dtype: float32 for the half types
		b.first(func() {
			storeNarrow(k, st, k.Addr(mean, row, st.Size()), mu)
			storeNarrow(k, st, k.Addr(rstd, row, st.Size()), rs)
		})
	})
	return k
}

func normGradRows(kind string, d, pd DType) *ptx.Kernel {
	k := ptx.NewKernel(NormName(kind, d, pd))
	dx, prod, x, gamma := k.ParamPtr("dx"), k.ParamPtr("prod"), k.ParamPtr("x"), k.ParamPtr("gamma")
	mean, rstd, dy, dmean, drstd := k.ParamPtr("mean"), k.ParamPtr("rstd"), k.ParamPtr("dy"), k.ParamPtr("dmean"), k.ParamPtr("drstd")
	rows, n := k.Param("rows", ptx.U64), k.Param("n", ptx.U64)
	m := fm{k: k}
	add := func(a, c ptx.Reg) ptx.Reg { return m.add(a, c) }
	eachNormRow(k, d, rows, n, func(b *blockRows, nf, row ptx.Reg, at func(p, j ptx.Reg, size int) ptx.Reg) {
		st := d.Compute() // the statistics' dtype: float32 for the half types
		stat := func(p ptx.Reg) ptx.Reg { return loadWide(k, st, k.Addr(p, row, st.Size())) }
		mu, rs := stat(mean), stat(rstd)
		// One element's x̂, dy and dy·gamma.
		elem := func(j ptx.Reg) (xhat, g, gg ptx.Reg) {
			xhat = m.mul(m.sub(loadWide(k, d, at(x, j, d.Size())), mu), rs)
			g = loadWide(k, d, at(dy, j, d.Size()))
			return xhat, g, m.mul(g, loadWide(k, pd, k.Addr(gamma, j, pd.Size())))
		}
		sumG, sumGX, sumX := zero64(m), zero64(m), zero64(m)
		b.eachElem(n, func(j ptx.Reg) {
			xhat, _, gg := elem(j)
			k.Op("add.rn.f64 %s, %s, %s", sumG, sumG, gg)
			k.Op("fma.rn.f64 %s, %s, %s, %s", sumGX, gg, xhat, sumGX)
			if kind == "layer_norm_grad" {
				k.Op("add.rn.f64 %s, %s, %s", sumX, sumX, xhat)
			}
		})
		sumG, sumGX = b.tree(ptx.F64, sumG, add), b.tree(ptx.F64, sumGX, add)
		// The mean as stored is rounded to the dtype, off by δ: every x̂
		// is off by δ·rstd, their mean (cx) by as much, which x̂ - cx
		// undoes (the forward's deviations are from the float64 mean).
		cx := zero64(m)
		if kind == "layer_norm_grad" {
			cx = m.div(b.tree(ptx.F64, sumX, add), nf)
			sumGX = m.sub(sumGX, m.mul(cx, sumG))
		}
		shift := zero64(m)
		if kind == "layer_norm_grad" {
			k.Op("div.rn.f64 %s, %s, %s", shift, m.sub(stat(dmean), m.mul(rs, sumG)), nf)
		}
		slope := m.div(m.sub(m.c(0), m.add(m.mul(rs, sumGX), m.mul(m.mul(rs, rs), stat(drstd)))), nf)
		b.eachElem(n, func(j ptx.Reg) {
			xhat, g, gg := elem(j)
			if kind == "layer_norm_grad" {
				xhat = m.sub(xhat, cx)
			}
			v := m.add(m.add(m.mul(rs, gg), shift), m.mul(slope, xhat))
			storeNarrow(k, d, at(dx, j, d.Size()), v)
			storeNarrow(k, st, at(prod, j, st.Size()), m.mul(g, xhat)) // summed before rounding to a half type
		})
	})
	return k
}
