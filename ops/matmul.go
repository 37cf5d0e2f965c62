package ops

import (
	"fmt"
	"slices"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// MatMulAttrs says whether to transpose the last two dimensions of each
// operand before multiplying.
type MatMulAttrs struct{ TransposeA, TransposeB bool }

func (a MatMulAttrs) String() string {
	return fmt.Sprintf("transpose_a=%v transpose_b=%v", a.TransposeA, a.TransposeB)
}

// matDims returns (rows, cols) of the last two dims after the transpose flag.
func matDims(s tensor.Shape, t bool) (int, int) {
	r, c := s[len(s)-2], s[len(s)-1]
	if t {
		return c, r
	}
	return r, c
}

func matmulKernel[T gemmElem](c *eager.Call, outs []*tensor.Tensor) {
	a, b, at := c.Inputs[0], c.Inputs[1], c.Attrs.(MatMulAttrs)
	if m, _ := matDims(a.Shape(), at.TransposeA); at.TransposeB && !at.TransposeA && m <= 4 {
		rowDots[T](c, outs)
		return
	}
	m, k := matDims(a.Shape(), at.TransposeA)
	_, n := matDims(b.Shape(), at.TransposeB)
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
		gemm(cpu(c), m, n, k, av[i*aStep:i*aStep+m*k], at.TransposeA, bv[i*bStep:i*bStep+k*n], at.TransposeB, ov[i*m*n:(i+1)*m*n])
	}
}

// rowDots computes a·bᵀ for a with few rows as dot products of rows (b
// stored [n, k] is read in place, no transposed copy).
func rowDots[T gemmElem](c *eager.Call, outs []*tensor.Tensor) {
	a, b := c.Inputs[0], c.Inputs[1]
	m, k := matDims(a.Shape(), false)
	n, _ := matDims(b.Shape(), false)
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
		cpu(c).Parallel(n, cost, func(lo, hi int) {
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

var matmulOp *eager.Op

func init() {
	matmulOp = eager.Register(cpuKernels{
		f32: matmulKernel[float32], f64: matmulKernel[float64], i32: matmulKernel[int32],
		i64: matmulKernel[int64], u8: matmulKernel[uint8],
	}.register(&eager.Op{
		Name: "MatMul", Inputs: 2, DTypes: numericTypes, SameDTypes: true, GradReads: eager.ReadsInputs,
		Infer: func(c *eager.Call) []eager.Out {
			a, b, at := c.Inputs[0], c.Inputs[1], c.Attrs.(MatMulAttrs)
			if a.Rank() < 2 || b.Rank() < 2 {
				c.Fail(tensor.ErrRank, "operands need rank 2 or more")
			}
			m, k := matDims(a.Shape(), at.TransposeA)
			k2, n := matDims(b.Shape(), at.TransposeB)
			if k != k2 {
				c.Fail(tensor.ErrShape, "contracting dimensions differ: %d and %d", k, k2)
			}
			batchA, batchB := a.Shape()[:a.Rank()-2], b.Shape()[:b.Rank()-2]
			batch := batchA
			switch {
			case len(batchB) == 0:
			case len(batchA) == 0:
				batch = batchB
			case !batchA.Equal(batchB):
				c.Fail(tensor.ErrShape, "batch dimensions differ: %v and %v", batchA, batchB)
			}
			shape := append(slices.Clone(batch), m, n)
			return c.Out1(a.DType(), shape)
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			a, b, dy, at := g.Inputs[0], g.Inputs[1], g.OutGrads[0], g.Attrs.(MatMulAttrs)
			var da, db *tensor.Tensor
			switch {
			case !at.TransposeA && !at.TransposeB:
				da = when(g.Needs[0], func() *tensor.Tensor { return MatMulT(dy, b, false, true) })
				db = when(g.Needs[1], func() *tensor.Tensor { return MatMulT(a, dy, true, false) })
			case !at.TransposeA && at.TransposeB:
				da = when(g.Needs[0], func() *tensor.Tensor { return MatMulT(dy, b, false, false) })
				db = when(g.Needs[1], func() *tensor.Tensor { return MatMulT(dy, a, true, false) })
			case at.TransposeA && !at.TransposeB:
				da = when(g.Needs[0], func() *tensor.Tensor { return MatMulT(b, dy, false, true) })
				db = when(g.Needs[1], func() *tensor.Tensor { return MatMulT(a, dy, false, false) })
			default:
				da = when(g.Needs[0], func() *tensor.Tensor { return MatMulT(b, dy, true, true) })
				db = when(g.Needs[1], func() *tensor.Tensor { return MatMulT(dy, a, true, true) })
			}
			return []*tensor.Tensor{da, db}
		},
	}))
}

// MatMul returns a·b over the last two dimensions: a: [..., m, k], b:
// [..., k, n] -> [..., m, n]. Leading (batch) dimensions must be equal, or
// either operand may be rank 2 and shared by every batch of the other. Same
// numeric dtype. Panics with a *tensor.Error on a shape mismatch.
func MatMul(a, b *tensor.Tensor) *tensor.Tensor {
	defer asOp("MatMul")
	return MatMulT(a, b, false, false)
}

// MatMulT is MatMul with the last two dimensions of a and/or b transposed
// first (without a copy of the caller's data).
func MatMulT(a, b *tensor.Tensor, transposeA, transposeB bool) *tensor.Tensor {
	return eager.Run1(matmulOp, MatMulAttrs{TransposeA: transposeA, TransposeB: transposeB}, a, b)
}
