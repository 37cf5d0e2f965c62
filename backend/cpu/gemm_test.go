package cpu

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/approx"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Every micro-kernel this CPU runs (each instruction set's, so the AVX2
// kernels are tested on AVX-512 machines too) against its pure-Go twin, on
// the same packed panels, both storing and accumulating, with B read packed
// (ldb = nr) and in place (ldb > nr).
func TestGemmKernelsMatchGoTwin(t *testing.T) {
	testKernelTwins[float32](t, 1e-5)
	testKernelTwins[float64](t, 1e-13)
}

func testKernelTwins[T tensor.Float](t *testing.T, tol float64) {
	var ks []gemmKernel[T]
	for _, set := range asmGemmKernelSets[T]() {
		ks = append(ks, set...)
	}
	if len(ks) == 0 {
		t.Skip("no assembly gemm kernels in this build or on this CPU; gemm's own tests cover the Go kernel")
	}
	dt := tensor.DTypeOf[T]()
	for _, k := range ks {
		for _, kc := range []int{1, 2, 7, 256} {
			for _, ldb := range []int{k.nr, k.nr + 5} {
				for _, acc := range []bool{false, true} {
					rng := tensor.NewRNG(uint64(kc*ldb + k.mr))
					a := tensor.ToSlice[T](tensor.RandUniform(rng, dt, -1, 1, kc*k.mr))
					b := tensor.ToSlice[T](tensor.RandUniform(rng, dt, -1, 1, kc*ldb))
					ldc := k.nr + 3
					c0 := tensor.ToSlice[T](tensor.RandUniform(rng, dt, -1, 1, k.mr*ldc))
					got, want := slices.Clone(c0), slices.Clone(c0)
					k.run(kc, a, b, ldb, got, ldc, acc)
					goKernel(k.mr, k.nr, kc, a, b, ldb, want, ldc, acc)
					if d := approx.Diff(got, want, tol); d != "" {
						t.Errorf("%s kc=%d ldb=%d accumulate=%v: %s", k.name, kc, ldb, acc, d)
					}
				}
			}
		}
	}
}

// gemm with every kernel (assembly and Go) against a float64 triple loop,
// over shapes that exercise whole and ragged tiles, depth beyond one block,
// B packed and in place, the row and the column split, and transposes.
func TestGemmAgainstReference(t *testing.T) {
	testGemmReference[float32](t, 1e-4)
	testGemmReference[float64](t, 1e-12)
	testGemmReference[int32](t, 0)
}

func testGemmReference[T gemmElem](t *testing.T, tol float64) {
	var kernels []gemmKernel[T]
	for _, set := range asmGemmKernelSets[T]() {
		kernels = append(kernels, set...)
	}
	kernels = append(kernels, gemmKernel[T]{name: "go4x16", mr: 4, nr: 16}, gemmKernel[T]{name: "go1x16", mr: 1, nr: 16})
	sizes := [][3]int{{1, 1, 1}, {1, 64, 9}, {4, 16, 1}, {5, 17, 7}, {12, 32, 3}, {13, 70, 257}, {40, 33, 300}, {64, 64, 64}, {100, 5, 20}, {3, 300, 513}}
	for _, kern := range kernels {
		for _, s := range sizes {
			m, n, k := s[0], s[1], s[2]
			rng := tensor.NewRNG(uint64(m*n*k + 1))
			a := gemmTestValues[T](rng, m*k)
			b := gemmTestValues[T](rng, k*n)
			want := make([]float64, m*n)
			for i := 0; i < m; i++ {
				for j := 0; j < n; j++ {
					for p := 0; p < k; p++ {
						want[i*n+j] += float64(a[i*k+p]) * float64(b[p*n+j])
					}
				}
			}
			for _, ta := range []bool{false, true} {
				for _, tb := range []bool{false, true} {
					aa, bb := a, b
					if ta {
						aa = transposed(a, m, k)
					}
					if tb {
						bb = transposed(b, k, n)
					}
					got := make([]T, m*n)
					for i := range got {
						got[i] = 99 // gemm overwrites c
					}
					gemmWith(device.Host(), kern, m, n, k, aa, ta, bb, tb, got, false)
					g64 := make([]float64, len(got))
					for i, v := range got {
						g64[i] = float64(v)
					}
					if d := approx.Diff(g64, want, tol); d != "" {
						t.Errorf("%s %dx%dx%d transA=%v transB=%v: %s", kern.name, m, n, k, ta, tb, d)
					}
				}
			}
		}
	}
}

// gemmTestValues returns n values in [-1, 1], or small integers for an
// integer T (so products are exact).
func gemmTestValues[T gemmElem](rng *tensor.RNG, n int) []T {
	u := tensor.ToSlice[float64](tensor.RandUniform(rng, tensor.Float64, -1, 1, n))
	out := make([]T, n)
	for i, v := range u {
		switch any(out).(type) {
		case []float32, []float64:
			out[i] = T(v)
		default:
			out[i] = T(int(v*3) + 3)
		}
	}
	return out
}

// transposed returns the [cols, rows] transpose of a row-major [rows, cols] x.
func transposed[T any](x []T, rows, cols int) []T {
	out := make([]T, len(x))
	for i := 0; i < rows; i++ {
		for j := 0; j < cols; j++ {
			out[j*rows+i] = x[i*cols+j]
		}
	}
	return out
}

// The vector kernels against plain loops, over lengths around their block
// sizes.
func TestVectorKernelsMatchPureGo(t *testing.T) {
	if !haveVecKernels {
		t.Skip("no vector kernels in this build or on this CPU")
	}
	for _, n := range []int{1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 1023} {
		rng := tensor.NewRNG(uint64(n))
		x := tensor.ToSlice[float32](tensor.RandUniform(rng, tensor.Float32, -1, 1, n))
		y := tensor.ToSlice[float32](tensor.RandUniform(rng, tensor.Float32, -1, 1, n))
		want := 0.0
		for i := range x {
			want += float64(x[i]) * float64(y[i])
		}
		if got := sdot(&x[0], &y[0], n); !approx.Close(float64(got), want, 1e-5) {
			t.Errorf("sdot n=%d: %v, want %v", n, got, want)
		}
		if got, want := smax(&x[0], n), slices.Max(x); got != want {
			t.Errorf("smax n=%d: %v, want %v", n, got, want)
		}
		// Guard bands catch writes past the end.
		dst := make([]float32, n+2)
		dst[n], dst[n+1] = 7, 7
		for _, k := range []struct {
			name string
			f    func(dst, a, b *float32, n int)
			op   func(a, b float32) float32
		}{
			{"sadd", sadd, func(a, b float32) float32 { return a + b }},
			{"ssub", ssub, func(a, b float32) float32 { return a - b }},
			{"smul", smul, func(a, b float32) float32 { return a * b }},
			{"sdiv", sdiv, func(a, b float32) float32 { return a / b }},
		} {
			k.f(&dst[0], &x[0], &y[0], n)
			for i := range x {
				if want := k.op(x[i], y[i]); dst[i] != want {
					t.Fatalf("%s n=%d: element %d = %v, want %v", k.name, n, i, dst[i], want)
				}
			}
			if dst[n] != 7 || dst[n+1] != 7 {
				t.Fatalf("%s n=%d wrote past the end", k.name, n)
			}
		}
		dst[n], dst[n+1] = 7, 7
		copy(dst, y)
		saxpy(&dst[0], &x[0], -0.75, n)
		for i := range x {
			if want := y[i] + -0.75*x[i]; !approx.Close(float64(dst[i]), float64(want), 1e-6) {
				t.Fatalf("saxpy n=%d: element %d = %v, want %v", n, i, dst[i], want)
			}
		}
		if dst[n] != 7 || dst[n+1] != 7 {
			t.Fatalf("saxpy n=%d wrote past the end", n)
		}
		for _, k := range []struct {
			name string
			f    func(dst, a *float32, s float32, n int)
			op   func(a, s float32) float32
		}{
			{"smuls", smuls, func(a, s float32) float32 { return a * s }},
			{"sadds", sadds, func(a, s float32) float32 { return a + s }},
		} {
			dst[n], dst[n+1] = 7, 7
			k.f(&dst[0], &x[0], 1.25, n)
			for i := range x {
				if dst[i] != k.op(x[i], 1.25) {
					t.Fatalf("%s n=%d: element %d = %v, want %v", k.name, n, i, dst[i], k.op(x[i], 1.25))
				}
			}
			if dst[n] != 7 || dst[n+1] != 7 {
				t.Fatalf("%s n=%d wrote past the end", k.name, n)
			}
		}
	}
}

// dsubmul and dsubmulf32 equal Go's unfused a·x then difference bit for
// bit (the factorizations' CPU–GPU agreement rests on it), and write
// nothing past n.
func TestDsubmulMatchesGoBitForBit(t *testing.T) {
	if !haveVecKernels {
		t.Skip("no vector kernels in this build or on this CPU")
	}
	for _, n := range []int{1, 3, 4, 5, 7, 8, 9, 12, 13, 31, 33} {
		rng := tensor.NewRNG(uint64(n) + 100)
		x := tensor.ToSlice[float64](tensor.RandUniform(rng, tensor.Float64, -1, 1, n))
		y := tensor.ToSlice[float64](tensor.RandUniform(rng, tensor.Float64, -1, 1, n))
		a := 0.1 + 1/3.0
		dst := append(slices.Clone(y), 7, 7)
		dsubmul(&dst[0], &x[0], a, n)
		for i := range x {
			if want := y[i] - a*x[i]; dst[i] != want {
				t.Fatalf("n=%d: element %d = %v, want %v", n, i, dst[i], want)
			}
		}
		if dst[n] != 7 || dst[n+1] != 7 {
			t.Fatalf("n=%d wrote past the end", n)
		}
		x32 := tensor.ToSlice[float32](tensor.RandUniform(rng, tensor.Float32, -1, 1, n))
		dst = append(slices.Clone(y), 7, 7)
		dsubmulf32(&dst[0], &x32[0], a, n)
		for i, v := range x32 {
			if want := y[i] - a*float64(v); dst[i] != want {
				t.Fatalf("dsubmulf32 n=%d: element %d = %v, want %v", n, i, dst[i], want)
			}
		}
		if dst[n] != 7 || dst[n+1] != 7 {
			t.Fatalf("dsubmulf32 n=%d wrote past the end", n)
		}
	}
}

// dmulblock's 4×8 block equals sums over k ascending of unfused
// products, bit for bit, for several k, leading dimensions wider than
// the block, and writes nothing around the block.
func TestDmulblockMatchesGoBitForBit(t *testing.T) {
	if !haveVecKernels {
		t.Skip("no vector kernels in this build or on this CPU")
	}
	for _, k := range []int{1, 3, 17} {
		const ld = 11
		ldx := k + 3
		rng := tensor.NewRNG(uint64(k) + 200)
		x := tensor.ToSlice[float64](tensor.RandUniform(rng, tensor.Float64, -1, 1, 4*ldx))
		y := tensor.ToSlice[float64](tensor.RandUniform(rng, tensor.Float64, -1, 1, k*ld))
		dst := make([]float64, 5*ld)
		for i := range dst {
			dst[i] = 7
		}
		dmulblock(&dst[0], &x[0], &y[0], k, ldx, ld, ld)
		for i := range 5 {
			for j := range ld {
				want := 7.0
				if i < 4 && j < 8 {
					want = 0
					for c := range k {
						want += x[i*ldx+c] * y[c*ld+j]
					}
				}
				if dst[i*ld+j] != want {
					t.Fatalf("k=%d: [%d][%d] = %v, want %v", k, i, j, dst[i*ld+j], want)
				}
			}
		}
	}
}

// AxpyInPlace over lengths that run inline and split across workers, for
// both float dtypes.
func TestAxpyInPlace(t *testing.T) {
	for _, n := range []int{0, 1, 9, 100003} {
		x32, d32 := make([]float32, n), make([]float32, n)
		x64, d64 := make([]float64, n), make([]float64, n)
		for i := range x32 {
			x32[i], d32[i] = float32(i%13), float32(i%7)
			x64[i], d64[i] = float64(i%13), float64(i%7)
		}
		AxpyInPlace(d32, 0.5, x32)
		AxpyInPlace(d64, 0.5, x64)
		for i := range d32 {
			want := float64(i%7) + 0.5*float64(i%13)
			if float64(d32[i]) != want || d64[i] != want {
				t.Fatalf("n=%d element %d: %v and %v, want %v", n, i, d32[i], d64[i], want)
			}
		}
	}
}

// addF32 on outputs long enough to stream, starting at every alignment
// within a vector, against a plain loop; and ssum against a float64 sum.
func TestStreamingAddAndSum(t *testing.T) {
	if !haveVecKernels {
		t.Skip("no vector kernels in this build or on this CPU")
	}
	n := streamMin + 45
	rng := tensor.NewRNG(9)
	a := tensor.ToSlice[float32](tensor.RandUniform(rng, tensor.Float32, -1, 1, n+8))
	b := tensor.ToSlice[float32](tensor.RandUniform(rng, tensor.Float32, -1, 1, n+8))
	out := make([]float32, n+8)
	for off := 0; off < 8; off++ {
		o := out[off : off+n]
		addF32(o, a[off:off+n], b[off:off+n])
		for i := range o {
			if o[i] != a[off+i]+b[off+i] {
				t.Fatalf("offset %d: element %d = %v, want %v", off, i, o[i], a[off+i]+b[off+i])
			}
		}
	}
	for _, m := range []int{1, 7, 63, 64, 65, 1000, n} {
		want := 0.0
		for _, v := range a[:m] {
			want += float64(v)
		}
		if got := ssum(&a[0], m); !approx.Close(float64(got), want, 1e-4) {
			t.Errorf("ssum of %d: %v, want %v", m, got, want)
		}
	}
}

// srelu and sreluGrad against the Go loops' rules, NaN (kept, bit for bit)
// and -0 (made +0) included,
// over lengths around the vector width.
func TestReluKernels(t *testing.T) {
	if !haveVecKernels {
		t.Skip("no vector kernels in this build or on this CPU")
	}
	nan := float32(math.NaN())
	for _, n := range []int{1, 7, 8, 9, 17, 100} {
		x := make([]float32, n)
		dy := make([]float32, n)
		for i := range x {
			x[i] = []float32{-1.5, 0, 2, nan, float32(math.Copysign(0, -1)), 1e-30, -3}[i%7]
			dy[i] = float32(i) + 0.5
		}
		o, g := make([]float32, n+1), make([]float32, n+1)
		o[n], g[n] = 7, 7
		srelu(&o[0], &x[0], n)
		sreluGrad(&g[0], &x[0], &dy[0], n)
		for i, v := range x {
			want, wantG := float32(0), float32(0)
			if v > 0 {
				want, wantG = v, dy[i]
			}
			if v != v {
				want = v // NaN propagates; its gradient is 0
			}
			if math.Float32bits(o[i]) != math.Float32bits(want) || g[i] != wantG {
				t.Fatalf("n=%d x=%v: relu %v grad %v, want %v and %v", n, v, o[i], g[i], want, wantG)
			}
		}
		if o[n] != 7 || g[n] != 7 {
			t.Fatalf("n=%d: wrote past the end", n)
		}
	}
}

// MatMul with a contracting dimension of 1 (an outer product, which skips
// the GEMM) against the products written out: both dtypes, every
// transpose, a batch, and a size that shards over the workers.
func TestMatMulOuterProduct(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		for _, s := range [][3]int{{1, 1, 1}, {5, 7, 1}, {300, 260, 1}, {3, 4, 2}} {
			batch, m, n := s[2], s[0], s[1]
			rng := tensor.NewRNG(uint64(m*n + batch))
			a64 := tensor.ToSlice[float64](tensor.RandNormal(rng, tensor.Float64, batch*m))
			b64 := tensor.ToSlice[float64](tensor.RandNormal(rng, tensor.Float64, batch*n))
			for _, ta := range []bool{false, true} {
				for _, tb := range []bool{false, true} {
					ashape, bshape := []int{batch, m, 1}, []int{batch, 1, n}
					if ta {
						ashape = []int{batch, 1, m}
					}
					if tb {
						bshape = []int{batch, n, 1}
					}
					a := ops.Cast(tensor.FromSlice(a64, ashape...), dt)
					b := ops.Cast(tensor.FromSlice(b64, bshape...), dt)
					got := tensor.ToSlice[float64](ops.Cast(ops.MatMulT(a, b, ta, tb), tensor.Float64))
					av, bv := tensor.ToSlice[float64](ops.Cast(a, tensor.Float64)), tensor.ToSlice[float64](ops.Cast(b, tensor.Float64))
					for p := 0; p < batch; p++ {
						for i := 0; i < m; i++ {
							for j := 0; j < n; j++ {
								want := av[p*m+i] * bv[p*n+j]
								if g := got[(p*m+i)*n+j]; math.Abs(g-want) > 1e-6*math.Abs(want) {
									t.Fatalf("%v %v ta=%v tb=%v: [%d %d %d] = %v, want %v", dt, s, ta, tb, p, i, j, g, want)
								}
							}
						}
					}
				}
			}
		}
	}
}

// packBT32's AVX-512 transpose equals its Go twin for every column count
// of a 32-column panel, on strided rows, bit for bit.
func TestPackBT32MatchesGo(t *testing.T) {
	if !haveAVX512 {
		t.Skip("no AVX-512 on this CPU: packBT32 runs its Go loop")
	}
	const ldb = 37
	b := make([]float32, 32*ldb)
	for i := range b {
		b[i] = float32(i%97) - 40.5
	}
	for cols := 0; cols <= 32; cols++ {
		got, want := make([]float32, 16*32), make([]float32, 16*32)
		for i := range got {
			got[i], want[i] = -1, -1 // every element must be written
		}
		packBT32(got, b, ldb, cols)
		packBT32Go(want, b, ldb, cols)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%d columns: element %d (step %d, column %d) = %v, want %v", cols, i, i/32, i%32, got[i], want[i])
			}
		}
	}
}

// packA's AVX-512 paths for a full 12-row panel (packA12 from A's rows,
// float32 in 12x16 blocks and float64 in 12x8; packA12T's spack12T from a
// transposed float32 A) equal the scalar packing for every depth around
// their blocks and the four-column unroll, on strided rows, bit for bit,
// writing every packed element and none past them.
func TestPackA12MatchesGo(t *testing.T) {
	if !haveAVX512 {
		t.Skip("no AVX-512 on this CPU: packA runs its Go loops")
	}
	checkPackA12Rows[float32](t, 53)
	checkPackA12Rows[float64](t, 29)
	const lda = 53
	a := make([]float32, 53*lda+12)
	for i := range a {
		a[i] = float32(i%89) - 30.25
	}
	for kc := 0; kc <= lda; kc++ {
		got, want := filled[float32](12*kc+4, -1), filled[float32](12*kc+4, -1)
		packA12T(got, a, lda, kc)
		for p := range kc {
			copy(want[p*12:p*12+12], a[p*lda:])
		}
		samePanel(t, fmt.Sprintf("transposed, depth %d", kc), got, want)
	}
}

// checkPackA12Rows checks packA12 on E from rows lda elements apart, for
// every depth up to lda.
func checkPackA12Rows[E float32 | float64](t *testing.T, lda int) {
	t.Helper()
	a := make([]E, 12*lda)
	for i := range a {
		a[i] = E(i%89) - 30.25
	}
	for kc := 0; kc <= lda; kc++ {
		got, want := filled[E](12*kc+4, -1), filled[E](12*kc+4, -1)
		if !packA12(got, a, lda, kc) {
			t.Fatalf("packA12 declined %T on an AVX-512 CPU", a)
		}
		for p := range kc {
			for r := range 12 {
				want[p*12+r] = a[r*lda+p]
			}
		}
		samePanel(t, fmt.Sprintf("%T rows, depth %d", a, kc), got, want)
	}
}

// filled is n copies of v.
func filled[E float32 | float64](n int, v E) []E {
	s := make([]E, n)
	for i := range s {
		s[i] = v
	}
	return s
}

// samePanel fails t at the first element of got that differs from want's
// bits (a packed 12-row panel: column and row named).
func samePanel[E float32 | float64](t *testing.T, what string, got, want []E) {
	t.Helper()
	for i := range want {
		if math.Float64bits(float64(got[i])) != math.Float64bits(float64(want[i])) {
			t.Fatalf("%s: element %d (column %d, row %d) = %v, want %v", what, i, i/12, i%12, got[i], want[i])
		}
	}
}

// transposeInto equals the element-by-element transpose for shapes around
// its 16x16 blocks, in float32 (AVX-512 blocks where there are) and
// float64 (Go alone).
func TestTransposeInto(t *testing.T) {
	for _, sh := range [][2]int{{1, 1}, {16, 16}, {17, 33}, {196, 64}, {5, 40}, {48, 3}} {
		rows, cols := sh[0], sh[1]
		src := make([]float32, rows*cols)
		for i := range src {
			src[i] = float32(i) * 0.5
		}
		got := make([]float32, rows*cols)
		transposeInto(got, src, rows, cols)
		src64 := make([]float64, rows*cols)
		for i, v := range src {
			src64[i] = float64(v)
		}
		got64 := make([]float64, rows*cols)
		transposeInto(got64, src64, rows, cols)
		for i := range rows {
			for j := range cols {
				if want := src[i*cols+j]; got[j*rows+i] != want || got64[j*rows+i] != float64(want) {
					t.Fatalf("%dx%d: element (%d, %d) = %v (float64 %v), want %v", rows, cols, j, i, got[j*rows+i], got64[j*rows+i], want)
				}
			}
		}
	}
}
