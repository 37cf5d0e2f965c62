package cpu

import "github.com/eagerflow/eagerflow/tensor"

// BatchNorm's float32 kernels through the vector kernels (ssum, sdot,
// sadd, sadds, smul, smuls, saxpy): in NCHW each feature's run of inner
// elements takes them with the feature's constants; with the features
// last (inner 1) a task's rows go in tiles of whole rows, about 256
// elements, against the features' constants repeated over a tile. Sums go
// in float32 a run or a tile, added in float64 (a tile's every
// bnFoldTiles tiles), as LayerNorm's rows are.

// bnVecRun is the shortest run of a feature (inner > 1) the vector
// kernels take; bnFoldTiles is how many tiles a float32 partial sums
// before it is added in float64.
const (
	bnVecRun    = 16
	bnFoldTiles = 32
)

// vec32 reports whether the float32 vector kernels take v: the CPU has
// them, and the features are last or their runs long enough.
func (v *bnView) vec32() bool { return haveVecKernels && (v.inner == 1 || v.inner >= bnVecRun) }

// tile is the elements of a tile of features-last rows: a multiple of C
// near 256.
func (v *bnView) tile() int { return v.ch * max(1, 256/v.ch) }

// tiles runs body over rows [lo, hi) of features-last x in tiles of
// whole rows: elements [at, at+n).
func (v *bnView) tiles(lo, hi int, body func(at, n int)) {
	step := v.tile()
	for at, end := lo*v.ch, hi*v.ch; at < end; at += step {
		body(at, min(step, end-at))
	}
}

// tiled is vals, one per feature, times sign, repeated over a tile.
func (v *bnView) tiled(vals []float64, sign float64) []float32 {
	t := make([]float32, v.tile())
	for i := range t {
		t[i] = float32(sign * vals[i%v.ch])
	}
	return t
}

// tileSums is a task's float32 partial sums over tiles, added into its
// float64 sums acc every bnFoldTiles tiles and at the end.
type tileSums struct {
	v    *bnView
	p    []float32
	n    int
	acc  []float64
	done int
}

func (v *bnView) newTileSums(acc []float64) *tileSums {
	return &tileSums{v: v, p: make([]float32, v.tile()), acc: acc}
}

// add adds the tile's n values x into the partial sums.
func (s *tileSums) add(x *float32, n int) {
	sadd(&s.p[0], &s.p[0], x, n)
	if s.done++; s.done%bnFoldTiles == 0 {
		s.fold()
	}
}

// fold adds the partial sums into acc and clears them.
func (s *tileSums) fold() {
	for i, x := range s.p {
		s.acc[i%s.v.ch] += float64(x)
		s.p[i] = 0
	}
}

// centredSums adds into acc, for rows [lo, hi) of x, each feature's Σw
// (acc[:C]) and Σw·d (acc[C:]), d = x − mean: w is y (the backward's dy),
// or d itself where y is nil (the forward's second pass: Σd and Σd²).
// Float32 a run or tile, added in float64.
func (v *bnView) centredSums(lo, hi int, acc []float64, x, y []float32, mean []float64) {
	if v.inner == 1 {
		s0, s1 := v.newTileSums(acc[:v.ch]), v.newTileSums(acc[v.ch:])
		nm, d := v.tiled(mean, -1), make([]float32, v.tile())
		v.tiles(lo, hi, func(at, n int) {
			sadd(&d[0], &x[at], &nm[0], n)
			w := d
			if y != nil {
				w = y[at:]
			}
			s0.add(&w[0], n)
			smul(&d[0], &d[0], &w[0], n)
			s1.add(&d[0], n)
		})
		s0.fold()
		s1.fold()
		return
	}
	d := make([]float32, v.inner)
	v.rows(lo, hi, func(e int) {
		for f := range v.ch {
			at := e + f*v.inner
			sadds(&d[0], &x[at], -float32(mean[f]), v.inner)
			w := d
			if y != nil {
				w = y[at:]
			}
			acc[f] += float64(ssum(&w[0], v.inner))
			acc[v.ch+f] += float64(sdot(&w[0], &d[0], v.inner))
		}
	})
}

func batchNorm32(v *bnView, outs []*tensor.Tensor, x, gamma, beta, y []float32, eps float64) {
	mean := v.sums(1, func(lo, hi int, acc []float64) {
		if v.inner == 1 {
			s := v.newTileSums(acc)
			v.tiles(lo, hi, func(at, n int) { s.add(&x[at], n) })
			s.fold()
			return
		}
		v.rows(lo, hi, func(e int) {
			for f := range v.ch {
				acc[f] += float64(ssum(&x[e+f*v.inner], v.inner))
			}
		})
	})
	for f := range mean {
		mean[f] /= v.count // NaN for no elements, as the ops' mean
	}
	// The second pass sums d = x − mean and d²: the mean is corrected by
	// Σd/M and the variance is Σd² − (Σd)²/M (the corrected two-pass
	// formula), so a feature of equal values, whose float32 first pass
	// missed their mean by an ulp, has exactly their mean and variance 0
	// (it normalizes to exactly β and gives γ no gradient).
	sums := v.sums(2, func(lo, hi int, acc []float64) { v.centredSums(lo, hi, acc, x, nil, mean) })
	variance := sums[v.ch:] // Σd², less (Σd)²/M below
	for f := range mean {
		if v.count > 0 {
			shift := sums[f] / v.count
			mean[f] += shift
			variance[f] = max(variance[f]-shift*sums[f], 0)
		}
	}
	scale, offset := scaled(v, outs, gamma, beta, mean, variance, eps)
	if v.inner == 1 {
		nm, sc, of := v.tiled(mean, -1), v.tiled(scale, 1), v.tiled(offset, 1)
		v.each(1, func(lo, hi int) {
			v.tiles(lo, hi, func(at, n int) {
				sadd(&y[at], &x[at], &nm[0], n)
				smul(&y[at], &y[at], &sc[0], n)
				sadd(&y[at], &y[at], &of[0], n)
			})
		})
		return
	}
	v.each(1, func(lo, hi int) {
		v.rows(lo, hi, func(e int) {
			for f := range v.ch {
				at := e + f*v.inner
				sadds(&y[at], &x[at], -float32(mean[f]), v.inner)
				smuls(&y[at], &y[at], float32(scale[f]), v.inner)
				sadds(&y[at], &y[at], float32(offset[f]), v.inner)
			}
		})
	})
}

func batchNormBackprop32(v *bnView, x, gamma, dy, dx, dgamma, dbeta []float32, mean []float64, eps float64) {
	// Per feature: Σdy, then Σdy·(x − mean).
	sums := v.sums(2, func(lo, hi int, acc []float64) { v.centredSums(lo, hi, acc, x, dy, mean) })
	gr, k2, k3 := gradCoefficients(v, v.c, gamma, dgamma, dbeta, sums, eps)
	// dx = γ·r·dy + k3 + k2·(x − mean).
	if v.inner == 1 {
		grt, k2t, k3t, nm := v.tiled(gr, 1), v.tiled(k2, 1), v.tiled(k3, 1), v.tiled(mean, -1)
		v.each(1, func(lo, hi int) {
			d := make([]float32, v.tile())
			v.tiles(lo, hi, func(at, n int) {
				smul(&dx[at], &dy[at], &grt[0], n)
				sadd(&dx[at], &dx[at], &k3t[0], n)
				sadd(&d[0], &x[at], &nm[0], n)
				smul(&d[0], &d[0], &k2t[0], n)
				sadd(&dx[at], &dx[at], &d[0], n)
			})
		})
		return
	}
	v.each(1, func(lo, hi int) {
		d := make([]float32, v.inner)
		v.rows(lo, hi, func(e int) {
			for f := range v.ch {
				at := e + f*v.inner
				smuls(&dx[at], &dy[at], float32(gr[f]), v.inner)
				sadds(&dx[at], &dx[at], float32(k3[f]), v.inner)
				sadds(&d[0], &x[at], -float32(mean[f]), v.inner)
				saxpy(&dx[at], &d[0], float32(k2[f]), v.inner)
			}
		})
	})
}
