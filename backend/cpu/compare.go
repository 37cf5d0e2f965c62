package cpu

import (
	"unsafe"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/hostmem"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernels of the comparisons, Select (ops/compare.go) and the logical ops
// (ops/logical.go).

type ordered interface{ tensor.Num }

// cmpOp is a comparison the kernels compute.
type cmpOp int

const (
	cmpEq cmpOp = iota
	cmpNe
	cmpLt
	cmpLe
	cmpGt
	cmpGe
)

// swapped is the comparison of the operands swapped: a < b is b > a.
func (op cmpOp) swapped() cmpOp {
	return [...]cmpOp{cmpEq, cmpNe, cmpGt, cmpGe, cmpLt, cmpLe}[op]
}

// cmpKernels are op's kernels for the numeric dtypes, and for bool where
// b is given (Eq and Ne).
func cmpKernels(op cmpOp, b func(a, b bool) bool) kernels {
	k := kernels{
		f32: binaryKernel(cmpLoops[float32](op)), f64: binaryKernel(cmpLoops[float64](op)),
		i32: binaryKernel(cmpLoops[int32](op)), i64: binaryKernel(cmpLoops[int64](op)), u8: binaryKernel(cmpLoops[uint8](op)),
	}
	if b != nil {
		k.b = binaryKernel(scalarLoops(b))
	}
	return k
}

// cmpLoops are op's loops over T, the comparison inside each loop (a call
// an element, through a function value, took 2 ns of the element's 2.3).
func cmpLoops[T ordered](op cmpOp) binLoops[T, bool] {
	return binLoops[T, bool]{
		vv: func(o []bool, a, b []T) { cmpVV(op, o, a, b) },
		vs: func(o []bool, a []T, b T) { cmpVS(op, o, a, b) },
		sv: func(o []bool, a T, b []T) { cmpVS(op.swapped(), o, b, a) },
	}
}

func cmpVV[T ordered](op cmpOp, o []bool, a, b []T) {
	a, b = a[:len(o)], b[:len(o)]
	switch op {
	case cmpEq:
		for i := range o {
			o[i] = a[i] == b[i]
		}
	case cmpNe:
		for i := range o {
			o[i] = a[i] != b[i]
		}
	case cmpLt:
		for i := range o {
			o[i] = a[i] < b[i]
		}
	case cmpLe:
		for i := range o {
			o[i] = a[i] <= b[i]
		}
	case cmpGt:
		for i := range o {
			o[i] = a[i] > b[i]
		}
	default:
		for i := range o {
			o[i] = a[i] >= b[i]
		}
	}
}

func cmpVS[T ordered](op cmpOp, o []bool, a []T, b T) {
	a = a[:len(o)]
	switch op {
	case cmpEq:
		for i := range o {
			o[i] = a[i] == b
		}
	case cmpNe:
		for i := range o {
			o[i] = a[i] != b
		}
	case cmpLt:
		for i := range o {
			o[i] = a[i] < b
		}
	case cmpLe:
		for i := range o {
			o[i] = a[i] <= b
		}
	case cmpGt:
		for i := range o {
			o[i] = a[i] > b
		}
	default:
		for i := range o {
			o[i] = a[i] >= b
		}
	}
}

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
			m := -U(boolByte(p[i*ps])) // all ones or zero
			o[i] = a[i*as]&m | b[i*bs]&^m
		}
	}
	if len(pv) == len(ov) && len(av) == len(ov) && len(bv) == len(ov) {
		deviceOf(c).Parallel(len(ov), 1, func(lo, hi int) {
			o, p, a, b := ov[lo:hi], pv[lo:hi], av[lo:hi], bv[lo:hi]
			p, a, b = p[:len(o)], a[:len(o)], b[:len(o)]
			for i := range o { // unstrided: no multiplications, no bounds checks
				m := -U(boolByte(p[i]))
				o[i] = a[i]&m | b[i]&^m
			}
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
	cmpKernels(cmpEq, func(a, b bool) bool { return a == b }).register("Eq")
	cmpKernels(cmpNe, func(a, b bool) bool { return a != b }).register("Ne")
	cmpKernels(cmpLt, nil).register("Lt")
	cmpKernels(cmpLe, nil).register("Le")
	cmpKernels(cmpGt, nil).register("Gt")
	cmpKernels(cmpGe, nil).register("Ge")
	anyDType("Select", selectKernel)
	kernels{b: binaryKernel(scalarLoops(func(a, b bool) bool { return a && b }))}.register("LogicalAnd")
	kernels{b: binaryKernel(scalarLoops(func(a, b bool) bool { return a || b }))}.register("LogicalOr")
	kernels{b: unaryKernel(1, mapLoop(func(a bool) bool { return !a }))}.register("LogicalNot")
}

// boolByte is b's byte, 0 or 1, without a branch.
func boolByte(b bool) uint8 { return *(*uint8)(unsafe.Pointer(&b)) }
