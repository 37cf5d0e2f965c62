//go:build !amd64 || purego

package cpu

// Without assembly (other architectures, or the purego build tag) every
// kernel runs its Go loops: the have* flags are false, so the stand-ins
// for the assembly kernels below are never called.
var haveVecKernels, haveAVX512, haveAVX512BF16, useVDPBF16PS = false, false, false, false

// gemm runs its Go micro-kernel everywhere.
func asmGemmKernelSets[T gemmElem]() [][]gemmKernel[T] { return nil }

func sdot(x, y *float32, n int) float32 { panic("cpu: no vector kernel in this build") }

func sadd(dst, a, b *float32, n int) { panic("cpu: no vector kernel in this build") }

func ssub(dst, a, b *float32, n int) { panic("cpu: no vector kernel in this build") }

func smul(dst, a, b *float32, n int) { panic("cpu: no vector kernel in this build") }

func sdiv(dst, a, b *float32, n int) { panic("cpu: no vector kernel in this build") }

func stanh8(dst, x *float32, n int) { panic("cpu: no vector kernel in this build") }

func smuls(dst, a *float32, s float32, n int) { panic("cpu: no vector kernel in this build") }

func sadds(dst, a *float32, s float32, n int) { panic("cpu: no vector kernel in this build") }

func saxpy(dst, x *float32, a float32, n int) { panic("cpu: no vector kernel in this build") }

func dsubmul(dst, x *float64, a float64, n int) { panic("cpu: no vector kernel in this build") }

func drot(x, y *float64, c, s float64, n int) { panic("cpu: no vector kernel in this build") }

func dmulblock(dst, x, y *float64, n, ldx, ldy, ldd int) {
	panic("cpu: no vector kernel in this build")
}

func dsubmulf32(dst *float64, x *float32, a float64, n int) {
	panic("cpu: no vector kernel in this build")
}

func saddnt(dst, a, b *float32, n int) { panic("cpu: no vector kernel in this build") }

func ssum(x *float32, n int) float32 { panic("cpu: no vector kernel in this build") }

func smax(x *float32, n int) float32 { panic("cpu: no vector kernel in this build") }

func srelu(dst, x *float32, n int) { panic("cpu: no vector kernel in this build") }

func sreluGrad(dst, x, dy *float32, n int) { panic("cpu: no vector kernel in this build") }

func sexp8(dst, x *float32, n int) { panic("cpu: no vector kernel in this build") }

func ssigmoid8(dst, x *float32, n int) { panic("cpu: no vector kernel in this build") }

func ssigmoid16(dst, x *float32, n int) { panic("cpu: no vector kernel in this build") }

func stanh16(dst, x *float32, n int) { panic("cpu: no vector kernel in this build") }

func slog8(dst, x *float32, n int) { panic("cpu: no vector kernel in this build") }

func serf8(dst, x *float32, n int) { panic("cpu: no vector kernel in this build") }

func sphi8(dst, x *float32, n int) { panic("cpu: no vector kernel in this build") }

func smaxscatter2x2(out0, out1, r0, r1, src *float32, n int) int {
	panic("cpu: no vector kernel in this build")
}

func smaxpool2x2(o, r0, r1 *float32, init float32, n int) int {
	panic("cpu: no vector kernel in this build")
}

func smaxchan2x2(o, a, b, c, d *float32, init float32, n int) int {
	panic("cpu: no vector kernel in this build")
}

func smaxscatterchan2x2(oa, ob, oc, od, a, b, c, d, src *float32, n int) int {
	panic("cpu: no vector kernel in this build")
}

func strans16(dst *float32, ldd int, src *float32, lds int) {
	panic("cpu: no vector kernel in this build")
}

func strans12x16(dst *float32, src *float32, lds int) {
	panic("cpu: no vector kernel in this build")
}

func spack12T(dst *float32, src *float32, lds int, kc int) {
	panic("cpu: no vector kernel in this build")
}

func sadam8(w, m, v, grad *float32, n int, c *[9]float32) {
	panic("cpu: no vector kernel in this build")
}

func dtrans12x8(dst *float64, src *float64, lds int) {
	panic("cpu: no vector kernel in this build")
}

func sbf16gemmAVX512x12(kp int, a, b *uint32, c *float32, ldc int) {
	panic("cpu: no vector kernel in this build")
}

func scvtbf16(dst *uint16, src *float32, n int) int { panic("cpu: no vector kernel in this build") }

func sbf16gemmAVX512x12u(kp int, a *uint32, lda int, b *uint32, c *float32, ldc int) {
	panic("cpu: no vector kernel in this build")
}

func swidenbf16(dst *float32, src *uint16, n int) { panic("cpu: no vector kernel in this build") }

func sbf16gemmAVX512x12ur(kp int, a *uint32, lda int, b *uint32, c *uint16, ldc int) {
	panic("cpu: no vector kernel in this build")
}

func spairsbf16(dst *uint32, width int, src *uint16, stride, count, pairs int) {
	panic("cpu: no vector kernel in this build")
}

func swidenf16(dst *float32, src *uint16, n int) { panic("cpu: no vector kernel in this build") }

func snarrowf16(dst *uint16, src *float32, n int) { panic("cpu: no vector kernel in this build") }

func smaxchantaps(o, x *float32, taps *int, ntaps int, init float32, n int) int {
	panic("cpu: no vector kernel in this build")
}

func smaxscatterchantaps(out, x, src *float32, taps *int, ntaps, n int) int {
	panic("cpu: no vector kernel in this build")
}

func smaxcols(best *float32, first *int32, x *float32, taps *int, ntaps, n int) int {
	panic("cpu: no vector kernel in this build")
}

func spickwin(at *int32, best *float32, first *int32, taps *int, ntaps, n int) int {
	panic("cpu: no vector kernel in this build")
}

func sdwmac(dst *float32, dstStep int, src *float32, srcStep int, f *float32, c, count int) {
	panic("cpu: no vector kernel in this build")
}

func sdwwin(y, x *float32, yStep, xStep int, offs *int, taps int, f *float32, c, count int) {
	panic("cpu: no vector kernel in this build")
}

func sdwdot64(acc *float64, a *float32, aStep int, b *float32, bStep int, c, count int) {
	panic("cpu: no vector kernel in this build")
}

func strig4(dst, x *float32, n, mode int) int { panic("cpu: no vector kernel in this build") }

func satan4(dst, x *float32, n int) int { panic("cpu: no vector kernel in this build") }

func slogs4(dst, x *float32, n, mode int) int { panic("cpu: no vector kernel in this build") }

func sexpm1_4(dst, x *float32, n int) int { panic("cpu: no vector kernel in this build") }

func ssoftplus4(dst, x *float32, n int) int { panic("cpu: no vector kernel in this build") }

func sprelu(dst, x *float32, a float32, n int) { panic("cpu: no vector kernel in this build") }

func spreluslope(dst, x *float32, a float32, n int) { panic("cpu: no vector kernel in this build") }

func sselpos(dst, x, a, b *float32, n int) { panic("cpu: no vector kernel in this build") }

func srelu6(dst, x *float32, n int) { panic("cpu: no vector kernel in this build") }

func shardsigmoid(dst, x *float32, n int) { panic("cpu: no vector kernel in this build") }

func shardswish(dst, x *float32, n int) { panic("cpu: no vector kernel in this build") }

func srelu6grad(dst, x, dy *float32, n int) { panic("cpu: no vector kernel in this build") }

func shardsigmoidgrad(dst, x, dy *float32, n int) { panic("cpu: no vector kernel in this build") }

func shardswishgrad(dst, x, dy *float32, n int) { panic("cpu: no vector kernel in this build") }

func ssoftsign(dst, x *float32, n int) { panic("cpu: no vector kernel in this build") }
