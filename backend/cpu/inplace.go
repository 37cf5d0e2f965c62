package cpu

import (
	"math"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// AxpyInPlace sets dst[i] += alpha*x[i] for every element of dst (x must
// be at least as long), split across the host's workers, with an AVX2+FMA
// kernel for float32. It is not a tensor op (tensors are immutable): it is
// the kernel under in-place updates of buffers their caller owns, such as
// tape.Variable.AssignScaled.
func AxpyInPlace[T tensor.Float](dst []T, alpha T, x []T) {
	x = x[:len(dst)]
	device.Host().Parallel(len(dst), 0.25, func(lo, hi int) {
		d, s := dst[lo:hi], x[lo:hi]
		if d32, ok := any(d).([]float32); ok && haveVecKernels && len(d) > 0 {
			saxpy(&d32[0], &any(s).([]float32)[0], any(alpha).(float32), len(d))
			return
		}
		for i := range d {
			d[i] += alpha * s[i]
		}
	})
}

// AdamInPlace takes one Adam step over w, with its moments m and v and the
// gradient g (all of one length), in one pass and in place:
//
//	m = β1 m + (1-β1) g;  v = β2 v + (1-β2) g²
//	w -= lr (m/c1 / (sqrt(v/c2) + ε) + wd w)
//
// split across the host's workers. Like AxpyInPlace it is not a tensor op:
// it is the kernel under an optimizer's update of the variables it owns.
func AdamInPlace[T tensor.Float](w, m, v, g []T, p ops.AdamParams) {
	m, v, g = m[:len(w)], v[:len(w)], g[:len(w)]
	b1, b2, k1, k2 := T(p.Beta1), T(p.Beta2), T(1-p.Beta1), T(1-p.Beta2)
	ic1, ic2, eps, lr, wd := T(1/p.C1), T(1/p.C2), T(p.Eps), T(p.LR), T(p.WeightDecay)
	device.Host().Parallel(len(w), 4, func(lo, hi int) {
		for i := lo; i < hi; i++ {
			gi := g[i]
			mi := b1*m[i] + k1*gi
			vi := b2*v[i] + k2*gi*gi
			m[i], v[i] = mi, vi
			w[i] -= lr * (mi*ic1/(T(math.Sqrt(float64(vi*ic2)))+eps) + wd*w[i])
		}
	})
}
