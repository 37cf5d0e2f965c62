package cpu

import (
	"math"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// LSTMCell and LSTMCellBackprop (ops/lstm.go): a pass over the rows, each
// element's four gates read, computed in float64 and rounded once.

func init() {
	kernels{f32: lstmCellKernel[float32], f64: lstmCellKernel[float64]}.register("LSTMCell")
	kernels{f32: lstmCellBackpropKernel[float32], f64: lstmCellBackpropKernel[float64]}.register("LSTMCellBackprop")
}

// lstmGates64 returns σ(i), σ(f), tanh(g), σ(o) of row r's element j of z
// [n 4h].
func lstmGates64[T tensor.Float](z []T, r, j, h int) (i, f, g, o float64) {
	row := z[4*h*r : 4*h*(r+1)]
	return sigmoid64(float64(row[j])), sigmoid64(float64(row[h+j])), math.Tanh(float64(row[2*h+j])), sigmoid64(float64(row[3*h+j]))
}

func lstmCellKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	z, cell, h, next := data[T](c.Inputs[0]), data[T](c.Inputs[1]), data[T](outs[0]), data[T](outs[1])
	n, w := c.Inputs[1].Dim(0), c.Inputs[1].Dim(1)
	deviceOf(c).Parallel(n, float64(40*w), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			for j := range w {
				i, f, g, o := lstmGates64(z, r, j, w)
				cn := f*float64(cell[r*w+j]) + i*g
				next[r*w+j], h[r*w+j] = T(cn), T(o*math.Tanh(cn))
			}
		}
	})
}

func lstmCellBackpropKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	z, cell, dh, dc := data[T](c.Inputs[0]), data[T](c.Inputs[1]), data[T](c.Inputs[2]), data[T](c.Inputs[3])
	dz, dcell := data[T](outs[0]), data[T](outs[1])
	n, w := c.Inputs[1].Dim(0), c.Inputs[1].Dim(1)
	deviceOf(c).Parallel(n, float64(60*w), func(lo, hi int) {
		for r := lo; r < hi; r++ {
			row := dz[4*w*r : 4*w*(r+1)]
			for j := range w {
				i, f, g, o := lstmGates64(z, r, j, w)
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
