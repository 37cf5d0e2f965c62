package cpu

import (
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/hostmem"
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

// selectKernel picks onTrue or onFalse by pred, all broadcast to the
// output: elements moved as unsigned words of their size, picked by a
// mask without a branch (a branch on random predicates mispredicted
// half the time: 6.5 ns an element), over the workers.
func selectKernel(c *eager.Call, outs []*tensor.Tensor) {
	switch outs[0].DType().Size() {
	case 1:
		selectWords(c, outs, func(b []byte) []uint8 { return b })
	case 2:
		selectWords(c, outs, hostmem.View16)
	case 4:
		selectWords(c, outs, hostmem.View32)
	default:
		selectWords(c, outs, hostmem.View64)
	}
}

func selectWords[U uint8 | uint16 | uint32 | uint64](c *eager.Call, outs []*tensor.Tensor, view func([]byte) []U) {
	p, a, b := c.Inputs[0], c.Inputs[1], c.Inputs[2]
	pv, av, bv, ov := data[bool](p), view(a.HostBytes()), view(b.HostBytes()), view(outs[0].HostBytes())
	if len(ov) == 0 {
		return
	}
	pick := func(o []U, p []bool, ps int, a []U, as int, b []U, bs int) {
		for i := range o {
			m := U(0)
			if p[i*ps] {
				m = ^U(0)
			}
			o[i] = a[i*as]&m | b[i*bs]&^m
		}
	}
	if len(pv) == len(ov) && len(av) == len(ov) && len(bv) == len(ov) {
		deviceOf(c).Parallel(len(ov), 1, func(lo, hi int) {
			pick(ov[lo:hi], pv[lo:hi], 1, av[lo:hi], 1, bv[lo:hi], 1)
		})
		return
	}
	plan := newBcastPlan(outs[0].Shape(), p.Shape(), a.Shape(), b.Shape())
	inner := plan.dims[len(plan.dims)-1]
	plan.rows(func(o int, off [3]int) {
		pick(ov[o:o+inner], pv[off[0]:], plan.step[0], av[off[1]:], plan.step[1], bv[off[2]:], plan.step[2])
	})
}

func init() {
	cmpKernels(eq[float32], eq[float64], eq[int32], eq[int64], eq[uint8], eq[bool]).register("Eq")
	cmpKernels(ne[float32], ne[float64], ne[int32], ne[int64], ne[uint8], ne[bool]).register("Ne")
	cmpKernels(lt[float32], lt[float64], lt[int32], lt[int64], lt[uint8], nil).register("Lt")
	cmpKernels(le[float32], le[float64], le[int32], le[int64], le[uint8], nil).register("Le")
	cmpKernels(gt[float32], gt[float64], gt[int32], gt[int64], gt[uint8], nil).register("Gt")
	cmpKernels(ge[float32], ge[float64], ge[int32], ge[int64], ge[uint8], nil).register("Ge")
	anyDType("Select", selectKernel)
	kernels{b: binaryKernel(scalarLoops(func(a, b bool) bool { return a && b }))}.register("LogicalAnd")
	kernels{b: binaryKernel(scalarLoops(func(a, b bool) bool { return a || b }))}.register("LogicalOr")
	kernels{b: unaryKernel(1, mapLoop(func(a bool) bool { return !a }))}.register("LogicalNot")
}
