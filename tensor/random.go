package tensor

import (
	"math"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/philox"
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

// reserve takes from the stream the blocks that words words need and
// returns the first.
func (r *RNG) reserve(words int) uint64 {
	blocks := uint64(words+3) / 4
	return r.counter.Add(blocks) - blocks
}

// Key returns the key of r's stream (its seed's two halves).
func (r *RNG) Key() [2]uint32 {
	if r == nil {
		panicf("tensor", "RNG.Key", ErrAttr, nil, "", "the RNG is nil; make one with tensor.NewRNG(seed)")
	}
	return r.key
}

// Reserve takes from r's stream the blocks of four words that words words
// need, as a draw does, and returns the first: where a draw made later
// from that block on (RandBernoulliAt) reads what a draw made now would
// have. A Bernoulli draw of n values takes 2n words.
func (r *RNG) Reserve(words int) uint64 {
	if r == nil {
		panicf("tensor", "RNG.Reserve", ErrAttr, nil, "", "the RNG is nil; make one with tensor.NewRNG(seed)")
	}
	if words < 0 {
		panicf("tensor", "RNG.Reserve", ErrValue, nil, "", "negative word count %d", words)
	}
	return r.reserve(words)
}

// wordsAt returns n words of the stream from block base on.
func (r *RNG) wordsAt(base uint64, n int) []uint32 {
	return wordsOf(r.key, base, n)
}

// wordsOf returns n words of key's stream from block base on.
func wordsOf(key [2]uint32, base uint64, n int) []uint32 {
	out := make([]uint32, n)
	philox.Fill(key, base, out)
	return out
}

// Uint32s fills out with random words, consuming ceil(len(out)/4) blocks.
func (r *RNG) Uint32s(out []uint32) {
	copy(out, r.wordsAt(r.reserve(len(out)), len(out)))
}

// unit32 maps a word to [0, 1) with 24 bits (float32), unit64 two words
// with 53 bits (float64).
func unit32(w uint32) float32 { return float32(w>>8) * (1.0 / (1 << 24)) }

func unit64(hi, lo uint32) float64 {
	return float64((uint64(hi)<<32|uint64(lo))>>11) * (1.0 / (1 << 53))
}

// uniform64At returns n float64 values in [0, 1), two words each, from
// block base on.
func (r *RNG) uniform64At(base uint64, n int) []float64 {
	return uniform64Of(r.key, base, n)
}

// uniform64Of is uniform64At of key's stream.
func uniform64Of(key [2]uint32, base uint64, n int) []float64 {
	w := wordsOf(key, base, 2*n)
	out := make([]float64, n)
	for i := range out {
		out[i] = unit64(w[2*i], w[2*i+1])
	}
	return out
}

// drawn makes a tensor of dtype dt and shape s on dev from the next words
// words of r's stream: a device that draws itself (device.RandomFiller)
// computes draw there; elsewhere host computes the values (row-major
// bytes) from the first block, and they are copied to dev.
func drawn(op string, dev device.Device, r *RNG, dt DType, s Shape, words int, draw device.RandomDraw, host func(base uint64) []byte) *Tensor {
	if r == nil {
		panicf("tensor", op, ErrAttr, nil, "", "the RNG is nil; make one with tensor.NewRNG(seed)")
	}
	return drawnAt(op, dev, r.key, r.reserve(words), dt, s, draw, host)
}

// drawnAt is drawn from block base of key's stream.
func drawnAt(op string, dev device.Device, key [2]uint32, base uint64, dt DType, s Shape, draw device.RandomDraw, host func(base uint64) []byte) *Tensor {
	f, ok := dev.(device.RandomFiller)
	if !ok || dt.IsHalf() && draw.Dist != device.Bernoulli {
		// The half types' uniforms and normals are drawn in float32 and
		// rounded, on the host; their Bernoulli draws (0 and 1, exact)
		// on the device.
		return fromHostOn(op, dev, dt, s, host(base))
	}
	t, err := Empty(dev, dt, s)
	if err != nil {
		panic(allocError(op, dt, s, err))
	}
	draw.Key, draw.Counter, draw.DType = key, base, dt.String()
	if err := f.FillRandom(t.buf, s.NumElements(), draw); err != nil {
		t.Release()
		panicf("tensor", op, ErrDeviceFailed, nil, "", "%s: %v", dev.Name(), err)
	}
	return t
}

// RandUniform returns a tensor of a float dtype of values uniform in [lo,
// hi), on the default device (the half types drawn as Float32's and
// rounded). It panics with an *Error for other
// dtypes.
func RandUniform(r *RNG, dt DType, lo, hi float64, shape ...int) *Tensor {
	return RandUniformOn(device.Default(), r, dt, lo, hi, shape...)
}

// RandUniformOn is RandUniform on dev, which computes the values itself
// where it can (a GPU does), the same numbers as the host's.
func RandUniformOn(dev device.Device, r *RNG, dt DType, lo, hi float64, shape ...int) *Tensor {
	s := Shape(shape).Clone()
	if !dt.IsFloat() {
		panicf("tensor", "RandUniform", ErrDType, nil, "", "dtype %v is not a float type (RandInt draws integers)", dt)
	}
	n := checkShapeOn("RandUniform", dev, s, dt)
	words := n // float32: one word per value
	if dt == Float64 {
		words = 2 * n
	}
	return drawn("RandUniform", dev, r, dt, s, words, device.RandomDraw{Dist: device.Uniform, A: lo, B: hi}, func(base uint64) []byte {
		if dt != Float64 {
			w := r.wordsAt(base, n)
			out := make([]float32, n)
			for i := range out {
				out[i] = float32(lo) + float32(hi-lo)*unit32(w[i])
			}
			return float32Bytes(dt, out)
		}
		u := r.uniform64At(base, n)
		for i := range u {
			u[i] = lo + (hi-lo)*u[i]
		}
		return asBytes(u)
	})
}

// RandNormal returns a tensor of a float dtype of standard normal values
// (Box-Muller over uniform pairs), on the default device. It panics with
// an *Error for other dtypes.
func RandNormal(r *RNG, dt DType, shape ...int) *Tensor {
	return RandNormalOn(device.Default(), r, dt, shape...)
}

// RandNormalOn is RandNormal on dev, which computes the values itself
// where it can (a GPU does: the same uniforms as the host's, its
// logarithm, sine and cosine within a few ulps of Go's).
func RandNormalOn(dev device.Device, r *RNG, dt DType, shape ...int) *Tensor {
	s := Shape(shape).Clone()
	if !dt.IsFloat() {
		panicf("tensor", "RandNormal", ErrDType, nil, "", "dtype %v is not a float type", dt)
	}
	n := checkShapeOn("RandNormal", dev, s, dt)
	pairs := (n + 1) / 2
	return drawn("RandNormal", dev, r, dt, s, 4*pairs, device.RandomDraw{Dist: device.Normal}, func(base uint64) []byte {
		u := r.uniform64At(base, 2*pairs)
		z := make([]float64, len(u))
		for i := 0; i < len(u); i += 2 {
			rad := math.Sqrt(-2 * math.Log(1-u[i])) // 1-u is in (0, 1]
			sin, cos := math.Sincos(2 * math.Pi * u[i+1])
			z[i], z[i+1] = rad*cos, rad*sin
		}
		return float64Bytes(dt, z[:n])
	})
}

// RandInt returns a tensor of an integer dtype (Int32, Int64, Uint8) of
// values uniform in [lo, hi), on the default device, as torch.randint and
// NumPy's Generator.integers draw them (token ids, labels, indices): each
// value lo + ⌊u·(hi-lo)/2^64⌋ for u two words of the stream (a bias below
// (hi-lo)/2^64). It panics with an *Error for another dtype, hi not above
// lo, bounds the dtype does not hold, a nil RNG or a bad shape.
func RandInt(r *RNG, dt DType, lo, hi int64, shape ...int) *Tensor {
	return RandIntOn(device.Default(), r, dt, lo, hi, shape...)
}

// RandIntOn is RandInt on dev. The values are drawn on the host (the
// same numbers for every device) and copied there.
func RandIntOn(dev device.Device, r *RNG, dt DType, lo, hi int64, shape ...int) *Tensor {
	s := Shape(shape).Clone()
	var least, most int64
	switch dt {
	case Int32:
		least, most = math.MinInt32, math.MaxInt32
	case Int64:
		least, most = math.MinInt64, math.MaxInt64
	case Uint8:
		least, most = 0, math.MaxUint8
	default:
		panicf("tensor", "RandInt", ErrDType, nil, "", "dtype %v is not an integer type (Int32, Int64 or Uint8)", dt)
	}
	if hi <= lo || lo < least || hi-1 > most {
		panicf("tensor", "RandInt", ErrValue, nil, "", "the range [%d, %d) is empty or not within %v's [%d, %d]", lo, hi, dt, least, most)
	}
	if r == nil {
		panicf("tensor", "RandInt", ErrAttr, nil, "", "the RNG is nil; make one with tensor.NewRNG(seed)")
	}
	n := checkShapeOn("RandInt", dev, s, dt)
	w := r.wordsAt(r.reserve(2*n), 2*n)
	span := uint64(hi) - uint64(lo) // hi - lo, which may not fit an int64
	v := make([]int64, n)
	for i := range v {
		high, _ := bits.Mul64(uint64(w[2*i])<<32|uint64(w[2*i+1]), span)
		v[i] = int64(uint64(lo) + high)
	}
	var b []byte
	switch dt {
	case Int32:
		b = asBytes(mapSlice(v, func(x int64) int32 { return int32(x) }))
	case Uint8:
		b = asBytes(mapSlice(v, func(x int64) uint8 { return uint8(x) }))
	default:
		b = asBytes(v)
	}
	return fromHostOn("RandInt", dev, dt, s, b)
}

// RandBernoulli returns a tensor whose elements are 1 (true) with
// probability p and 0 (false) otherwise, of any dtype, on the default
// device. It panics with an *Error if p is outside [0, 1].
func RandBernoulli(r *RNG, dt DType, p float64, shape ...int) *Tensor {
	return RandBernoulliOn(device.Default(), r, dt, p, shape...)
}

// RandBernoulliOn is RandBernoulli on dev, which computes the values
// itself where it can (a GPU does), the same as the host's.
func RandBernoulliOn(dev device.Device, r *RNG, dt DType, p float64, shape ...int) *Tensor {
	if r == nil {
		panicf("tensor", "RandBernoulli", ErrAttr, nil, "", "the RNG is nil; make one with tensor.NewRNG(seed)")
	}
	return bernoulli("RandBernoulli", dev, r.key, func(n int) uint64 { return r.reserve(2 * n) }, dt, p, shape)
}

// RandBernoulliAt is RandBernoulliOn drawn from block base of the stream
// of key (an RNG's Key) without reserving it: the values RandBernoulliOn
// gives where its draw starts at base (RNG.Reserve of 2n words, for n
// values, returned it).
func RandBernoulliAt(dev device.Device, key [2]uint32, base uint64, dt DType, p float64, shape ...int) *Tensor {
	return bernoulli("RandBernoulliAt", dev, key, func(int) uint64 { return base }, dt, p, shape)
}

// bernoulli draws n = shape's elements from key's stream at the block
// at(n) gives, after checking the arguments.
func bernoulli(op string, dev device.Device, key [2]uint32, at func(n int) uint64, dt DType, p float64, shape []int) *Tensor {
	s := Shape(shape).Clone()
	if !dt.Valid() {
		panicf("tensor", op, ErrDType, nil, "", "invalid dtype %v", dt)
	}
	n := checkShapeOn(op, dev, s, dt)
	if !(p >= 0 && p <= 1) {
		panicf("tensor", op, ErrValue, nil, "", "probability %v is outside [0, 1]", p)
	}
	if cpu, ok := dev.(*device.CPUDevice); ok {
		return bernoulliHost(op, cpu, key, at(n), dt, p, s, n)
	}
	return drawnAt(op, dev, key, at(n), dt, s, device.RandomDraw{Dist: device.Bernoulli, A: p}, func(base uint64) []byte {
		u := uniform64Of(key, base, n)
		ones := make([]float64, n)
		for i, v := range u {
			if v < p {
				ones[i] = 1
			}
		}
		return float64Bytes(dt, ones)
	})
}

// bernoulliHost is bernoulli's draw of n values on the host, written in
// place by the host's workers: value e from the two words of block base +
// e/2 (0-1 or 2-3 as e is even or odd), 1 where their top 53 bits m, a
// uniform m·2⁻⁵³, are below p, that is where m < ⌈p·2⁵³⌉. The values
// uniform64Of's comparison gives, without its copies.
func bernoulliHost(op string, dev *device.CPUDevice, key [2]uint32, base uint64, dt DType, p float64, s Shape, n int) *Tensor {
	t, err := Empty(dev, dt, s)
	if err != nil {
		panic(allocError(op, dt, s, err))
	}
	b, size := t.hostBytes(), dt.Size()
	one := float64Bytes(dt, []float64{1})
	f32, f64 := dt == Float32, dt == Float64
	out32, out64 := asFloat32s(b, f32), asFloat64s(b, f64)
	thresh := uint64(math.Ceil(p * (1 << 53)))
	// put writes value e from its two words.
	put := func(e int, hi, lo uint32) {
		keep := (uint64(hi)<<32|uint64(lo))>>11 < thresh
		switch {
		case keep:
			copy(b[e*size:(e+1)*size], one)
		default:
			clear(b[e*size : (e+1)*size])
		}
	}
	dev.Parallel(n, 16, func(lo, hi int) {
		// The blocks of up to 128 values at a time (philox.Fill: sixteen
		// blocks to a vector), from the block of the first.
		var words [256]uint32
		for e := lo; e < hi; {
			s := e &^ 1 // the first value of e's block
			end := min(hi, s+len(words)/2)
			philox.Fill(key, base+uint64(s/2), words[:4*((end-s+1)/2)])
			switch w := words[:]; {
			case f32:
				for ; e < end; e++ {
					j := 2 * (e - s)
					out32[e] = float32(bit((uint64(w[j])<<32|uint64(w[j+1]))>>11 < thresh))
				}
			case f64:
				for ; e < end; e++ {
					j := 2 * (e - s)
					out64[e] = float64(bit((uint64(w[j])<<32|uint64(w[j+1]))>>11 < thresh))
				}
			default:
				for ; e < end; e++ {
					j := 2 * (e - s)
					put(e, w[j], w[j+1])
				}
			}
		}
	})
	return t
}

// bit is 1 where b holds, else 0.
func bit(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// asFloat32s and asFloat64s view b as values where ok (else nil).
func asFloat32s(b []byte, ok bool) []float32 {
	if !ok || len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

func asFloat64s(b []byte, ok bool) []float64 {
	if !ok || len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*float64)(unsafe.Pointer(&b[0])), len(b)/8)
}

// float32Bytes is v (float32 values) converted to float dtype dt, as
// row-major bytes.
func float32Bytes(dt DType, v []float32) []byte {
	switch dt {
	case BFloat16:
		return asBytes(mapSlice(v, ToBF16))
	case Float16:
		return asBytes(mapSlice(v, ToF16))
	case Float8E4M3:
		return asBytes(mapSlice(v, ToF8E4M3))
	case Float8E5M2:
		return asBytes(mapSlice(v, ToF8E5M2))
	}
	return asBytes(v)
}

// float64Bytes is v converted to dtype dt, as row-major bytes.
func float64Bytes(dt DType, v []float64) []byte {
	switch dt {
	case Float32:
		return asBytes(mapSlice(v, func(x float64) float32 { return float32(x) }))
	case Float64:
		return asBytes(v)
	case Int32:
		return asBytes(mapSlice(v, func(x float64) int32 { return int32(x) }))
	case Int64:
		return asBytes(mapSlice(v, func(x float64) int64 { return int64(x) }))
	case Uint8:
		return asBytes(mapSlice(v, func(x float64) uint8 { return uint8(x) }))
	case Bool:
		return asBytes(mapSlice(v, func(x float64) bool { return x != 0 }))
	case BFloat16:
		return asBytes(mapSlice(v, func(x float64) BF16 { return ToBF16(float32(x)) }))
	case Float16:
		return asBytes(mapSlice(v, func(x float64) F16 { return ToF16(float32(x)) }))
	case Float8E4M3, Float8E5M2:
		return float32Bytes(dt, mapSlice(v, func(x float64) float32 { return float32(x) }))
	}
	panicf("tensor", "convert", ErrDType, nil, "", "invalid dtype %v", dt)
	return nil
}

func mapSlice[A, B any](in []A, f func(A) B) []B {
	out := make([]B, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}
