package ops

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Logical ops on Bool tensors, with broadcasting; they have no gradient.

var boolOnly = []tensor.DType{tensor.Bool}

func logicalOp(name string) *eager.Op {
	return eager.Register(&eager.Op{
		Name: name, Inputs: 2, DTypes: boolOnly, SameDTypes: true, NonDifferentiable: true,
		Infer: func(c *eager.Call) []eager.Out {
			return c.Out1(tensor.Bool, broadcastShapes(c, c.Inputs[0].Shape(), c.Inputs[1].Shape()))
		},
	})
}

var logicalAndOp, logicalOrOp, logicalNotOp *eager.Op

func init() {
	logicalAndOp = logicalOp("LogicalAnd")
	logicalOrOp = logicalOp("LogicalOr")
	logicalNotOp = eager.Register(&eager.Op{
		Name: "LogicalNot", Inputs: 1, DTypes: boolOnly, NonDifferentiable: true,
		Infer: func(c *eager.Call) []eager.Out { return c.Out1(tensor.Bool, c.Inputs[0].Shape()) },
	})
}

// LogicalAnd returns a && b elementwise. Bool, broadcasting.
func LogicalAnd(a, b *tensor.Tensor) *tensor.Tensor { return eager.Run1(logicalAndOp, nil, a, b) }

// LogicalOr returns a || b elementwise. Bool, broadcasting.
func LogicalOr(a, b *tensor.Tensor) *tensor.Tensor { return eager.Run1(logicalOrOp, nil, a, b) }

// LogicalNot returns !x elementwise. Bool.
func LogicalNot(x *tensor.Tensor) *tensor.Tensor { return eager.Run1(logicalNotOp, nil, x) }

// Any reports whether any element over dims (all when none are given) is
// true. x: Bool.
func Any(x *tensor.Tensor, dims ...int) *tensor.Tensor {
	needInputs("Any", x)
	defer asOp("Any")
	needBool("Any", x)
	return Cast(Amax(Cast(x, tensor.Uint8), dims...), tensor.Bool)
}

// All reports whether every element over dims (all when none are given) is
// true. x: Bool.
func All(x *tensor.Tensor, dims ...int) *tensor.Tensor {
	needInputs("All", x)
	defer asOp("All")
	needBool("All", x)
	return Cast(Amin(Cast(x, tensor.Uint8), dims...), tensor.Bool)
}

func needBool(op string, x *tensor.Tensor) {
	if x.DType() != tensor.Bool {
		panic(tensor.NewError("ops", op, tensor.ErrDType, []*tensor.Tensor{x}, "", "needs a bool tensor, got %v", x.DType()))
	}
}
