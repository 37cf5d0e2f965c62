package ops

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Comparisons return Bool tensors of the broadcast shape and follow IEEE 754:
// every comparison with NaN is false except Ne, which is true. They have no
// gradient.

type ordered interface{ tensor.Num }

func cmpKernels(
	f32 func(a, b float32) bool, f64 func(a, b float64) bool, i32 func(a, b int32) bool,
	i64 func(a, b int64) bool, u8 func(a, b uint8) bool, b func(a, b bool) bool) cpuKernels {
	k := cpuKernels{
		f32: binaryKernel(scalarLoops(f32)), f64: binaryKernel(scalarLoops(f64)),
		i32: binaryKernel(scalarLoops(i32)), i64: binaryKernel(scalarLoops(i64)), u8: binaryKernel(scalarLoops(u8)),
	}
	if b != nil {
		k.b = binaryKernel(scalarLoops(b))
	}
	return k
}

func compareOp(name string, dtypes []tensor.DType, k cpuKernels) *eager.Op {
	return eager.Register(k.register(&eager.Op{
		Name: name, Inputs: 2, DTypes: dtypes, SameDTypes: true, NonDifferentiable: true,
		Infer: func(c *eager.Call) []eager.Out {
			return c.Out1(tensor.Bool, broadcastShapes(c, c.Inputs[0].Shape(), c.Inputs[1].Shape()))
		},
	}))
}

func eq[T comparable](a, b T) bool { return a == b }
func ne[T comparable](a, b T) bool { return a != b }
func lt[T ordered](a, b T) bool    { return a < b }
func le[T ordered](a, b T) bool    { return a <= b }
func gt[T ordered](a, b T) bool    { return a > b }
func ge[T ordered](a, b T) bool    { return a >= b }

var eqOp, neOp, ltOp, leOp, gtOp, geOp *eager.Op

func init() {
	eqOp = compareOp("Eq", allTypes, cmpKernels(eq[float32], eq[float64], eq[int32], eq[int64], eq[uint8], eq[bool]))
	neOp = compareOp("Ne", allTypes, cmpKernels(ne[float32], ne[float64], ne[int32], ne[int64], ne[uint8], ne[bool]))
	ltOp = compareOp("Lt", numericTypes, cmpKernels(lt[float32], lt[float64], lt[int32], lt[int64], lt[uint8], nil))
	leOp = compareOp("Le", numericTypes, cmpKernels(le[float32], le[float64], le[int32], le[int64], le[uint8], nil))
	gtOp = compareOp("Gt", numericTypes, cmpKernels(gt[float32], gt[float64], gt[int32], gt[int64], gt[uint8], nil))
	geOp = compareOp("Ge", numericTypes, cmpKernels(ge[float32], ge[float64], ge[int32], ge[int64], ge[uint8], nil))
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

// selectKernel picks onTrue or onFalse by pred, all broadcast to the output.
func selectKernel[T tensor.Elem](c *eager.Call, outs []*tensor.Tensor) {
	p, a, b := c.Inputs[0], c.Inputs[1], c.Inputs[2]
	pv, av, bv, ov := data[bool](p), data[T](a), data[T](b), data[T](outs[0])
	if len(ov) == 0 {
		return
	}
	if len(pv) == len(ov) && len(av) == len(ov) && len(bv) == len(ov) {
		for i := range ov {
			if pv[i] {
				ov[i] = av[i]
			} else {
				ov[i] = bv[i]
			}
		}
		return
	}
	plan := newBcastPlan(outs[0].Shape(), p.Shape(), a.Shape(), b.Shape())
	inner := plan.dims[len(plan.dims)-1]
	plan.rows(func(o int, off [3]int) {
		for i := 0; i < inner; i++ {
			if pv[off[0]+i*plan.step[0]] {
				ov[o+i] = av[off[1]+i*plan.step[1]]
			} else {
				ov[o+i] = bv[off[2]+i*plan.step[2]]
			}
		}
	})
}

var selectOp *eager.Op

func init() {
	selectOp = eager.Register(cpuKernels{
		f32: selectKernel[float32], f64: selectKernel[float64], i32: selectKernel[int32],
		i64: selectKernel[int64], u8: selectKernel[uint8], b: selectKernel[bool],
	}.register(&eager.Op{
		Name: "Select", Inputs: 3, KeyInput: 1, SameDTypes: true, SameFrom: 1,
		Infer: func(c *eager.Call) []eager.Out {
			if c.Inputs[0].DType() != tensor.Bool {
				c.Fail(tensor.ErrDType, "predicate must be bool, got %v", c.Inputs[0].DType())
			}
			return c.Out1(c.Inputs[1].DType(), broadcastShapes(c, c.Inputs[0].Shape(), c.Inputs[1].Shape(), c.Inputs[2].Shape()))
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			p, dy := g.Inputs[0], g.OutGrads[0]
			z := ZerosLike(dy)
			return []*tensor.Tensor{nil,
				when(g.Needs[1], func() *tensor.Tensor { return Select(p, dy, z) }),
				when(g.Needs[2], func() *tensor.Tensor { return Select(p, z, dy) }),
			}
		},
	}))
}

// Select returns onTrue where pred is true and onFalse elsewhere, as XLA's
// Select. pred: Bool; onTrue, onFalse: one dtype. All three broadcast
// together (so a scalar pred picks a whole operand). The gradient flows to
// the operand that was picked; pred gets none.
func Select(pred, onTrue, onFalse *tensor.Tensor) *tensor.Tensor {
	return eager.Run1(selectOp, nil, pred, onTrue, onFalse)
}
