package ops

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Comparisons return Bool tensors of the broadcast shape and follow IEEE 754:
// every comparison with NaN is false except Ne, which is true. They have no
// gradient.

func compareOp(name string, dtypes []tensor.DType) *eager.Op {
	return eager.Register(&eager.Op{
		Name: name, Inputs: 2, DTypes: dtypes, SameDTypes: true, NonDifferentiable: true,
		Infer: func(c *eager.Call) []eager.Out {
			return c.Out1(tensor.Bool, broadcastShapes(c, c.Inputs[0].Shape(), c.Inputs[1].Shape()))
		},
	})
}

var eqOp, neOp, ltOp, leOp, gtOp, geOp *eager.Op

func init() {
	eqOp = compareOp("Eq", allTypes)
	neOp = compareOp("Ne", allTypes)
	ltOp = compareOp("Lt", numericTypes)
	leOp = compareOp("Le", numericTypes)
	gtOp = compareOp("Gt", numericTypes)
	geOp = compareOp("Ge", numericTypes)
}

// Eq returns a == b elementwise (Bool, broadcast shape). Any dtype.
func Eq(a, b *tensor.Tensor) *tensor.Tensor { return eager.Run1(eqOp, nil, a, b) }

// Ne returns a != b elementwise (true where either is NaN). Any dtype.
func Ne(a, b *tensor.Tensor) *tensor.Tensor { return eager.Run1(neOp, nil, a, b) }

// Lt returns a < b elementwise. Numeric dtypes.
func Lt(a, b *tensor.Tensor) *tensor.Tensor { return eager.Run1(ltOp, nil, a, b) }

// Le returns a <= b elementwise. Numeric dtypes.
func Le(a, b *tensor.Tensor) *tensor.Tensor { return eager.Run1(leOp, nil, a, b) }

// Gt returns a > b elementwise. Numeric dtypes.
func Gt(a, b *tensor.Tensor) *tensor.Tensor { return eager.Run1(gtOp, nil, a, b) }

// Ge returns a >= b elementwise. Numeric dtypes.
func Ge(a, b *tensor.Tensor) *tensor.Tensor { return eager.Run1(geOp, nil, a, b) }

var selectOp *eager.Op

func init() {
	selectOp = eager.Register(&eager.Op{
		Name: "Select", Inputs: 3, KeyInput: 1, SameDTypes: true, SameFrom: 1,
		GradReads: eager.ReadsInputs, GradIgnores: []int{1, 2}, // the predicate alone
		Infer: func(c *eager.Call) []eager.Out {
			if c.Inputs[0].DType() != tensor.Bool {
				c.Fail(tensor.ErrDType, "predicate must be bool, got %v", c.Inputs[0].DType())
			}
			return c.Out1(c.Inputs[1].DType(), broadcastShapes(c, c.Inputs[0].Shape(), c.Inputs[1].Shape(), c.Inputs[2].Shape()))
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			p, dy := g.Inputs[0], g.OutGrads[0]
			z := ScalarLike(dy, 0) // broadcast: no zeros the size of dy
			grads := []*tensor.Tensor{nil,
				when(g.Needs[1], func() *tensor.Tensor { return Where(p, dy, z) }),
				when(g.Needs[2], func() *tensor.Tensor { return Where(p, z, dy) }),
			}
			releaseTemp(z)
			return grads
		},
	})
}

// Where returns x where cond is true and y elsewhere: NumPy's where with
// three arguments, XLA's Select. cond: Bool; x, y: one dtype. All three
// broadcast together (so a scalar cond picks a whole operand). The
// gradient flows to the operand that was picked; cond gets none.
func Where(cond, x, y *tensor.Tensor) *tensor.Tensor {
	defer asOp("Where") // the op is XLA's Select
	return eager.Run1(selectOp, nil, cond, x, y)
}

// Select is Where (XLA's name for it).
//
// Deprecated: use Where, the one name ops gives it (see "Names" in the
// package doc).
func Select(pred, onTrue, onFalse *tensor.Tensor) *tensor.Tensor { return Where(pred, onTrue, onFalse) }
