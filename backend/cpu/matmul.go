package cpu

import (
	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernel of MatMul (ops/matmul.go) and the dot products it and others use.

func matmulKernel[T gemmElem](c *eager.Call, outs []*tensor.Tensor) {
	a, b, at := c.Inputs[0], c.Inputs[1], c.Attrs.(opattr.MatMulAttrs)
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
		ai, bi, oi := av[i*aStep:i*aStep+m*k], bv[i*bStep:i*bStep+k*n], ov[i*m*n:(i+1)*m*n]
		if k == 1 { // an outer product: both operands are contiguous vectors, transposed or not
			outer(deviceOf(c), ai, bi, oi)
			continue
		}
		gemm(deviceOf(c), m, n, k, ai, at.TransposeA, bi, at.TransposeB, oi)
	}
}

// outer sets o [len(a), len(b)] to the outer product of a and b, a scaled
// copy of b per row (a weight gradient hᵀ·dy of one example): the GEMM's
// packing and tiles cost more than the product where k = 1.
func outer[T gemmElem](dev *device.CPUDevice, a, b, o []T) {
	if len(a)*len(b) < 1<<16 {
		outerRows(a, b, o, 0, len(a))
		return
	}
	dev.Parallel(len(a), float64(len(b))/4, func(lo, hi int) { outerRows(a, b, o, lo, hi) })
}

// outerRows computes rows [lo, hi) of outer's product.
func outerRows[T gemmElem](a, b, o []T, lo, hi int) {
	n := len(b)
	if a32, ok := any(a).([]float32); ok && haveVecKernels && n > 0 {
		b32, o32 := any(b).([]float32), any(o).([]float32)
		for i := lo; i < hi; i++ {
			smuls(&o32[i*n], &b32[0], a32[i], n)
		}
		return
	}
	for i := lo; i < hi; i++ {
		row := o[i*n : (i+1)*n]
		for j, v := range b {
			row[j] = a[i] * v
		}
	}
}

// rowDots computes a·bᵀ for a with few rows as dot products of rows (b
// stored [n, k] is read in place, no transposed copy).
func rowDots[T gemmElem](c *eager.Call, outs []*tensor.Tensor) {
	a, b := c.Inputs[0], c.Inputs[1]
	m, k, n := c.Attrs.(opattr.MatMulAttrs).Dims(a.Shape(), b.Shape()) // a as is, b transposed
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

// fusedMatMulKernel is FusedMatMul: the product, then the bias added and
// the activation applied to the result's rows while they are in cache.
func fusedMatMulKernel[T tensor.Float](c *eager.Call, outs []*tensor.Tensor) {
	x, w, out := c.Inputs[0], c.Inputs[1], outs[0]
	m, k, n := x.Dim(0), x.Dim(1), w.Dim(1)
	if m*n == 0 {
		return
	}
	ov := data[T](out)
	if k == 0 {
		clear(ov)
	} else {
		gemm(deviceOf(c), m, n, k, data[T](x), false, data[T](w), false, ov)
	}
	ep := newEpilogue(data[T](c.Inputs[2]), c.Attrs.(ops.FusedMatMulAttrs).Activation == ops.ReluActivation, ops.NHWC)
	defer ep.free()
	deviceOf(c).Parallel(m, float64(n), func(lo, hi int) { ep.apply(ov[lo*n:hi*n], hi-lo) })
}

func init() {
	kernels{f32: fusedMatMulKernel[float32], f64: fusedMatMulKernel[float64]}.register("FusedMatMul")
}

func init() {
	kernels{f32: weightsGradKernel[float32], f64: weightsGradKernel[float64]}.register("FusedMatMulWeightsGrad")
}

// weightsGradKernel is FusedMatMulWeightsGrad: xᵀ·dz by the GEMM, the
// sums of dz's rows in float64, rounded once (the workers a share of the
// columns each, every row's stretch of them in turn).
func weightsGradKernel[T gemmElem](c *eager.Call, outs []*tensor.Tensor) {
	x, dz := c.Inputs[0], c.Inputs[1]
	m, k, n := x.Dim(0), x.Dim(1), dz.Dim(1)
	dzv, db := data[T](dz), data[T](outs[1])
	gemm(deviceOf(c), k, n, m, data[T](x), true, dzv, false, data[T](outs[0]))
	deviceOf(c).Parallel(n, float64(m), func(lo, hi int) {
		sums := make([]float64, hi-lo)
		for r := range m {
			for j, v := range dzv[r*n+lo : r*n+hi] {
				sums[j] += float64(v)
			}
		}
		for j, s := range sums {
			db[lo+j] = T(s)
		}
	})
}
