package cuda

import (
	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// MatMul (ops/matmul.go) in float32 and float64 through cuBLAS: one
// strided batched GEMM per call, a rank-2 operand shared across the batch
// by a batch stride of 0. Integers by a kernel of the matmul family (a
// thread per output element; wrapping as the CPU's).

func init() {
	eager.RegisterKernel("MatMul", device.GPU, tensor.Float32, matmul(cu.Float32))
	eager.RegisterKernel("MatMul", device.GPU, tensor.Float64, matmul(cu.Float64))
	for _, d := range []kernels.DType{kernels.S32, kernels.S64, kernels.U8} {
		eager.RegisterKernel("MatMul", device.GPU, tensorType(d), intMatmul(d))
	}
}

func intMatmul(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		a, b, out, at := c.Inputs[0], c.Inputs[1], outs[0], c.Attrs.(ops.MatMulAttrs)
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
		args := new(cu.Args).Ptr(ptr(out)).Ptr(ptr(a)).Ptr(ptr(b)).U64(uint64(out.NumElements() / (m * n))).
			U64(uint64(m)).U64(uint64(k)).U64(uint64(n)).U64(sa).U64(sb).U64(flag(at.TransposeA)).U64(flag(at.TransposeB))
		check(c, gpu(c).launch("matmul", kernels.Name("matmul", string(d)), out.NumElements(), args))
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

func matmul(t cu.GemmType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		a, b, out, at := c.Inputs[0], c.Inputs[1], outs[0], c.Attrs.(ops.MatMulAttrs)
		m, k, n := at.Dims(a.Shape(), b.Shape())
		if out.NumElements() == 0 {
			return
		}
		d := gpu(c)
		if k == 0 {
			check(c, d.Fill(out.Buffer(), 0, out.NumElements(), make([]byte, out.DType().Size())))
			return
		}
		// Row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ,
		// and a row-major matrix read column-major is its transpose: so
		// cuBLAS multiplies b by a, each transposed as the call asks.
		ldb, lda := n, k
		if at.TransposeB {
			ldb = k
		}
		if at.TransposeA {
			lda = m
		}
		strideA, strideB := int64(m*k), int64(k*n)
		if a.Rank() == 2 {
			strideA = 0
		}
		if b.Rank() == 2 {
			strideB = 0
		}
		check(c, d.gemm(cu.Gemm{
			Type: t, TransA: at.TransposeB, TransB: at.TransposeA, M: n, N: m, K: k, Alpha: 1,
			A: ptr(b), LDA: ldb, StrideA: strideB, B: ptr(a), LDB: lda, StrideB: strideA,
			C: ptr(out), LDC: n, StrideC: int64(m * n), Batch: out.NumElements() / (m * n),
			TF32: t == cu.Float32 && d.tf32.Load(),
		}))
	}
}
