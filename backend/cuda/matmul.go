package cuda

import (
	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// MatMul (ops/matmul.go) in float32 and float64 through cuBLAS: one
// strided batched GEMM per call, a rank-2 operand shared across the batch
// by a batch stride of 0. Integers by a kernel of the matmul family (a
// thread per output element; wrapping as the CPU's).

func init() {
	eager.RegisterKernel("MatMul", device.GPU, tensor.Float32, matmul)
	eager.RegisterKernel("MatMul", device.GPU, tensor.Float64, matmul)
	for _, d := range []kernels.DType{kernels.S32, kernels.S64, kernels.U8} {
		eager.RegisterKernel("MatMul", device.GPU, tensorType(d), intMatmul(d))
	}
}

func intMatmul(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		a, b, out, at := c.Inputs[0], c.Inputs[1], outs[0], c.Attrs.(opattr.MatMulAttrs)
		m, k, n := at.Dims(a.Shape(), b.Shape())
		if out.NumElements() == 0 {
			return
		}
		sa, sb := uint64(m*k), uint64(k*n)
		if a.Rank() == 2 {
			sa = 0
		}
		if b.Rank() == 2 {
			sb = 0
		}
		total := out.NumElements()
		args := divisorArg(new(cu.Args).Ptr(ptr(out)).Ptr(ptr(a)).Ptr(ptr(b)).U64(uint64(total/(m*n))).
			U64(uint64(m)).U64(uint64(k)), n, total).U64(sa).U64(sb).U64(flag(at.TransposeA)).U64(flag(at.TransposeB))
		check(c, gpu(c).launch("matmul", kernels.Name("matmul", string(d)), total, divisorArg(args, m*n, total)))
	}
}

// SetTF32 lets float32 MatMul on d run on the TF32 tensor cores (inputs
// rounded to 10 mantissa bits, as PyTorch's allow_tf32 does); off by
// default.
func (d *Device) SetTF32(on bool) { d.tf32.Store(on) }

// gemm queues g on the device's stream.
func (d *Device) gemm(g cu.Gemm) error {
	return d.ctx.Do(func() error { return d.ctx.Gemm(d.s, g) })
}

func matmul(c *eager.Call, outs []*tensor.Tensor) {
	a, b, out, at := c.Inputs[0], c.Inputs[1], outs[0], c.Attrs.(opattr.MatMulAttrs)
	m, k, n := at.Dims(a.Shape(), b.Shape())
	p := product{a: a, b: b, c: out, transA: at.TransposeA, transB: at.TransposeB, m: m, k: k, n: n, strideA: m * k, strideB: k * n}
	if a.Rank() == 2 {
		p.strideA = 0
	}
	if b.Rank() == 2 {
		p.strideB = 0
	}
	if m*n > 0 {
		p.batch = out.NumElements() / (m * n)
	}
	check(c, gpu(c).product(p))
}

// product is a batch of row-major float products c = op(a)·op(b), op(x)
// = xᵀ where trans is set: op(a) is m×k, op(b) k×n, c m×n. The strides
// step a and b from one matrix of the batch to the next, in elements (0
// shares one matrix); c's matrices follow one another.
type product struct {
	a, b, c          *tensor.Tensor
	transA, transB   bool
	m, k, n          int
	strideA, strideB int
	batch            int
}

// product queues p: one strided batched GEMM of cuBLAS (a fill where k is
// 0).
func (d *Device) product(p product) error {
	if p.c.NumElements() == 0 {
		return nil
	}
	if p.k == 0 {
		return d.Fill(p.c.Buffer(), 0, p.c.NumElements(), make([]byte, p.c.DType().Size()))
	}
	t := cu.Float32
	if p.c.DType() == tensor.Float64 {
		t = cu.Float64
	}
	// Row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ, and a
	// row-major matrix read column-major is its transpose: so cuBLAS
	// multiplies b by a, each transposed as the call asks.
	ldb, lda := p.n, p.k
	if p.transB {
		ldb = p.k
	}
	if p.transA {
		lda = p.m
	}
	return d.gemm(cu.Gemm{
		Type: t, TransA: p.transB, TransB: p.transA, M: p.n, N: p.m, K: p.k, Alpha: 1,
		A: ptr(p.b), LDA: ldb, StrideA: int64(p.strideB), B: ptr(p.a), LDB: lda, StrideB: int64(p.strideA),
		C: ptr(p.c), LDC: p.n, StrideC: int64(p.m * p.n), Batch: p.batch,
		TF32: t == cu.Float32 && d.tf32.Load(),
	})
}
