package cpu

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernel of MatMul (ops/matmul.go) and the dot products it and others use.

func matmulKernel[T gemmElem](c *eager.Call, outs []*tensor.Tensor) {
	a, b, at := c.Inputs[0], c.Inputs[1], c.Attrs.(ops.MatMulAttrs)
	m, k, n := at.Dims(a.Shape(), b.Shape())
	if at.TransposeB && !at.TransposeA && m <= 4 {
		rowDots[T](c, outs)
		return
	}
	av, bv, ov := data[T](a), data[T](b), data[T](outs[0])
	batch := outs[0].NumElements() / max(m*n, 1)
	if m*n == 0 {
		batch = 0
	}
	bStep := k * n
	if b.Rank() == 2 {
		bStep = 0
	}
	aStep := m * k
	if a.Rank() == 2 {
		aStep = 0
	}
	for i := 0; i < batch; i++ {
		gemm(deviceOf(c), m, n, k, av[i*aStep:i*aStep+m*k], at.TransposeA, bv[i*bStep:i*bStep+k*n], at.TransposeB, ov[i*m*n:(i+1)*m*n])
	}
}

// rowDots computes a·bᵀ for a with few rows as dot products of rows (b
// stored [n, k] is read in place, no transposed copy).
func rowDots[T gemmElem](c *eager.Call, outs []*tensor.Tensor) {
	a, b := c.Inputs[0], c.Inputs[1]
	m, k, n := c.Attrs.(ops.MatMulAttrs).Dims(a.Shape(), b.Shape()) // a as is, b transposed
	av, bv, ov := data[T](a), data[T](b), data[T](outs[0])
	batch := outs[0].NumElements() / max(m*n, 1)
	if m*n == 0 {
		return
	}
	aStep, bStep := m*k, n*k
	if a.Rank() == 2 {
		aStep = 0
	}
	if b.Rank() == 2 {
		bStep = 0
	}
	cost := float64(2 * m * k)
	if _, vec := any(av).([]float32); vec && haveVecKernels {
		cost /= 8 // the dot kernel does eight lanes at a time
	}
	for bi := 0; bi < batch; bi++ {
		ab, bb, ob := av[bi*aStep:], bv[bi*bStep:], ov[bi*m*n:]
		deviceOf(c).Parallel(n, cost, func(lo, hi int) {
			for i := 0; i < m; i++ {
				row := ab[i*k : (i+1)*k]
				for j := lo; j < hi; j++ {
					ob[i*n+j] = dot(row, bb[j*k:(j+1)*k])
				}
			}
		})
	}
}

// dotsNT sets c [m, n] to a·bᵀ (or adds it, when accumulate) for a [m, k]
// and b [n, k], as m*n dot products of rows: for long k and few rows and
// columns, reading both operands along their rows costs less than packing
// them for gemm.
func dotsNT[T gemmElem](m, n, k int, a, b, c []T, accumulate bool) {
	for i := 0; i < m; i++ {
		row, out := a[i*k:(i+1)*k], c[i*n:(i+1)*n]
		for j := range out {
			v := dot(row, b[j*k:(j+1)*k])
			if accumulate {
				out[j] += v
			} else {
				out[j] = v
			}
		}
	}
}

// dot returns the dot product of x and y (len(y) >= len(x)), with the AVX2
// kernel for float32, else four running sums.
func dot[T gemmElem](x, y []T) T {
	if x32, ok := any(x).([]float32); ok && haveVecKernels && len(x) > 0 {
		return any(sdot(&x32[0], &any(y).([]float32)[0], len(x))).(T)
	}
	y = y[:len(x)]
	var s0, s1, s2, s3 T
	p := 0
	for ; p+4 <= len(x); p += 4 {
		s0 += x[p] * y[p]
		s1 += x[p+1] * y[p+1]
		s2 += x[p+2] * y[p+2]
		s3 += x[p+3] * y[p+3]
	}
	for ; p < len(x); p++ {
		s0 += x[p] * y[p]
	}
	return (s0 + s1) + (s2 + s3)
}

func init() {
	kernels{
		f32: matmulKernel[float32], f64: matmulKernel[float64], i32: matmulKernel[int32],
		i64: matmulKernel[int64], u8: matmulKernel[uint8],
	}.register("MatMul")
}
