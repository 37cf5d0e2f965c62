package cpu

import "math"

// Float32 exp and tanh for the elementwise kernels. They compute in
// float64 with short, shallow polynomials and round once to float32, which
// is both more accurate and faster than github.com/chewxy/math32's versions
// (TestFastMath32 bounds the error at 1 ulp over the whole range).

const (
	// exp32 overflows above expMax32 and is 0 below expMin32 (half the
	// smallest float32 denormal, 2^-150).
	expMax32 = 88.72283935546875
	expMin32 = -103.97282
	// Rounding a float64 to an integer by adding and subtracting 1.5*2^52.
	roundMagic = 6755399441055744.0
	expScale   = 32 / math.Ln2 // y*expScale counts 32nds of ln 2
)

// exp2Table[j] is 2^(j/32).
var exp2Table = func() (t [32]float64) {
	for j := range t {
		t[j] = math.Exp2(float64(j) / 32)
	}
	return t
}()

// expF64 returns e^y for y within float32's exp range ([expMin32,
// expMax32]) to about 1e-12 relative: y = (32m + j) ln2/32 + r with |r| <=
// ln2/64, so e^y = 2^m 2^(j/32) e^r and e^r is a degree-4 polynomial
// (remainder r^5/120 < 1.3e-12), evaluated in Estrin's form to keep the
// dependency chain short.
func expF64(y float64) float64 {
	nf := (y*expScale + roundMagic) - roundMagic
	n := int64(nf)
	r := y - nf*(math.Ln2/32)
	r2 := r * r
	p := (1 + r) + r2*((0.5+r*(1.0/6))+r2*(1.0/24))
	return p * exp2Table[n&31] * math.Float64frombits(uint64((n>>5)+1023)<<52)
}

// exp32 is e^x for float32.
func exp32(x float32) float32 {
	switch {
	case x != x:
		return x
	case x > expMax32:
		return float32(math.Inf(1))
	case x < expMin32:
		return 0
	}
	return float32(expF64(float64(x)))
}

// vecPrefix runs kern (when ok) over the longest prefix of o whose length
// is a multiple of width, its lanes, and returns that length: the caller's
// scalar code does the rest.
func vecPrefix(o, x []float32, ok bool, width int, kern func(dst, x *float32, n int)) int {
	n := len(o) / width * width
	if !ok || n == 0 {
		return 0
	}
	kern(&o[0], &x[0], n)
	return n
}

// expCost32 is the cost per element of exp32Loop and sigmoid32Loop, for
// sharding: about 0.6 ns with the AVX2 kernels, 5 without.
var expCost32 = map[bool]float64{true: 1, false: 8}[haveVecKernels]

// exp32Loop sets o[i] = e^x[i]: blocks of eight with the AVX2 kernel sexp8
// (float32 lanes, within 2 ulp), the rest with exp32 (within 1 ulp).
func exp32Loop(o, x []float32) {
	x = x[:len(o)]
	for i := vecPrefix(o, x, haveVecKernels, 8, sexp8); i < len(o); i++ {
		o[i] = exp32(x[i])
	}
}

// log32Loop sets o[i] = ln x[i]: blocks of eight with the AVX2 kernel
// slog8 (within 2 ulp), the rest in float64 (math32.Log, which the Log op
// used before, is wrong for denormal inputs: -88.03 for 1e-45, not
// -103.28).
func log32Loop(o, x []float32) {
	x = x[:len(o)]
	for i := vecPrefix(o, x, haveVecKernels, 8, slog8); i < len(o); i++ {
		o[i] = float32(math.Log(float64(x[i])))
	}
}

// erf32Loop sets o[i] = erf(x[i]): blocks of eight with the AVX2 kernel
// serf8 (within 2 ulp), the rest in float64 (within 1 ulp).
func erf32Loop(o, x []float32) {
	x = x[:len(o)]
	for i := vecPrefix(o, x, haveVecKernels, 8, serf8); i < len(o); i++ {
		o[i] = float32(math.Erf(float64(x[i])))
	}
}

// sigmoid32Loop sets o[i] = 1/(1+e^-x[i]): blocks of eight with the AVX2
// kernel ssigmoid8 (within 2 ulp), the rest with sigmoid32.
func sigmoid32Loop(o, x []float32) {
	x = x[:len(o)]
	start := vecPrefix(o, x, haveAVX512, 16, ssigmoid16)
	start += vecPrefix(o[start:], x[start:], haveVecKernels, 8, ssigmoid8)
	for i := start; i < len(o); i++ {
		o[i] = sigmoid32(x[i])
	}
}

// tanhCost32 is tanh32Loop's cost per element for sharding: about 0.7 ns
// with the AVX2 kernel, 7 without.
var tanhCost32 = map[bool]float64{true: 1, false: 10}[haveVecKernels]

// tanh32Loop sets o[i] = tanh(x[i]) for float32. Blocks of sixteen go to
// the AVX-512 kernel stanh16 where the CPU has it, of eight to the AVX2
// kernel stanh8 (the same method in float32 lanes, within 2 ulp). The rest, and every
// element without the kernel, use float64: the odd Taylor series (to x^7)
// near zero and (1-e)/(1+e) with e = e^(-2|x|) beyond (the cancellation in
// 1-e costs a few of float64's bits, not float32's), within 1 ulp; tanh
// rounds to ±1 in float32 from |x| = 9.1. The loop has no call in it, so
// the processor overlaps the elements' long dependency chains.
func tanh32Loop(o, x []float32) {
	x = x[:len(o)]
	start := vecPrefix(o, x, haveAVX512, 16, stanh16)
	start += vecPrefix(o[start:], x[start:], haveVecKernels, 8, stanh8)
	for i := start; i < len(o); i++ {
		v := x[i]
		a := math.Abs(float64(v))
		var t float64
		switch {
		case v != v:
			o[i] = v
			continue
		case a < 0.0625:
			w := float64(v)
			z := w * w
			o[i] = float32(w * (1 + z*((-1.0/3+z*(2.0/15))+z*z*(-17.0/315))))
			continue
		case a >= 9.1:
			t = 1
		default:
			e := expF64(-2 * a)
			t = (1 - e) / (1 + e)
		}
		if v < 0 {
			t = -t
		}
		o[i] = float32(t)
	}
}
