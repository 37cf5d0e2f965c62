package cpu

import (
	"math"
	"sync"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/hostupdate"
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
// split across the host's workers, g multiplied by p.GradScale first and
// by p.GradFactor (a scalar in host memory) next, each product rounded.
// Like AxpyInPlace it is not a tensor op: it is the kernel under an
// optimizer's update of the variables it owns.
func AdamInPlace[T tensor.Float](w, m, v, g []T, p ops.AdamParams) {
	m, v, g = m[:len(w)], v[:len(w)], g[:len(w)]
	sc := gradScalerOf[T](p.GradScale, p.GradFactor)
	device.Host().Parallel(len(w), 4, func(lo, hi int) {
		sc.each(g, lo, hi, func(lo, hi int, g []T) { adamLoop(w[lo:hi], m[lo:hi], v[lo:hi], g, p) })
	})
}

// adamLoop is AdamInPlace over one shard: float32 runs of 8 through the
// AVX2 kernel, which does the same operations as the Go loop in the same
// order (each product rounded: the conversions keep the compiler from
// fusing them, at any GOAMD64 level), so the two agree bit for bit.
func adamLoop[T tensor.Float](w, m, v, g []T, p ops.AdamParams) {
	m, v, g = m[:len(w)], v[:len(w)], g[:len(w)]
	b1, b2, k1, k2 := T(p.Beta1), T(p.Beta2), T(1-p.Beta1), T(1-p.Beta2)
	ic1, ic2, eps, lr, wd := T(1/p.C1), T(1/p.C2), T(p.Eps), T(p.LR), T(p.WeightDecay)
	i := 0
	if w32, ok := any(w).([]float32); ok && haveVecKernels && len(w) >= 8 {
		c := [9]float32{float32(b1), float32(k1), float32(b2), float32(k2), float32(ic1), float32(ic2), float32(eps), float32(lr), float32(wd)}
		i = len(w) &^ 7
		sadam8(&w32[0], &any(m).([]float32)[0], &any(v).([]float32)[0], &any(g).([]float32)[0], i, &c)
	}
	for ; i < len(w); i++ {
		gi := g[i]
		mi := T(b1*m[i]) + T(k1*gi)
		vi := T(b2*v[i]) + T(T(k2*gi)*gi)
		m[i], v[i] = mi, vi
		w[i] -= T(lr * (T(T(mi*ic1)/(T(math.Sqrt(float64(T(vi*ic2))))+eps)) + T(wd*w[i])))
	}
}

// MomentumInPlace takes one step of SGD with momentum over w with its
// velocity vel and the gradient g (all of one length), in one pass and in
// place, split across the host's workers: ops.MomentumParams' formula,
// each product and sum rounded on its own.
func MomentumInPlace[T tensor.Float](w, vel, g []T, p ops.MomentumParams) {
	vel, g = vel[:len(w)], g[:len(w)]
	mu, lr := T(p.Momentum), T(p.LR)
	sc := gradScalerOf[T](p.GradScale, p.GradFactor)
	device.Host().Parallel(len(w), 2, func(lo, hi int) {
		sc.each(g, lo, hi, func(lo, hi int, g []T) {
			for i := lo; i < hi; i++ {
				gi := g[i-lo]
				v := T(mu*vel[i]) + gi
				vel[i] = v
				if p.Nesterov {
					v = gi + T(mu*v)
				}
				w[i] -= T(lr * v)
			}
		})
	})
}

// RMSPropInPlace takes one RMSProp step over w with its mean square s,
// its momentum mom (nil where p.Momentum is 0) and the gradient g (all of
// one length), in one pass and in place, split across the host's workers:
// ops.RMSPropParams' formula, each operation rounded on its own.
func RMSPropInPlace[T tensor.Float](w, s, mom, g []T, p ops.RMSPropParams) {
	s, g = s[:len(w)], g[:len(w)]
	if p.Momentum > 0 {
		mom = mom[:len(w)]
	}
	rho, k, eps, mu, lr := T(p.Rho), T(1-p.Rho), T(p.Eps), T(p.Momentum), T(p.LR)
	sc := gradScalerOf[T](p.GradScale, p.GradFactor)
	device.Host().Parallel(len(w), 4, func(lo, hi int) {
		sc.each(g, lo, hi, func(lo, hi int, g []T) {
			for i := lo; i < hi; i++ {
				gi := g[i-lo]
				si := T(rho*s[i]) + T(T(gi*gi)*k)
				s[i] = si
				u := gi / (T(math.Sqrt(float64(si))) + eps)
				if p.Momentum > 0 {
					u = T(mu*mom[i]) + u
					mom[i] = u
				}
				w[i] -= T(lr * u)
			}
		})
	})
}

// gradScaler multiplies a step's gradient by the constant s (the steps'
// GradScale, a loss scale's inverse) and then f (GradFactor, a clip's),
// each product rounded to T, a chunk at a time into a pooled buffer the
// size of a core's first-level cache, so that the step reads the scaled
// gradient while it is there and no scaled copy is made; on says whether
// there is anything to multiply by.
type gradScaler[T tensor.Float] struct {
	s, f T
	on   bool
}

// gradChunk is the elements gradScaler scales at a time.
const gradChunk = 2048

var gradChunks32, gradChunks64 = sync.Pool{New: func() any { return new([gradChunk]float32) }}, sync.Pool{New: func() any { return new([gradChunk]float64) }}

// gradScalerOf is the scaler of gs (0 is 1) and the scalar f (in host
// memory, rounded to T; nil is 1).
func gradScalerOf[T tensor.Float](gs float64, f *tensor.Tensor) gradScaler[T] {
	if gs == 0 {
		gs = 1
	}
	sc := gradScaler[T]{s: T(gs), f: 1, on: gs != 1 || f != nil}
	switch {
	case f == nil:
	case f.DType() == tensor.Float32:
		sc.f = T(data[float32](f)[0])
	case f.DType() == tensor.Float64:
		sc.f = T(data[float64](f)[0])
	default:
		sc.f = T(f.Float())
	}
	return sc
}

// each calls step over [lo, hi) of the gradient g with g's elements
// there scaled: step(a, b, gs) is given gs[i-a] for element i of [a, b),
// g[lo:hi] itself where there is nothing to multiply by, else pooled
// chunks of it scaled.
func (sc gradScaler[T]) each(g []T, lo, hi int, step func(a, b int, gs []T)) {
	if !sc.on {
		step(lo, hi, g[lo:hi])
		return
	}
	var buf []T
	switch p := any(&buf).(type) {
	case *[]float32:
		c := gradChunks32.Get().(*[gradChunk]float32)
		defer gradChunks32.Put(c)
		*p = c[:]
	case *[]float64:
		c := gradChunks64.Get().(*[gradChunk]float64)
		defer gradChunks64.Put(c)
		*p = c[:]
	}
	for a := lo; a < hi; a += gradChunk {
		b := min(a+gradChunk, hi)
		c := buf[:b-a]
		for i, x := range g[a:b] {
			c[i] = T(x*sc.s) * sc.f
		}
		step(a, b, c)
	}
}

func init() {
	hostupdate.Axpy32, hostupdate.Axpy64 = AxpyInPlace[float32], AxpyInPlace[float64]
	hostupdate.Adam32 = func(w, m, v, g []float32, p hostupdate.AdamParams) { AdamInPlace(w, m, v, g, ops.AdamParams(p)) }
	hostupdate.Adam64 = func(w, m, v, g []float64, p hostupdate.AdamParams) { AdamInPlace(w, m, v, g, ops.AdamParams(p)) }
}
