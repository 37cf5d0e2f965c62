package cpu

import (
	"math"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// LSTMCell, GRUCell and their backward ops (ops/rnn_cells.go): a pass
// over the rows, each element's gates read, computed in float64 and
// rounded once; float32 rows by the float32 vector loops instead
// (lstmCell32, gruCell32).

func init() {
	kernels{f32: lstmCellKernel[float32], f64: lstmCellKernel[float64]}.register("LSTMCell")
	kernels{f32: lstmCellBackpropKernel[float32], f64: lstmCellBackpropKernel[float64]}.register("LSTMCellBackprop")
	kernels{f32: gruCellKernel[float32], f64: gruCellKernel[float64]}.register("GRUCell")
	kernels{f32: gruCellBackpropKernel[float32], f64: gruCellBackpropKernel[float64]}.register("GRUCellBackprop")
}

// lstmGates64 returns σ(i), σ(f), tanh(g), σ(o) of row r's element j of
// z = xz + hz [n 4h], the sum in float64.
func lstmGates64[T tensor.Float](xz, hz []T, r, j, h int) (i, f, g, o float64) {
	xs, hs := xz[4*h*r:4*h*(r+1)], hz[4*h*r:4*h*(r+1)]
	z := func(q int) float64 { return float64(xs[q*h+j]) + float64(hs[q*h+j]) }
	return sigmoid64(z(0)), sigmoid64(z(1)), math.Tanh(z(2)), sigmoid64(z(3))
}

func lstmCellKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	xz, hz, cell, h, next := data[T](c.Inputs[0]), data[T](c.Inputs[1]), data[T](c.Inputs[2]), data[T](outs[0]), data[T](outs[1])
	n, w := c.Inputs[2].Dim(0), c.Inputs[2].Dim(1)
	if x32, ok := any(xz).([]float32); ok {
		lstmCell32(c, x32, any(hz).([]float32), any(cell).([]float32), any(h).([]float32), any(next).([]float32), n, w)
		return
	}
	deviceOf(c).Parallel(n, float64(40*w), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			for j := range w {
				i, f, g, o := lstmGates64(xz, hz, r, j, w)
				cn := f*float64(cell[r*w+j]) + i*g
				next[r*w+j], h[r*w+j] = T(cn), T(o*math.Tanh(cn))
			}
		}
	})
}

func lstmCellBackpropKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	xz, hz, cell, dh, dc := data[T](c.Inputs[0]), data[T](c.Inputs[1]), data[T](c.Inputs[2]), data[T](c.Inputs[3]), data[T](c.Inputs[4])
	dz, dcell := data[T](outs[0]), data[T](outs[1])
	n, w := c.Inputs[2].Dim(0), c.Inputs[2].Dim(1)
	if x32, ok := any(xz).([]float32); ok {
		lstmCellBackprop32(c, x32, any(hz).([]float32), any(cell).([]float32), any(dh).([]float32), any(dc).([]float32),
			any(dz).([]float32), any(dcell).([]float32), n, w)
		return
	}
	deviceOf(c).Parallel(n, float64(60*w), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row := dz[4*w*r : 4*w*(r+1)]
			for j := range w {
				i, f, g, o := lstmGates64(xz, hz, r, j, w)
				cv, dhv := float64(cell[r*w+j]), float64(dh[r*w+j])
				t := math.Tanh(f*cv + i*g)
				dC := float64(dc[r*w+j]) + dhv*o*(1-t*t)
				row[j] = T(dC * g * i * (1 - i))
				row[w+j] = T(dC * cv * f * (1 - f))
				row[2*w+j] = T(dC * i * (1 - g*g))
				row[3*w+j] = T(dhv * t * o * (1 - o))
				dcell[r*w+j] = T(dC * f)
			}
		}
	})
}

// lstmGates32 sets z, a row's 4w gate terms, to σ(i), σ(f), tanh(g),
// σ(o) of xs + hs (float32, the vector loops: within 2 ulp).
func lstmGates32(z, xs, hs []float32, w int) {
	for q := range z {
		z[q] = xs[q] + hs[q]
	}
	sigmoid32Loop(z[:2*w], z[:2*w])
	tanh32Loop(z[2*w:3*w], z[2*w:3*w])
	sigmoid32Loop(z[3*w:], z[3*w:])
}

// lstmCell32 is LSTMCell of float32 rows: the gates and the new cell's
// tanh by the float32 vector loops (a row at a time), each product and
// sum rounded in float32, where float64's scalar exp took most of a
// small LSTM's step.
func lstmCell32(c *eager.Call, xz, hz, cell, h, next []float32, n, w int) {
	deviceOf(c).Parallel(n, float64(8*w), func(lo, hi int) {
		z, t := make([]float32, 4*w), make([]float32, w)
		for r := lo; r < hi; r++ {
			lstmGates32(z, xz[4*w*r:4*w*(r+1)], hz[4*w*r:4*w*(r+1)], w)
			cr, nr, hr := cell[r*w:(r+1)*w], next[r*w:(r+1)*w], h[r*w:(r+1)*w]
			for j := range w {
				cn := z[w+j]*cr[j] + z[j]*z[2*w+j]
				nr[j], t[j] = cn, cn
			}
			tanh32Loop(t, t)
			for j := range w {
				hr[j] = z[3*w+j] * t[j]
			}
		}
	})
}

// lstmCellBackprop32 is LSTMCellBackprop of float32 rows, the gates and
// tanh(c') recomputed as lstmCell32 computes them.
func lstmCellBackprop32(c *eager.Call, xz, hz, cell, dh, dc, dz, dcell []float32, n, w int) {
	deviceOf(c).Parallel(n, float64(10*w), func(lo, hi int) {
		z, t := make([]float32, 4*w), make([]float32, w)
		for r := lo; r < hi; r++ {
			lstmGates32(z, xz[4*w*r:4*w*(r+1)], hz[4*w*r:4*w*(r+1)], w)
			cr := cell[r*w : (r+1)*w]
			for j := range w {
				t[j] = z[w+j]*cr[j] + z[j]*z[2*w+j]
			}
			tanh32Loop(t, t)
			row := dz[4*w*r : 4*w*(r+1)]
			for j := range w {
				i, f, g, o := z[j], z[w+j], z[2*w+j], z[3*w+j]
				dhv := dh[r*w+j]
				dC := dc[r*w+j] + dhv*o*(1-t[j]*t[j])
				row[j] = dC * g * i * (1 - i)
				row[w+j] = dC * cr[j] * f * (1 - f)
				row[2*w+j] = dC * i * (1 - g*g)
				row[3*w+j] = dhv * t[j] * o * (1 - o)
				dcell[r*w+j] = dC * f
			}
		}
	})
}

// gruGates64 returns σ(z), σ(r), the candidate n and the state's
// candidate term hp_n of row r's element j (xp, hp [n 3h]).
func gruGates64[T tensor.Float](xp, hp []T, r, j, h int) (z, rg, n, hn float64) {
	xs, hs := xp[3*h*r:3*h*(r+1)], hp[3*h*r:3*h*(r+1)]
	z = sigmoid64(float64(xs[j]) + float64(hs[j]))
	rg = sigmoid64(float64(xs[h+j]) + float64(hs[h+j]))
	hn = float64(hs[2*h+j])
	return z, rg, math.Tanh(float64(xs[2*h+j]) + rg*hn), hn
}

func gruCellKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	xp, hp, h, out := data[T](c.Inputs[0]), data[T](c.Inputs[1]), data[T](c.Inputs[2]), data[T](outs[0])
	n, w := c.Inputs[2].Dim(0), c.Inputs[2].Dim(1)
	if x32, ok := any(xp).([]float32); ok {
		gruCell32(c, x32, any(hp).([]float32), any(h).([]float32), nil, any(out).([]float32), nil, nil, nil, n, w)
		return
	}
	deviceOf(c).Parallel(n, float64(40*w), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			for j := range w {
				z, _, nv, _ := gruGates64(xp, hp, r, j, w)
				out[r*w+j] = T(nv + z*(float64(h[r*w+j])-nv))
			}
		}
	})
}

func gruCellBackpropKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	xp, hp, h, dout := data[T](c.Inputs[0]), data[T](c.Inputs[1]), data[T](c.Inputs[2]), data[T](c.Inputs[3])
	dxp, dhp, dh := data[T](outs[0]), data[T](outs[1]), data[T](outs[2])
	n, w := c.Inputs[2].Dim(0), c.Inputs[2].Dim(1)
	if x32, ok := any(xp).([]float32); ok {
		gruCell32(c, x32, any(hp).([]float32), any(h).([]float32), any(dout).([]float32), nil,
			any(dxp).([]float32), any(dhp).([]float32), any(dh).([]float32), n, w)
		return
	}
	deviceOf(c).Parallel(n, float64(60*w), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			xr, hr := dxp[3*w*r:3*w*(r+1)], dhp[3*w*r:3*w*(r+1)]
			for j := range w {
				z, rg, nv, hn := gruGates64(xp, hp, r, j, w)
				g := float64(dout[r*w+j])
				dn := g * (1 - z) * (1 - nv*nv)
				dr := dn * hn * rg * (1 - rg)
				dz := g * (float64(h[r*w+j]) - nv) * z * (1 - z)
				xr[j], xr[w+j], xr[2*w+j] = T(dz), T(dr), T(dn)
				hr[j], hr[w+j], hr[2*w+j] = T(dz), T(dr), T(dn*rg)
				dh[r*w+j] = T(g * z)
			}
		}
	})
}

// gruCell32 is GRUCell of float32 rows (out, where dout is nil) or its
// gradient (dxp, dhp, dh from dout): a row's gates z, r = σ(xp + hp) and
// the candidate n = tanh(xp_n + r·hp_n) by the float32 vector loops
// (within 2 ulp), the rest in float32, as lstmCell32 computes the LSTM's.
func gruCell32(c *eager.Call, xp, hp, h, dout, out, dxp, dhp, dh []float32, n, w int) {
	deviceOf(c).Parallel(n, float64(10*w), func(lo, hi int) {
		g := make([]float32, 3*w) // z, r, n
		for r := lo; r < hi; r++ {
			xs, hs := xp[3*w*r:3*w*(r+1)], hp[3*w*r:3*w*(r+1)]
			for q := range 2 * w {
				g[q] = xs[q] + hs[q]
			}
			sigmoid32Loop(g[:2*w], g[:2*w])
			for j := range w {
				g[2*w+j] = xs[2*w+j] + g[w+j]*hs[2*w+j]
			}
			tanh32Loop(g[2*w:], g[2*w:])
			hr := h[r*w : (r+1)*w]
			if dout == nil {
				or := out[r*w : (r+1)*w]
				for j := range w {
					z, nv := g[j], g[2*w+j]
					or[j] = nv + z*(hr[j]-nv)
				}
				continue
			}
			xr, pr := dxp[3*w*r:3*w*(r+1)], dhp[3*w*r:3*w*(r+1)]
			for j := range w {
				z, rg, nv, hn := g[j], g[w+j], g[2*w+j], hs[2*w+j]
				d := dout[r*w+j]
				dn := d * (1 - z) * (1 - nv*nv)
				dr := dn * hn * rg * (1 - rg)
				dz := d * (hr[j] - nv) * z * (1 - z)
				xr[j], xr[w+j], xr[2*w+j] = dz, dr, dn
				pr[j], pr[w+j], pr[2*w+j] = dz, dr, dn*rg
				dh[r*w+j] = d * z
			}
		}
	})
}
