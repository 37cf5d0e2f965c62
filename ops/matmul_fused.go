package ops

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// FusedMatMul is a dense layer's MatMul, bias and activation as one op, as
// TensorFlow's grappler remapper makes _FusedMatMul: a backend adds the
// bias and applies the activation as the product's epilogue (on the GPU
// inside the GEMM, cuBLASLt's BIAS and RELU_BIAS epilogues), where the
// three ops wrote and read the result three times and launched three
// kernels.

// FusedMatMulAttrs are FusedMatMul's attributes.
type FusedMatMulAttrs struct {
	Activation FusedActivation
}

func (a FusedMatMulAttrs) String() string { return "activation=" + a.Activation.String() }

var fusedMatMulOp *eager.Op

func init() {
	fusedMatMulOp = eager.Register(&eager.Op{
		Name: "FusedMatMul", Inputs: 3, DTypes: floatTypes, SameDTypes: true,
		Infer: func(c *eager.Call) []eager.Out {
			x, w, b, a := c.Inputs[0], c.Inputs[1], c.Inputs[2], c.Attrs.(FusedMatMulAttrs)
			if a.Activation > ReluActivation {
				c.Fail(tensor.ErrAttr, "unknown activation %v", a.Activation)
			}
			if x.Rank() != 2 || w.Rank() != 2 || b.Rank() != 1 {
				c.Fail(tensor.ErrRank, "needs a matrix input and weight and a vector bias, got %v, %v and %v", x.Shape(), w.Shape(), b.Shape())
			}
			if x.Dim(1) != w.Dim(0) {
				c.Fail(tensor.ErrShape, "contracting dimensions differ: %d and %d", x.Dim(1), w.Dim(0))
			}
			if b.Dim(0) != w.Dim(1) {
				c.Fail(tensor.ErrShape, "bias %v does not match the weight's %d columns", b.Shape(), w.Dim(1))
			}
			return c.Out1(x.DType(), tensor.Shape{x.Dim(0), w.Dim(1)})
		},
		// dz = dy, masked where the result is 0 for Relu (y > 0 exactly
		// where x·w + b > 0); then dx = dz·wᵀ, dw = xᵀ·dz, db = the sum of
		// dz's rows.
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			x, w, y, dy := g.Inputs[0], g.Inputs[1], g.Outputs[0], g.OutGrads[0]
			dz := dy
			if g.Attrs.(FusedMatMulAttrs).Activation == ReluActivation {
				dz = reluGrad(y, dy)
			}
			grads := []*tensor.Tensor{when(g.Needs[0], func() *tensor.Tensor { return MatMulT(dz, w, false, true) }), nil, nil}
			if g.Needs[1] && g.Needs[2] {
				// One op (a GPU's one GEMM whose epilogue sums the bias's
				// gradient: a launch fewer a layer).
				d := eager.Run(weightsGradOp, nil, x, dz)
				grads[1], grads[2] = d[0], d[1]
			} else {
				grads[1] = when(g.Needs[1], func() *tensor.Tensor { return MatMulT(x, dz, true, false) })
				grads[2] = when(g.Needs[2], func() *tensor.Tensor { return Sum(dz, 0) })
			}
			if dz != dy {
				releaseTemp(dz)
			}
			return grads
		},
	})
}

var weightsGradOp *eager.Op

func init() {
	// Inputs x [m k] and dz [m n]; outputs xᵀ·dz [k n] and the sums of
	// dz's rows [n]: FusedMatMul's weight's and bias's gradients, one op
	// (on a GPU one GEMM, cuBLASLt's BGRADA epilogue summing the bias's).
	// Differentiable as the two written out (again.go).
	weightsGradOp = eager.Register(&eager.Op{
		Name: "FusedMatMulWeightsGrad", Inputs: 2, DTypes: floatTypes, SameDTypes: true,
		Infer: func(c *eager.Call) []eager.Out {
			x, dz := c.Inputs[0], c.Inputs[1]
			if x.Rank() != 2 || dz.Rank() != 2 || x.Dim(0) != dz.Dim(0) {
				c.Fail(tensor.ErrShape, "needs an input [m k] and an output gradient [m n] of its rows, got %v and %v", x.Shape(), dz.Shape())
			}
			return []eager.Out{{DType: x.DType(), Shape: tensor.Shape{x.Dim(1), dz.Dim(1)}}, {DType: x.DType(), Shape: tensor.Shape{dz.Dim(1)}}}
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			return backpropGrad(g, func(in []*tensor.Tensor) []*tensor.Tensor {
				return []*tensor.Tensor{MatMulT(in[0], in[1], true, false), Sum(in[1], 0)}
			})
		},
	})
}

// FusedMatMul returns act(x·w + bias): x [m, k], w [k, n], bias [n], all
// of one float dtype; the result is [m, n]. It equals Relu(Add(MatMul(x,
// w), bias)) (or the Add alone for NoActivation) to rounding, and is
// differentiable in all three inputs. Panics with a *tensor.Error for
// operands that are not matrices and a vector, contracting dimensions that
// differ, a bias that is not one entry per column of w, mixed or integer
// dtypes, or an unknown activation.
func FusedMatMul(x, w, bias *tensor.Tensor, act FusedActivation) *tensor.Tensor {
	needInputs("FusedMatMul", x, w, bias)
	return eager.Run1(fusedMatMulOp, FusedMatMulAttrs{Activation: act}, x, w, bias)
}
