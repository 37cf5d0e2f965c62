package cpu

import (
	"fmt"
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// The bfloat16 GEMM against float64 sums of the same bfloat16 values:
// shapes with edge tiles in both directions, odd depths (a half pair),
// every transposition; the float32 sums within float32's rounding of
// the depth.
func TestGemmBF16(t *testing.T) {
	if !haveAVX512BF16 {
		t.Skip("this CPU has no AVX512_BF16 (or the build is purego): bfloat16 products run through float32")
	}
	r := tensor.NewRNG(3)
	// k = 0 comes again once the scratch pool holds panels written before.
	for _, s := range [][3]int{{3, 4, 0}, {1, 1, 1}, {12, 32, 2}, {3, 4, 0}, {13, 33, 3}, {5, 70, 17}, {40, 9, 64}, {30, 100, 255}, {20, 50, 9}} {
		m, n, k := s[0], s[1], s[2]
		for _, tr := range [][2]bool{{false, false}, {true, false}, {false, true}, {true, true}} {
			name := fmt.Sprintf("%dx%dx%d transposed %v", m, n, k, tr)
			a := tensor.ToSlice[tensor.BF16](ops.Cast(tensor.RandNormal(r, tensor.Float32, m*k), tensor.BFloat16))
			b := tensor.ToSlice[tensor.BF16](ops.Cast(tensor.RandNormal(r, tensor.Float32, k*n), tensor.BFloat16))
			c := make([]float32, m*n)
			gemmBF16(device.Host(), m, n, k, a, tr[0], b, tr[1], func(i0, j0, rows, cols int, tile []float32) {
				for r := range rows {
					copy(c[(i0+r)*n+j0:(i0+r)*n+j0+cols], tile[r*bf16NR:r*bf16NR+cols])
				}
			})
			for i := range m {
				for j := range n {
					want, mag := 0.0, 0.0
					for p := range k {
						av, bv := a[i*k+p], b[p*n+j]
						if tr[0] {
							av = a[p*m+i]
						}
						if tr[1] {
							bv = b[j*k+p]
						}
						x := float64(av.Float32()) * float64(bv.Float32())
						want += x
						mag += math.Abs(x)
					}
					if d := math.Abs(float64(c[i*n+j]) - want); d > 1e-6*mag*float64(k)+1e-30 {
						t.Fatalf("%s: c[%d,%d] = %v, want %v", name, i, j, c[i*n+j], want)
					}
				}
			}
		}
	}
}

// The micro-kernel that rounds its tile itself (sbf16gemmAVX512x12ur,
// whole tiles of A read in place) gives the bits the float32 tiles give
// rounded by storeBF16, edge tiles around it, and sums that would be
// float32 denormals (VDPBF16PS flushes them) among them.
func TestGemmBF16RoundedTiles(t *testing.T) {
	if !haveAVX512BF16 {
		t.Skip("this CPU has no AVX512_BF16 (or the build is purego)")
	}
	r := tensor.NewRNG(6)
	m, n, k := 25, 70, 64
	a := tensor.ToSlice[tensor.BF16](ops.Cast(tensor.RandNormal(r, tensor.Float32, m*k), tensor.BFloat16))
	b := tensor.ToSlice[tensor.BF16](ops.Cast(tensor.RandNormal(r, tensor.Float32, k*n), tensor.BFloat16))
	for p := range k { // [13, 40] would be a float32 denormal: 2^-70·2^-60·(about 8)
		a[13*k+p] = tensor.ToBF16(float32(math.Ldexp(float64(a[13*k+p].Float32()), -70)))
		b[p*n+40] = tensor.ToBF16(float32(math.Ldexp(float64(b[p*n+40].Float32()), -60)))
	}
	run := func(direct bool) []tensor.BF16 {
		o := make([]tensor.BF16, m*n)
		var dst []tensor.BF16
		if direct {
			dst = o
		}
		pb := packBF16(device.Host(), k, n, b, false)
		defer pb.free()
		gemmBF16Into(device.Host(), m, a, false, pb, dst, func(i0, j0, rows, cols int, tile []float32) { storeBF16(o, n, i0, j0, rows, cols, tile) })
		return o
	}
	want, got := run(false), run(true)
	if v := want[13*n+40].Float32(); v != 0 {
		t.Fatalf("the sum at [13, 40] is %v: VDPBF16PS flushes denormal results to zero, which the kernel's rounding relies on", v)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("element [%d, %d]: %#04x rounded in the kernel, %#04x by storeBF16", i/n, i%n, uint16(got[i]), uint16(want[i]))
		}
	}
}

// MatMul and FusedMatMul of bfloat16 tensors take the kernels (batched
// and broadcast too; the bias and both activations) and agree with the
// products through float32 within one rounding.
func TestMatMulBF16Kernel(t *testing.T) {
	withBF16Products(t)
	if eager.Lookup("MatMul").Kernel(device.CPU, tensor.BFloat16) == nil {
		t.Fatal("no bfloat16 MatMul kernel registered")
	}
	r := tensor.NewRNG(5)
	bf := func(s ...int) *tensor.Tensor {
		return ops.Cast(tensor.RandNormal(r, tensor.Float32, s...), tensor.BFloat16)
	}
	for _, act := range []ops.FusedActivation{ops.NoActivation, ops.ReluActivation} {
		x, w, b := bf(13, 40), bf(40, 35), bf(35)
		got := ops.Cast(ops.FusedMatMul(x, w, b, act), tensor.Float32)
		f := func(v *tensor.Tensor) *tensor.Tensor { return ops.Cast(v, tensor.Float32) }
		want := f(ops.Cast(ops.FusedMatMul(f(x), f(w), f(b), act), tensor.BFloat16))
		g, wv := tensor.ToSlice[float32](got), tensor.ToSlice[float32](want)
		for i := range wv {
			if d := math.Abs(float64(g[i] - wv[i])); d > math.Abs(float64(wv[i]))/128+1e-6 {
				t.Fatalf("FusedMatMul %v: element %d is %v, want %v", act, i, g[i], wv[i])
			}
		}
	}
	for _, c := range []struct{ a, b *tensor.Tensor }{{bf(20, 30), bf(30, 40)}, {bf(3, 7, 9), bf(3, 9, 5)}, {bf(2, 7, 9), bf(9, 33)}} {
		got := ops.Cast(ops.MatMul(c.a, c.b), tensor.Float32)
		want := ops.Cast(ops.Cast(ops.MatMul(ops.Cast(c.a, tensor.Float32), ops.Cast(c.b, tensor.Float32)), tensor.BFloat16), tensor.Float32)
		g, w := tensor.ToSlice[float32](got), tensor.ToSlice[float32](want)
		for i := range w {
			if d := math.Abs(float64(g[i] - w[i])); d > math.Abs(float64(w[i]))/128+1e-6 { // bfloat16 has 8 bits: one unit is 1/128 relative
				t.Fatalf("%v x %v: element %d is %v, want %v", c.a.Shape(), c.b.Shape(), i, g[i], w[i])
			}
		}
	}
}

// scvtbf16 rounds as tensor.ToBF16 (ties to even, infinities, NaN quiet
// with its sign) except float32 denormals, which it gives as zero;
// roundBF16, which fixes those, as ToBF16 everywhere.
func TestConvertBF16Vector(t *testing.T) {
	if !haveAVX512BF16 {
		t.Skip("this CPU has no AVX512_BF16 (or the build is purego)")
	}
	src := []float32{1, -2.5, 1.00390625 /* a tie: to even */, 1.01171875 /* a tie: up */, float32(math.Inf(1)), float32(math.Inf(-1)),
		float32(math.NaN()), -float32(math.NaN()), 3.4e38, 1e-30, -7.25, 0, float32(math.Copysign(0, -1)), 65504, 1.17549435e-38, 2e-39 /* denormal */}
	r := tensor.ToSlice[float32](tensor.RandNormal(tensor.NewRNG(1), tensor.Float32, 48))
	src = append(src, r...)
	got := make([]tensor.BF16, len(src))
	scvtbf16((*uint16)(&got[0]), &src[0], len(src))
	for i, v := range src {
		want := tensor.ToBF16(v)
		if v != 0 && math.Abs(float64(v)) < 1.1754943e-38 {
			want = tensor.ToBF16(float32(math.Copysign(0, float64(v))))
		}
		if got[i] != want {
			t.Errorf("%v: %#04x, want %#04x", v, uint16(got[i]), uint16(want))
		}
	}
	// And back: widenHalves (the vector widening for 16 at a time) gives
	// each value's float32 exactly, the tail too.
	back := make([]float32, len(got)-3)
	widenHalves(back, got[:len(back)])
	for i, v := range got[:len(back)] {
		if math.Float32bits(back[i]) != math.Float32bits(v.Float32()) {
			t.Errorf("widening %#04x: %v, want %v", uint16(v), back[i], v.Float32())
		}
	}
	roundBF16(got, src)
	for i, v := range src {
		if want := tensor.ToBF16(v); got[i] != want && !(v != v && got[i]&0x7fc0 == 0x7fc0) {
			t.Errorf("roundBF16(%v): %#04x, want %#04x", v, uint16(got[i]), uint16(want))
		}
	}
}

// bfloat16 convolutions (one channel and many, strides, dilations,
// padding, NHWC and NCHW, plain and fused with a bias and Relu) agree
// with the convolution through float32 within one rounding, and take the
// bfloat16 kernels where the CPU has them.
func TestConvBF16(t *testing.T) {
	withBF16Products(t)
	for _, op := range []string{"Conv2DGemm", "FusedConv2D"} {
		if eager.Lookup(op).Kernel(device.CPU, tensor.BFloat16) == nil {
			t.Fatalf("no bfloat16 %s kernel registered", op)
		}
	}
	r := tensor.NewRNG(4)
	bf := func(s ...int) *tensor.Tensor {
		return ops.Cast(tensor.RandNormal(r, tensor.Float32, s...), tensor.BFloat16)
	}
	f32 := func(x *tensor.Tensor) *tensor.Tensor { return ops.Cast(x, tensor.Float32) }
	for _, c := range []struct {
		name    string
		x, f, b *tensor.Tensor
		o       ops.Conv2DOpts
	}{
		{"one channel, same", bf(2, 9, 9, 1), bf(3, 3, 1, 8), bf(8), ops.Conv2DOpts{Padding: ops.Same}},
		{"channels, valid, stride 2", bf(3, 11, 10, 6), bf(3, 3, 6, 33), bf(33), ops.Conv2DOpts{Strides: [2]int{2, 2}}},
		{"dilated", bf(1, 12, 12, 4), bf(2, 3, 4, 5), bf(5), ops.Conv2DOpts{Dilations: [2]int{2, 1}, Padding: ops.Same}},
		{"NCHW", bf(2, 4, 7, 7), bf(3, 3, 4, 6), bf(6), ops.Conv2DOpts{Padding: ops.Same, Format: ops.NCHW}},
		{"NCHW, one channel", bf(3, 1, 9, 8), bf(3, 3, 1, 8), bf(8), ops.Conv2DOpts{Padding: ops.Same, Format: ops.NCHW}},
		{"NCHW, valid, stride 2, dilated", bf(2, 6, 11, 10), bf(3, 2, 6, 33), bf(33), ops.Conv2DOpts{Strides: [2]int{2, 2}, Dilations: [2]int{1, 2}, Format: ops.NCHW}},
	} {
		check := func(what string, got, want *tensor.Tensor) {
			g, w := tensor.ToSlice[float32](f32(got)), tensor.ToSlice[float32](want)
			for i := range w {
				if d := math.Abs(float64(g[i] - w[i])); d > math.Abs(float64(w[i]))/128+1e-6 {
					t.Fatalf("%s %s: element %d is %v, want %v", c.name, what, i, g[i], w[i])
				}
			}
		}
		check("Conv2D", ops.Conv2D(c.x, c.f, c.o), f32(ops.Cast(ops.Conv2D(f32(c.x), f32(c.f), c.o), tensor.BFloat16)))
		for _, act := range []ops.FusedActivation{ops.NoActivation, ops.ReluActivation} {
			check(fmt.Sprint("FusedConv2D ", act), ops.FusedConv2D(c.x, c.f, c.b, c.o, act),
				f32(ops.Cast(ops.FusedConv2D(f32(c.x), f32(c.f), f32(c.b), c.o, act), tensor.BFloat16)))
		}
	}
}

// FusedConv2DBackprop's bfloat16 kernel (NHWC and NCHW) agrees with the
// float32 kernel on the same values within one rounding of each gradient.
func TestConvBF16Gradients(t *testing.T) {
	withBF16Products(t)
	forward, backward := eager.Lookup("FusedConv2D"), eager.Lookup("FusedConv2DBackprop")
	if backward.Kernel(device.CPU, tensor.BFloat16) == nil {
		t.Fatal("no bfloat16 FusedConv2DBackprop kernel registered")
	}
	r := tensor.NewRNG(5)
	bf := func(s ...int) *tensor.Tensor {
		return ops.Cast(tensor.RandNormal(r, tensor.Float32, s...), tensor.BFloat16)
	}
	f32 := func(x *tensor.Tensor) *tensor.Tensor { return ops.Cast(x, tensor.Float32) }
	same := func(h, w, kh, kw int) ops.Conv2DGemmAttrs {
		return ops.Conv2DGemmAttrs{StrideH: 1, StrideW: 1, DilationH: 1, DilationW: 1, PadTop: kh / 2, PadBottom: kh / 2,
			PadLeft: kw / 2, PadRight: kw / 2, H: h, W: w, KH: kh, KW: kw}
	}
	valid2 := ops.Conv2DGemmAttrs{StrideH: 2, StrideW: 2, DilationH: 1, DilationW: 1, H: 11, W: 10, KH: 3, KW: 3}
	dilated := ops.Conv2DGemmAttrs{StrideH: 1, StrideW: 1, DilationH: 2, DilationW: 1, PadTop: 1, PadBottom: 1,
		PadLeft: 1, PadRight: 1, H: 7, W: 5, KH: 2, KW: 3}
	nchw := same(7, 7, 3, 3)
	nchw.Format = ops.NCHW
	nchwOne, nchwValid, nchwDilated := same(9, 9, 3, 3), valid2, dilated
	nchw14 := same(14, 14, 3, 3)
	nchwOne.Format, nchwValid.Format, nchwDilated.Format, nchw14.Format = ops.NCHW, ops.NCHW, ops.NCHW, ops.NCHW
	for _, c := range []struct {
		name    string
		x, f, b *tensor.Tensor
		a       ops.Conv2DGemmAttrs
	}{
		{"one channel, same", bf(3, 9, 9, 1), bf(3, 3, 1, 8), bf(8), same(9, 9, 3, 3)},
		{"channels, valid, stride 2", bf(3, 11, 10, 6), bf(3, 3, 6, 33), bf(33), valid2},
		{"dilated, odd spatial", bf(2, 7, 5, 4), bf(2, 3, 4, 5), bf(5), dilated},
		{"one image", bf(1, 14, 14, 32), bf(3, 3, 32, 64), bf(64), same(14, 14, 3, 3)},
		{"NCHW", bf(2, 4, 7, 7), bf(3, 3, 4, 6), bf(6), nchw},
		{"NCHW, one channel", bf(3, 1, 9, 9), bf(3, 3, 1, 8), bf(8), nchwOne},
		{"NCHW, valid, stride 2", bf(3, 6, 11, 10), bf(3, 3, 6, 33), bf(33), nchwValid},
		{"NCHW, dilated, odd spatial", bf(2, 4, 7, 5), bf(2, 3, 4, 5), bf(5), nchwDilated},
		{"NCHW, one image", bf(1, 32, 14, 14), bf(3, 3, 32, 64), bf(64), nchw14},
	} {
		for _, act := range []ops.FusedActivation{ops.NoActivation, ops.ReluActivation} {
			fa := ops.FusedConv2DAttrs{Conv: c.a, Activation: act}
			y := eager.Run1(forward, fa, c.x, c.f, c.b)
			dy := ops.Cast(tensor.RandNormal(r, tensor.Float32, y.Shape()...), tensor.BFloat16)
			for _, input := range []bool{false, true} {
				ba := ops.FusedConv2DBackpropAttrs{FusedConv2DAttrs: fa, InputGrad: input}
				got := eager.Run(backward, ba, c.x, c.f, y, dy)
				want := eager.Run(backward, ba, f32(c.x), f32(c.f), f32(y), f32(dy))
				for i := range want {
					if got[i].DType() != tensor.BFloat16 {
						t.Fatalf("%s %v: output %d is %v", c.name, act, i, got[i].DType())
					}
					g, w := tensor.ToSlice[float32](f32(got[i])), tensor.ToSlice[float32](want[i])
					scale := 0.0
					for _, v := range w {
						scale = max(scale, math.Abs(float64(v)))
					}
					for j := range w {
						if d := math.Abs(float64(g[j] - w[j])); d > math.Abs(float64(w[j]))/128+1e-5*scale {
							t.Fatalf("%s %v input_grad=%v: output %d element %d is %v, want %v", c.name, act, input, i, j, g[j], w[j])
						}
					}
				}
			}
		}
	}
}

// withBF16Products skips t on a CPU without AVX512_BF16, and otherwise
// has the bfloat16 products run on their VDPBF16PS kernels while t runs,
// where the machine's choice (useVDPBF16PS: not on Intel's cores) would
// widen them to float32, so that every machine with the instructions
// tests the kernels.
func withBF16Products(t *testing.T) {
	if !haveAVX512BF16 {
		t.Skip("this CPU has no AVX512_BF16 (or the build is purego): bfloat16 products run through float32")
	}
	if !useVDPBF16PS {
		registerBF16Products(true)
		t.Cleanup(func() { registerBF16Products(false) })
	}
}

// The machine's choice of bfloat16 products: their VDPBF16PS kernels
// registered where useVDPBF16PS says so (not on Intel's cores, where
// widening to float32 multiplies faster), none elsewhere.
func TestBF16ProductsChoice(t *testing.T) {
	for _, op := range []string{"MatMul", "FusedMatMul", "Conv2DGemm", "FusedConv2D", "FusedConv2DBackprop"} {
		if got := eager.Lookup(op).Kernel(device.CPU, tensor.BFloat16) != nil; got != useVDPBF16PS {
			t.Errorf("%s: a bfloat16 kernel registered %v, want %v (vendor %q, AVX512_BF16 %v)", op, got, useVDPBF16PS, cpuVendor(), haveAVX512BF16)
		}
	}
	if haveAVX512BF16 && (cpuVendor() == "GenuineIntel") == useVDPBF16PS {
		t.Errorf("vendor %q: useVDPBF16PS %v", cpuVendor(), useVDPBF16PS)
	}
}
