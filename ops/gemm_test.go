package ops

import (
	"testing"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/approx"
	"github.com/eagerflow/eagerflow/tensor"
)

// The assembly micro-kernels and the pure-Go loops must agree on every
// shape class: whole tiles, ragged edges, k beyond one block.
func TestGemmKernelsMatchPureGo(t *testing.T) {
	if !haveGemmKernels {
		t.Skip("no gemm micro-kernel in this build or on this CPU; the pure-Go path is tested by the op tests")
	}
	sizes := [][3]int{{4, 16, 1}, {4, 8, 3}, {5, 17, 7}, {8, 33, 300}, {13, 70, 257}, {1, 64, 9}, {64, 64, 64}, {5, 24, 9}, {9, 27, 40}, {4, 8, 0}}
	for _, s := range sizes {
		m, n, k := s[0], s[1], s[2]
		rng := tensor.NewRNG(uint64(m*n*k + 1))
		a32 := tensor.ToSlice[float32](tensor.RandUniform(rng, tensor.Float32, -1, 1, m*k))
		b32 := tensor.ToSlice[float32](tensor.RandUniform(rng, tensor.Float32, -1, 1, k*n))
		a64 := tensor.ToSlice[float64](tensor.RandUniform(rng, tensor.Float64, -1, 1, m*k))
		b64 := tensor.ToSlice[float64](tensor.RandUniform(rng, tensor.Float64, -1, 1, k*n))
		asm32, asm64 := make([]float32, m*n), make([]float64, m*n)
		gemm(device.Host(), m, n, k, a32, false, b32, asm32)
		gemm(device.Host(), m, n, k, a64, false, b64, asm64)
		haveGemmKernels = false
		go32, go64 := make([]float32, m*n), make([]float64, m*n)
		gemm(device.Host(), m, n, k, a32, false, b32, go32)
		gemm(device.Host(), m, n, k, a64, false, b64, go64)
		haveGemmKernels = true
		if d := approx.Diff(asm32, go32, 1e-5); d != "" {
			t.Errorf("float32 %dx%dx%d: %s", m, n, k, d)
		}
		if d := approx.Diff(asm64, go64, 1e-13); d != "" {
			t.Errorf("float64 %dx%dx%d: %s", m, n, k, d)
		}
	}
}

// The vector kernels against plain loops, over lengths around their block
// sizes.
func TestVectorKernelsMatchPureGo(t *testing.T) {
	if !haveGemmKernels {
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
		// Guard bands catch writes past the end.
		dst := make([]float32, n+2)
		dst[n], dst[n+1] = 7, 7
		sadd(&dst[0], &x[0], &y[0], n)
		for i := range x {
			if dst[i] != x[i]+y[i] {
				t.Fatalf("sadd n=%d: element %d = %v, want %v", n, i, dst[i], x[i]+y[i])
			}
		}
		if dst[n] != 7 || dst[n+1] != 7 {
			t.Fatalf("sadd n=%d wrote past the end", n)
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
