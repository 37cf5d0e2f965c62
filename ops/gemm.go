package ops

import (
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/tensor"
)

// Block sizes for gemm: a kc x nc block of B (256 x 512 float32 = 512 KiB at
// most, L2-sized) is reused by every 4-row panel of A.
const (
	gemmKC = 256
	gemmNC = 512
)

type gemmElem interface {
	tensor.Float | int32 | int64 | uint8
}

// gemm computes c = op(a)·b for row-major matrices: op(a) is [m, k] (a is
// [k, m] when transA), b is [k, n], c is [m, n] and is overwritten. Rows of
// c are split across the device's workers. Each 4-row panel of op(a) is
// packed (contiguous, kc deep) before use, so a transposed a costs no copy.
func gemm[T gemmElem](dev *device.CPUDevice, m, n, k int, a []T, transA bool, b, c []T) {
	clear(c[:m*n])
	if m == 0 || n == 0 || k == 0 {
		return
	}
	dev.Parallel((m+3)/4, float64(4*n*k), func(lo, hi int) {
		panel := make([]T, 4*gemmKC)
		var tile []T // 4 x nc scratch for the last rows of c
		r0, r1 := lo*4, min(hi*4, m)
		for kk := 0; kk < k; kk += gemmKC {
			ke := min(kk+gemmKC, k)
			kc := ke - kk
			for jj := 0; jj < n; jj += gemmNC {
				je := min(jj+gemmNC, n)
				w := je - jj
				bb := b[kk*n+jj:]
				for i := r0; i < r1; i += 4 {
					rows := min(4, r1-i)
					packA(panel[:4*kc], a, transA, m, k, i, rows, kk, ke)
					if rows == 4 {
						j := microKernel(c[i*n+jj:], n, panel, bb, n, kc, w)
						panelRows(c[i*n+jj:], n, panel, bb, n, 4, kc, j, w)
						continue
					}
					// Fewer than 4 rows: run the 4-row kernels on a zero-padded
					// panel into a scratch tile, then add the real rows.
					if tile == nil {
						tile = make([]T, 4*gemmNC)
					}
					clear(panel[rows*kc : 4*kc])
					t := tile[:4*w]
					clear(t)
					j := microKernel(t, w, panel, bb, n, kc, w)
					panelRows(t, w, panel, bb, n, rows, kc, j, w)
					for r := 0; r < rows; r++ {
						crow := c[(i+r)*n+jj : (i+r)*n+je]
						for x, v := range t[r*w : (r+1)*w] {
							crow[x] += v
						}
					}
				}
			}
		}
	})
}

// packA copies rows [i, i+rows) x columns [kk, ke) of op(a) into panel as
// rows of kc = ke-kk elements.
func packA[T gemmElem](panel, a []T, transA bool, m, k, i, rows, kk, ke int) {
	kc := ke - kk
	for r := 0; r < rows; r++ {
		dst := panel[r*kc : (r+1)*kc]
		if transA {
			for p := range dst {
				dst[p] = a[(kk+p)*m+i+r]
			}
		} else {
			copy(dst, a[(i+r)*k+kk:(i+r)*k+ke])
		}
	}
}

// microKernel runs the assembly micro-kernels over the first w columns of
// a 4-row block, c and b starting at the block (row strides ldc and ldb),
// and returns the first column left for Go code (0 when there is no kernel
// for T or this CPU).
func microKernel[T gemmElem](c []T, ldc int, panel, b []T, ldb, kc, w int) int {
	if !haveGemmKernels || kc == 0 {
		return 0
	}
	j := 0
	switch cv := any(c).(type) {
	case []float32:
		pv, bv := any(panel).([]float32), any(b).([]float32)
		for ; j+16 <= w; j += 16 {
			sgemm4x16(kc, &pv[0], kc, &bv[j], ldb, &cv[j], ldc)
		}
		if j+8 <= w {
			sgemm4x8(kc, &pv[0], kc, &bv[j], ldb, &cv[j], ldc)
			j += 8
		}
	case []float64:
		pv, bv := any(panel).([]float64), any(b).([]float64)
		for ; j+8 <= w; j += 8 {
			dgemm4x8(kc, &pv[0], kc, &bv[j], ldb, &cv[j], ldc)
		}
	}
	return j
}

// panelRows updates the first rows rows of a block of c (row stride ldc)
// over columns [j0, w) from the packed panel and b (row stride ldb), four
// rows at once when it can.
func panelRows[T gemmElem](c []T, ldc int, panel, b []T, ldb, rows, kc, j0, w int) {
	if j0 >= w {
		return
	}
	n := w - j0
	if rows == 4 {
		c0 := c[j0:w]
		c1 := c[ldc+j0 : ldc+w][:n]
		c2 := c[2*ldc+j0 : 2*ldc+w][:n]
		c3 := c[3*ldc+j0 : 3*ldc+w][:n]
		for p := 0; p < kc; p++ {
			a0, a1, a2, a3 := panel[p], panel[kc+p], panel[2*kc+p], panel[3*kc+p]
			br := b[p*ldb+j0 : p*ldb+w][:n]
			for j, bv := range br {
				c0[j] += a0 * bv
				c1[j] += a1 * bv
				c2[j] += a2 * bv
				c3[j] += a3 * bv
			}
		}
		return
	}
	for r := 0; r < rows; r++ {
		crow := c[r*ldc+j0 : r*ldc+w]
		for p := 0; p < kc; p++ {
			s := panel[r*kc+p]
			br := b[p*ldb+j0 : p*ldb+w][:n]
			for j, bv := range br {
				crow[j] += s * bv
			}
		}
	}
}
