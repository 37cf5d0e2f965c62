package tensor

import (
	"math"
	"math/bits"
	"sync/atomic"
)

// RNG is a counter-based random generator (Philox4x32-10, Salmon et al.,
// "Parallel random numbers: as easy as 1, 2, 3", SC 2011). The numbers a
// draw gives depend only on the seed and on how many blocks earlier draws
// consumed, never on the device or the number of threads, so the same seed
// gives the same tensors everywhere. Safe for concurrent use: each draw
// reserves its own counter range.
type RNG struct {
	key     [2]uint32
	counter atomic.Uint64
}

// NewRNG returns a generator for seed.
func NewRNG(seed uint64) *RNG {
	return &RNG{key: [2]uint32{uint32(seed), uint32(seed >> 32)}}
}

const (
	philoxM0 = 0xD2511F53
	philoxM1 = 0xCD9E8D57
	philoxW0 = 0x9E3779B9
	philoxW1 = 0xBB67AE85
)

// philox computes the four 32-bit words of block ctr under key.
func philox(key [2]uint32, ctr uint64) [4]uint32 {
	c := [4]uint32{uint32(ctr), uint32(ctr >> 32), 0, 0}
	k0, k1 := key[0], key[1]
	for range 10 {
		hi0, lo0 := bits.Mul32(philoxM0, c[0])
		hi1, lo1 := bits.Mul32(philoxM1, c[2])
		c = [4]uint32{hi1 ^ c[1] ^ k0, lo1, hi0 ^ c[3] ^ k1, lo0}
		k0 += philoxW0
		k1 += philoxW1
	}
	return c
}

// Uint32s fills out with random words, consuming ceil(len(out)/4) blocks.
func (r *RNG) Uint32s(out []uint32) {
	blocks := uint64(len(out)+3) / 4
	base := r.counter.Add(blocks) - blocks
	for b := uint64(0); b < blocks; b++ {
		w := philox(r.key, base+b)
		copy(out[b*4:], w[:])
	}
}

// float01 maps a word to [0, 1) with 24 bits (float32) or two words with 53
// bits (float64).
func unit32(w uint32) float32 { return float32(w>>8) * (1.0 / (1 << 24)) }

func unit64(hi, lo uint32) float64 {
	return float64((uint64(hi)<<32|uint64(lo))>>11) * (1.0 / (1 << 53))
}

func (r *RNG) uniform64(n int) []float64 {
	w := make([]uint32, 2*n)
	r.Uint32s(w)
	out := make([]float64, n)
	for i := range out {
		out[i] = unit64(w[2*i], w[2*i+1])
	}
	return out
}

// RandUniform returns a Float32 or Float64 tensor of values uniform in
// [lo, hi). It panics with an *Error for other dtypes.
func RandUniform(r *RNG, dt DType, lo, hi float64, shape ...int) *Tensor {
	s := Shape(shape).Clone()
	n := checkShape("RandUniform", s, Invalid)
	switch dt {
	case Float32:
		w := make([]uint32, n)
		r.Uint32s(w)
		out := make([]float32, n)
		for i := range out {
			out[i] = float32(lo) + float32(hi-lo)*unit32(w[i])
		}
		return withShape(out, s)
	case Float64:
		u := r.uniform64(n)
		for i := range u {
			u[i] = lo + (hi-lo)*u[i]
		}
		return withShape(u, s)
	}
	Panicf("tensor", "RandUniform", ErrDType, nil, "", "dtype %v is not a float type", dt)
	return nil
}

// RandNormal returns a Float32 or Float64 tensor of standard normal values
// (Box-Muller over uniform pairs). It panics with an *Error for other dtypes.
func RandNormal(r *RNG, dt DType, shape ...int) *Tensor {
	s := Shape(shape).Clone()
	if !dt.IsFloat() {
		Panicf("tensor", "RandNormal", ErrDType, nil, "", "dtype %v is not a float type", dt)
	}
	n := checkShape("RandNormal", s, Invalid)
	u := r.uniform64(n + n%2)
	z := make([]float64, len(u))
	for i := 0; i < len(u); i += 2 {
		rad := math.Sqrt(-2 * math.Log(1-u[i])) // 1-u is in (0, 1]
		sin, cos := math.Sincos(2 * math.Pi * u[i+1])
		z[i], z[i+1] = rad*cos, rad*sin
	}
	z = z[:n]
	if dt == Float64 {
		return withShape(z, s)
	}
	f := make([]float32, n)
	for i, v := range z {
		f[i] = float32(v)
	}
	return withShape(f, s)
}

// RandBernoulli returns a tensor whose elements are 1 (true) with
// probability p and 0 (false) otherwise, of any dtype. It panics with an
// *Error if p is outside [0, 1].
func RandBernoulli(r *RNG, dt DType, p float64, shape ...int) *Tensor {
	s := Shape(shape).Clone()
	n := checkShape("RandBernoulli", s, Invalid)
	if !(p >= 0 && p <= 1) {
		Panicf("tensor", "RandBernoulli", ErrValue, nil, "", "probability %v is outside [0, 1]", p)
	}
	u := r.uniform64(n)
	if dt == Bool {
		out := make([]bool, len(u))
		for i, v := range u {
			out[i] = v < p
		}
		return withShape(out, s)
	}
	ones := make([]float64, len(u))
	for i, v := range u {
		if v < p {
			ones[i] = 1
		}
	}
	return convertFloat64s(dt, ones, s)
}

// convertFloat64s builds a tensor of dtype dt from float64 values.
func convertFloat64s(dt DType, v []float64, s Shape) *Tensor {
	switch dt {
	case Float32:
		return withShape(mapSlice(v, func(x float64) float32 { return float32(x) }), s)
	case Float64:
		return withShape(v, s)
	case Int32:
		return withShape(mapSlice(v, func(x float64) int32 { return int32(x) }), s)
	case Int64:
		return withShape(mapSlice(v, func(x float64) int64 { return int64(x) }), s)
	case Uint8:
		return withShape(mapSlice(v, func(x float64) uint8 { return uint8(x) }), s)
	case Bool:
		return withShape(mapSlice(v, func(x float64) bool { return x != 0 }), s)
	}
	Panicf("tensor", "convert", ErrDType, nil, "", "invalid dtype %v", dt)
	return nil
}

func mapSlice[A, B any](in []A, f func(A) B) []B {
	out := make([]B, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}
