// Package toydata generates the small datasets the examples train on, so
// that they need no download.
package toydata

import (
	"math"

	"github.com/eagerflow/eagerflow/tensor"
)

// Spirals returns n points of two interleaved spirals with Gaussian noise
// drawn from seed: x [n 2] Float32 and labels [n] Int32 (0 or 1,
// alternating).
func Spirals(n int, seed uint64) (*tensor.Tensor, *tensor.Tensor) {
	noise := tensor.ToSlice[float32](tensor.RandNormal(tensor.NewRNG(seed), tensor.Float32, n, 2))
	xs, labels := make([]float32, 2*n), make([]int32, n)
	for i := range labels {
		c := i % 2
		r := float64(i/2) / float64(n/2) * 5
		a := r*1.75 + float64(c)*math.Pi
		xs[2*i] = float32(r*math.Cos(a)) + 0.12*noise[2*i]
		xs[2*i+1] = float32(r*math.Sin(a)) + 0.12*noise[2*i+1]
		labels[i] = int32(c)
	}
	return tensor.FromSlice(xs, n, 2), tensor.FromSlice(labels)
}
