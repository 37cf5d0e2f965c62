package cpu

import (
	"math"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// LSTMSequence and its backward op (ops/rnn_sequence.go): a batch row's
// steps in order, in float64 with fused multiply-adds in the order the
// GPU's kernels add (backend/cuda/internal/kernels/rnn_sequence.go), so
// that the two agree to the dtype's rounding and the conformance table
// can hold the GPU's to the CPU's. The reference: layers on the CPU loop
// over LSTMCell steps, whose products are GEMMs (ops.LSTMSequenceFused).

func init() {
	kernels{f32: lstmSequenceKernel[float32], f64: lstmSequenceKernel[float64]}.register("LSTMSequence")
	kernels{f32: lstmSequenceBackpropKernel[float32], f64: lstmSequenceBackpropKernel[float64]}.register("LSTMSequenceBackprop")
}

// lstmStep is one element j of a row's cell at a step, from the gates'
// pre-activations z (4w, as rounded) and the incoming cell c: the gates
// and the new cell, unrounded.
func lstmStep[T tensor.Float](z []T, c T, j, w int) (i, f, g, o, next float64) {
	i, f = sigmoid64(float64(z[j])), sigmoid64(float64(z[w+j]))
	g, o = math.Tanh(float64(z[2*w+j])), sigmoid64(float64(z[3*w+j]))
	return i, f, g, o, f*float64(c) + i*g
}

func lstmSequenceKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	xz, u, h0, c0 := data[T](c.Inputs[0]), data[T](c.Inputs[1]), data[T](c.Inputs[2]), data[T](c.Inputs[3])
	ys, hT, cT, zs, hp, cp := data[T](outs[0]), data[T](outs[1]), data[T](outs[2]), data[T](outs[3]), data[T](outs[4]), data[T](outs[5])
	n, t, w := c.Inputs[0].Dim(0), c.Inputs[0].Dim(1), c.Inputs[1].Dim(0)
	deviceOf(c).Parallel(n, float64(t*(8*w*w+60*w)), func(lo, hi int) {
		h, cell := make([]T, w), make([]T, w)
		for r := lo; r < hi; r++ {
			copy(h, h0[r*w:(r+1)*w])
			copy(cell, c0[r*w:(r+1)*w])
			for s := range t {
				row := r*t + s
				copy(hp[row*w:], h)
				copy(cp[row*w:], cell)
				z := zs[4*w*row : 4*w*(row+1)]
				for j := range z {
					acc := float64(xz[4*w*row+j])
					for k, hk := range h {
						acc = math.FMA(float64(hk), float64(u[4*w*k+j]), acc)
					}
					z[j] = T(acc)
				}
				for j := range w {
					_, _, _, o, next := lstmStep(z, cell[j], j, w)
					cell[j], h[j] = T(next), T(o*math.Tanh(next))
				}
				copy(ys[row*w:], h)
			}
			copy(hT[r*w:], h)
			copy(cT[r*w:], cell)
		}
	})
}

// carryBack sets dH[k], the state's gradient carried to the step
// before, to from(k) plus row k of dg·uᵀ, dg a row's gate gradients
// (gates·w) and ut uᵀ [gates·w w]: each gate's share summed apart by
// fused multiply-adds, then added in the gates' order, as the GPU's
// threads add their partial sums (kernels.seq.carryBack).
func carryBack[T tensor.Float](dH []float64, from func(k int) float64, dg, ut []T, w int) {
	for k := range w {
		acc := from(k)
		for q := range len(dg) / w {
			part := 0.0
			for j := q * w; j < (q+1)*w; j++ {
				part = math.FMA(float64(dg[j]), float64(ut[j*w+k]), part)
			}
			acc += part
		}
		dH[k] = acc
	}
}

func lstmSequenceBackpropKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	in := make([][]T, len(c.Inputs))
	for i, x := range c.Inputs {
		in[i] = data[T](x)
	}
	ut, zs, cp, dys, dhT, dcT, dzs, dhp, dcp := in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7], in[8]
	dz, dh0, dc0 := data[T](outs[0]), data[T](outs[1]), data[T](outs[2])
	n, t, w := c.Inputs[2].Dim(0), c.Inputs[2].Dim(1), c.Inputs[2].Dim(2)
	deviceOf(c).Parallel(n, float64(t*(8*w*w+80*w)), func(lo, hi int) {
		dH, dC := make([]float64, w), make([]float64, w)
		for r := lo; r < hi; r++ {
			for j := range w {
				dH[j], dC[j] = float64(dhT[r*w+j]), float64(dcT[r*w+j])
			}
			for s := t - 1; s >= 0; s-- {
				row := r*t + s
				z, d := zs[4*w*row:4*w*(row+1)], dz[4*w*row:4*w*(row+1)]
				for j := range w {
					cv := cp[row*w+j]
					i, f, g, o, next := lstmStep(z, cv, j, w)
					tn := math.Tanh(next)
					dh := float64(dys[row*w+j]) + dH[j]
					dNext := dC[j] + dh*o*(1-tn*tn)
					for q, v := range [4]float64{dNext * g * i * (1 - i), dNext * float64(cv) * f * (1 - f), dNext * i * (1 - g*g), dh * tn * o * (1 - o)} {
						d[q*w+j] = T(v + float64(dzs[4*w*row+q*w+j]))
					}
					dC[j] = dNext*f + float64(dcp[row*w+j])
				}
				carryBack(dH, func(k int) float64 { return float64(dhp[row*w+k]) }, d, ut, w)
			}
			for j := range w {
				dh0[r*w+j], dc0[r*w+j] = T(dH[j]), T(dC[j])
			}
		}
	})
}

func init() {
	kernels{f32: gruSequenceKernel[float32], f64: gruSequenceKernel[float64]}.register("GRUSequence")
	kernels{f32: gruSequenceBackpropKernel[float32], f64: gruSequenceBackpropKernel[float64]}.register("GRUSequenceBackprop")
}

// gruStep is one element j of a row's GRU cell at a step, from the input
// terms x and recurrent terms hp (3w each, as rounded) and the incoming
// state h: the gates z, r, the candidate c and the new state, unrounded.
func gruStep[T tensor.Float](x, hp []T, h T, j, w int) (z, r, c, next float64) {
	z = sigmoid64(float64(x[j]) + float64(hp[j]))
	r = sigmoid64(float64(x[w+j]) + float64(hp[w+j]))
	c = math.Tanh(float64(x[2*w+j]) + r*float64(hp[2*w+j]))
	return z, r, c, c + z*(float64(h)-c)
}

func gruSequenceKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	xp, u, b, h0 := data[T](c.Inputs[0]), data[T](c.Inputs[1]), data[T](c.Inputs[2]), data[T](c.Inputs[3])
	ys, hT, hps, hp := data[T](outs[0]), data[T](outs[1]), data[T](outs[2]), data[T](outs[3])
	n, t, w := c.Inputs[0].Dim(0), c.Inputs[0].Dim(1), c.Inputs[1].Dim(0)
	deviceOf(c).Parallel(n, float64(t*(6*w*w+40*w)), func(lo, hi int) {
		h := make([]T, w)
		for r := lo; r < hi; r++ {
			copy(h, h0[r*w:(r+1)*w])
			for s := range t {
				row := r*t + s
				copy(hp[row*w:], h)
				rec := hps[3*w*row : 3*w*(row+1)]
				for j := range rec {
					acc := float64(b[j])
					for k, hk := range h {
						acc = math.FMA(float64(hk), float64(u[3*w*k+j]), acc)
					}
					rec[j] = T(acc)
				}
				x, prev := xp[3*w*row:3*w*(row+1)], hp[row*w:(row+1)*w]
				for j := range w {
					_, _, _, next := gruStep(x, rec, prev[j], j, w)
					h[j] = T(next)
				}
				copy(ys[row*w:], h)
			}
			copy(hT[r*w:], h)
		}
	})
}

func gruSequenceBackpropKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	in := make([][]T, len(c.Inputs))
	for i, x := range c.Inputs {
		in[i] = data[T](x)
	}
	xp, ut, hps, hp, dys, dhT, dhps, dhp := in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7]
	dxp, drec, dh0 := data[T](outs[0]), data[T](outs[1]), data[T](outs[2])
	n, t, w := c.Inputs[3].Dim(0), c.Inputs[3].Dim(1), c.Inputs[3].Dim(2)
	deviceOf(c).Parallel(n, float64(t*(6*w*w+60*w)), func(lo, hi int) {
		dH, direct := make([]float64, w), make([]float64, w)
		for r := lo; r < hi; r++ {
			for j := range w {
				dH[j] = float64(dhT[r*w+j])
			}
			for s := t - 1; s >= 0; s-- {
				row := r*t + s
				x, rec := xp[3*w*row:3*w*(row+1)], hps[3*w*row:3*w*(row+1)]
				dx, dr := dxp[3*w*row:3*w*(row+1)], drec[3*w*row:3*w*(row+1)]
				for j := range w {
					prev := hp[row*w+j]
					z, rg, cand, _ := gruStep(x, rec, prev, j, w)
					dh := float64(dys[row*w+j]) + dH[j]
					dc := dh * (1 - z) * (1 - cand*cand)
					dR := dc * float64(rec[2*w+j]) * rg * (1 - rg)
					dZ := dh * (float64(prev) - cand) * z * (1 - z)
					for q, v := range [3]float64{dZ, dR, dc} {
						dx[q*w+j] = T(v)
					}
					for q, v := range [3]float64{dZ, dR, dc * rg} {
						dr[q*w+j] = T(v + float64(dhps[3*w*row+q*w+j]))
					}
					direct[j] = dh * z
				}
				carryBack(dH, func(k int) float64 { return direct[k] + float64(dhp[row*w+k]) }, dr, ut, w)
			}
			for j := range w {
				dh0[r*w+j] = T(dH[j])
			}
		}
	})
}
