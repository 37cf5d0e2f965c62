package ops

import (
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/tensor"
)

// Block sizes for gemm: a kc x nc panel of B (256 x 512 float32 = 512 KiB at
// most, L2-sized) is reused by every row block of A.
const (
	gemmKC = 256
	gemmNC = 512
)

// gemm computes c = a·b for row-major a: [m, k], b: [k, n], c: [m, n],
// splitting rows of c across the device's workers. c is overwritten.
func gemm[T tensor.Float | int32 | int64 | uint8](dev *device.CPUDevice, m, n, k int, a, b, c []T) {
	clear(c[:m*n])
	if m == 0 || n == 0 || k == 0 {
		return
	}
	dev.Parallel((m+3)/4, float64(4*n*k), func(lo, hi int) {
		r0, r1 := lo*4, min(hi*4, m)
		for kk := 0; kk < k; kk += gemmKC {
			ke := min(kk+gemmKC, k)
			for jj := 0; jj < n; jj += gemmNC {
				je := min(jj+gemmNC, n)
				i := r0
				for ; i+4 <= r1; i += 4 {
					j := microKernel(c, a, b, i, n, k, kk, ke, jj, je)
					gemmRows4(c, a, b, i, n, k, kk, ke, j, je)
				}
				for ; i < r1; i++ {
					crow := c[i*n+jj : i*n+je]
					for p := kk; p < ke; p++ {
						axpy(crow, a[i*k+p], b[p*n+jj:p*n+je])
					}
				}
			}
		}
	})
}

// microKernel runs the assembly micro-kernel over the columns of [jj, je)
// it covers in whole tiles and returns the first column left for Go code
// (jj when there is no kernel for T or this CPU).
func microKernel[T tensor.Float | int32 | int64 | uint8](c, a, b []T, i, n, k, kk, ke, jj, je int) int {
	if !haveGemmKernels || ke == kk {
		return jj
	}
	j := jj
	switch cv := any(c).(type) {
	case []float32:
		av, bv := any(a).([]float32), any(b).([]float32)
		for ; j+16 <= je; j += 16 {
			sgemm4x16(ke-kk, &av[i*k+kk], k, &bv[kk*n+j], n, &cv[i*n+j], n)
		}
		if j+8 <= je {
			sgemm4x8(ke-kk, &av[i*k+kk], k, &bv[kk*n+j], n, &cv[i*n+j], n)
			j += 8
		}
	case []float64:
		av, bv := any(a).([]float64), any(b).([]float64)
		for ; j+8 <= je; j += 8 {
			dgemm4x8(ke-kk, &av[i*k+kk], k, &bv[kk*n+j], n, &cv[i*n+j], n)
		}
	}
	return j
}

// gemmRows4 updates four rows of c with the block [kk, ke) x [jj, je).
func gemmRows4[T tensor.Float | int32 | int64 | uint8](c, a, b []T, i, n, k, kk, ke, jj, je int) {
	if jj >= je {
		return
	}
	w := je - jj
	c0 := c[i*n+jj : i*n+je]
	c1 := c[(i+1)*n+jj : (i+1)*n+je][:w]
	c2 := c[(i+2)*n+jj : (i+2)*n+je][:w]
	c3 := c[(i+3)*n+jj : (i+3)*n+je][:w]
	for p := kk; p < ke; p++ {
		a0, a1, a2, a3 := a[i*k+p], a[(i+1)*k+p], a[(i+2)*k+p], a[(i+3)*k+p]
		br := b[p*n+jj : p*n+je][:w]
		for j, bv := range br {
			c0[j] += a0 * bv
			c1[j] += a1 * bv
			c2[j] += a2 * bv
			c3[j] += a3 * bv
		}
	}
}

func axpy[T tensor.Float | int32 | int64 | uint8](dst []T, s T, x []T) {
	x = x[:len(dst)]
	for j := range dst {
		dst[j] += s * x[j]
	}
}
