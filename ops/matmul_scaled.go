package ops

import (
	"fmt"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// ScaledMatMulAttrs are the attributes of the ScaledMatMul op: the
// result's dtype.
type ScaledMatMulAttrs struct {
	Out tensor.DType
}

func (a ScaledMatMulAttrs) String() string { return fmt.Sprintf("out=%v", a.Out) }

var scaledMatMulOp *eager.Op

func init() {
	// Inputs a, b (8-bit floats), scaleA, scaleB (float32 scalars).
	scaledMatMulOp = eager.Register(&eager.Op{
		Name: "ScaledMatMul", Inputs: 4, DTypes: []tensor.DType{tensor.Float8E4M3, tensor.Float8E5M2}, NonDifferentiable: true,
		Infer: func(c *eager.Call) []eager.Out {
			a, b, out := c.Inputs[0], c.Inputs[1], c.Attrs.(ScaledMatMulAttrs).Out
			checkScaledMatMul(c.Fail, a, b, c.Inputs[2], c.Inputs[3], out)
			if !b.DType().IsFloat8() {
				c.Fail(tensor.ErrDType, "operands must both be 8-bit floats, got %v and %v", a.DType(), b.DType())
			}
			return c.Out1(out, tensor.Shape{a.Dim(0), b.Dim(1)})
		},
	})
}

// checkScaledMatMul reports, through fail, what ScaledMatMul does not
// take.
func checkScaledMatMul(fail func(error, string, ...any), a, b, scaleA, scaleB *tensor.Tensor, out tensor.DType) {
	for _, x := range []*tensor.Tensor{a, b} {
		if !x.DType().IsFloat() && !x.DType().IsFloat8() {
			fail(tensor.ErrDType, "operands must be of float or 8-bit float dtypes, got %v and %v", a.DType(), b.DType())
		}
	}
	if a.Rank() != 2 || b.Rank() != 2 {
		fail(tensor.ErrRank, "operands must be matrices, got %v and %v", a.Shape(), b.Shape())
	}
	if a.Dim(1) != b.Dim(0) {
		fail(tensor.ErrShape, "contracting dimensions differ: %d and %d", a.Dim(1), b.Dim(0))
	}
	for _, s := range []*tensor.Tensor{scaleA, scaleB} {
		if s.DType() != tensor.Float32 || s.Rank() != 0 {
			fail(tensor.ErrAttr, "scales must be float32 scalars, got %s and %s", tensor.Describe(scaleA), tensor.Describe(scaleB))
		}
	}
	if out != tensor.BFloat16 && out != tensor.Float16 && out != tensor.Float32 {
		fail(tensor.ErrAttr, "out must be bfloat16, float16 or float32, got %v", out)
	}
}

// ScaledMatMul returns the product of a and b scaled by scaleA·scaleB, in
// dtype out, as PyTorch's torch._scaled_mm and cuBLASLt's FP8 GEMM compute
// it: a [m, k] and b [k, n], typically Float8E4M3 (or Float8E5M2 for
// gradients), each with a per-tensor float32 scale (a scalar tensor: the
// factor that takes the 8-bit values back to the quantities they stand
// for); the products summed in float32, multiplied by both scales and
// rounded once to out (BFloat16, Float16 or Float32). The result is [m, n].
//
// With both operands 8-bit it is one op: on the GPU cuBLASLt's FP8
// tensor-core GEMM where the device has it (Hopper, Ada) and the shape
// suits it (m, n and k multiples of 16, not two Float8E5M2 operands),
// else, and on the CPU, the product of the operands widened to float32
// (exact) by the float32 GEMM. The FP8 GEMM adds its products with less
// than float32's precision (Hopper keeps about 14 bits of mantissa within
// a step of its tensor cores): its results are within about 2^-13 of the
// scaled products' magnitude, Σ|a·b|·|scaleA·scaleB|, per 32 of the depth
// of the float32 sums (an H200 gave 2^-15), where a matrix of cancelling
// sums can lose most of its digits. It has no gradient (as
// torch._scaled_mm); with a float operand the call is a MatMul of the
// operands widened to float32, differentiable in the float operands and
// the scales.
//
// Panics with a *tensor.Error for operands that are not matrices of float
// or 8-bit float dtypes, contracting dimensions that differ, scales that
// are not float32 scalars, or another out dtype.
func ScaledMatMul(a, b, scaleA, scaleB *tensor.Tensor, out tensor.DType) *tensor.Tensor {
	needInputs("ScaledMatMul", a, b, scaleA, scaleB)
	defer asOp("ScaledMatMul")
	in := []*tensor.Tensor{a, b, scaleA, scaleB}
	checkScaledMatMul(func(err error, format string, args ...any) { fail("ScaledMatMul", err, in, format, args...) }, a, b, scaleA, scaleB, out)
	if a.DType().IsFloat8() && b.DType().IsFloat8() {
		return eager.Run1(scaledMatMulOp, ScaledMatMulAttrs{Out: out}, a, b, scaleA, scaleB)
	}
	wide := func(x *tensor.Tensor) *tensor.Tensor { return Cast(x, tensor.Float32) }
	y := Mul(MatMul(wide(a), wide(b)), Mul(scaleA, scaleB))
	return Cast(y, out)
}
