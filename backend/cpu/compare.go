package cpu

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernels of the comparisons, Select (ops/compare.go) and the logical ops
// (ops/logical.go).

type ordered interface{ tensor.Num }

func cmpKernels(
	f32 func(a, b float32) bool, f64 func(a, b float64) bool, i32 func(a, b int32) bool,
	i64 func(a, b int64) bool, u8 func(a, b uint8) bool, b func(a, b bool) bool) kernels {
	k := kernels{
		f32: binaryKernel(scalarLoops(f32)), f64: binaryKernel(scalarLoops(f64)),
		i32: binaryKernel(scalarLoops(i32)), i64: binaryKernel(scalarLoops(i64)), u8: binaryKernel(scalarLoops(u8)),
	}
	if b != nil {
		k.b = binaryKernel(scalarLoops(b))
	}
	return k
}

func eq[T comparable](a, b T) bool { return a == b }

func ne[T comparable](a, b T) bool { return a != b }

func lt[T ordered](a, b T) bool { return a < b }

func le[T ordered](a, b T) bool { return a <= b }

func gt[T ordered](a, b T) bool { return a > b }

func ge[T ordered](a, b T) bool { return a >= b }

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

func init() {
	cmpKernels(eq[float32], eq[float64], eq[int32], eq[int64], eq[uint8], eq[bool]).register("Eq")
	cmpKernels(ne[float32], ne[float64], ne[int32], ne[int64], ne[uint8], ne[bool]).register("Ne")
	cmpKernels(lt[float32], lt[float64], lt[int32], lt[int64], lt[uint8], nil).register("Lt")
	cmpKernels(le[float32], le[float64], le[int32], le[int64], le[uint8], nil).register("Le")
	cmpKernels(gt[float32], gt[float64], gt[int32], gt[int64], gt[uint8], nil).register("Gt")
	cmpKernels(ge[float32], ge[float64], ge[int32], ge[int64], ge[uint8], nil).register("Ge")
	kernels{
		f32: selectKernel[float32], f64: selectKernel[float64], i32: selectKernel[int32],
		i64: selectKernel[int64], u8: selectKernel[uint8], b: selectKernel[bool],
	}.register("Select")
	kernels{b: binaryKernel(scalarLoops(func(a, b bool) bool { return a && b }))}.register("LogicalAnd")
	kernels{b: binaryKernel(scalarLoops(func(a, b bool) bool { return a || b }))}.register("LogicalOr")
	kernels{b: unaryKernel(1, mapLoop(func(a bool) bool { return !a }))}.register("LogicalNot")
}
