package ops

import "github.com/eagerflow/eagerflow/tensor"

// ScaledMatMul returns the product of a and b scaled by scaleA·scaleB, in
// dtype out, as PyTorch's torch._scaled_mm and cuBLASLt's FP8 GEMM compute
// it: a [m, k] and b [k, n], typically Float8E4M3 (or Float8E5M2 for
// gradients), each with a per-tensor float32 scale (a scalar tensor: the
// factor that takes the 8-bit values back to the quantities they stand
// for); the products summed in float32, multiplied by both scales and
// rounded once to out (BFloat16, Float16 or Float32). The 8-bit operands
// are exact in float32, so every device gives the sum float32 gives.
// It computes through float32 on every device (cuBLASLt's FP8 tensor-core
// GEMM is not wired yet) and carries no gradient into 8-bit operands.
// Panics with a *tensor.Error for operands that are not matrices of float
// or 8-bit float dtypes, contracting dimensions that differ, scales that
// are not float32 scalars, or another out dtype.
func ScaledMatMul(a, b, scaleA, scaleB *tensor.Tensor, out tensor.DType) *tensor.Tensor {
	needInputs("ScaledMatMul", a, b, scaleA, scaleB)
	defer asOp("ScaledMatMul")
	in := []*tensor.Tensor{a, b, scaleA, scaleB}
	for _, x := range []*tensor.Tensor{a, b} {
		if !x.DType().IsFloat() && !x.DType().IsFloat8() {
			fail("ScaledMatMul", tensor.ErrDType, in, "operands must be of float or 8-bit float dtypes, got %v and %v", a.DType(), b.DType())
		}
	}
	if a.Rank() != 2 || b.Rank() != 2 {
		fail("ScaledMatMul", tensor.ErrRank, in, "operands must be matrices, got %v and %v", a.Shape(), b.Shape())
	}
	if a.Dim(1) != b.Dim(0) {
		fail("ScaledMatMul", tensor.ErrShape, in, "contracting dimensions differ: %d and %d", a.Dim(1), b.Dim(0))
	}
	for _, s := range []*tensor.Tensor{scaleA, scaleB} {
		if s.DType() != tensor.Float32 || s.Rank() != 0 {
			fail("ScaledMatMul", tensor.ErrAttr, in, "scales must be float32 scalars, got %s and %s", tensor.Describe(scaleA), tensor.Describe(scaleB))
		}
	}
	if out != tensor.BFloat16 && out != tensor.Float16 && out != tensor.Float32 {
		fail("ScaledMatMul", tensor.ErrAttr, in, "out must be bfloat16, float16 or float32, got %v", out)
	}
	wide := func(x *tensor.Tensor) *tensor.Tensor { return Cast(x, tensor.Float32) }
	y := Mul(MatMul(wide(a), wide(b)), Mul(scaleA, scaleB))
	return Cast(y, out)
}
