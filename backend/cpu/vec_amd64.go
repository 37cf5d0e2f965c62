//go:build amd64 && !purego

package cpu

// The vector kernels of vec_amd64.s (AVX2): float32 arithmetic, sums and
// Relu; the float64 updates of the factorizations, dsubmul, dsubmulf32,
// drot and dmulblock. Their callers check haveVecKernels and pass n > 0.

//go:noescape
func sdot(x, y *float32, n int) float32

//go:noescape
func sadd(dst, a, b *float32, n int)

//go:noescape
func ssub(dst, a, b *float32, n int)

//go:noescape
func smul(dst, a, b *float32, n int)

//go:noescape
func sdiv(dst, a, b *float32, n int)

//go:noescape
func smuls(dst, a *float32, s float32, n int)

//go:noescape
func sadds(dst, a *float32, s float32, n int)

//go:noescape
func saxpy(dst, x *float32, a float32, n int)

//go:noescape
func dsubmul(dst, x *float64, a float64, n int)

//go:noescape
func drot(x, y *float64, c, s float64, n int)

//go:noescape
func dsubmulf32(dst *float64, x *float32, a float64, n int)

//go:noescape
func dmulblock(dst, x, y *float64, n, ldx, ldy, ldd int)

//go:noescape
func saddnt(dst, a, b *float32, n int)

//go:noescape
func ssum(x *float32, n int) float32

//go:noescape
func smax(x *float32, n int) float32

//go:noescape
func srelu(dst, x *float32, n int)

//go:noescape
func sreluGrad(dst, x, dy *float32, n int)

// sadam8 is Adam's step over n float32 elements (a multiple of 8), c the
// constants adamInPlace lists (AVX2).
//
//go:noescape
func sadam8(w, m, v, grad *float32, n int, c *[9]float32)

//go:noescape
func sdwmac(dst *float32, dstStep int, src *float32, srcStep int, f *float32, c, count int)

//go:noescape
func sdwwin(y, x *float32, yStep, xStep int, offs *int, taps int, f *float32, c, count int)

//go:noescape
func sdwdot64(acc *float64, a *float32, aStep int, b *float32, bStep int, c, count int)
