package kernels

import (
	"fmt"
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"
)

// Fused kernels are generated at run time, one per chain of float32
// elementwise ops a traced graph runs on the GPU: "fused" (out, in0, ...,
// in<k−1>, n) computes every step for one element in registers and stores
// the last, each step the very code of the op's own kernel (unaryOp,
// binaryOp), so the result is bitwise the unfused one.

// FusedOperand is where a step's operand comes from: the previous step,
// or input Input, full (element i) or a single value (element 0).
type FusedOperand struct {
	Chain  bool
	Input  int
	Single bool
}

// FusedStep is one op of the chain: a float32 unary op (UnaryOps) with one
// operand, or a binary one (BinaryOps) with two.
type FusedStep struct {
	Op   string
	Args []FusedOperand
}

// FusedName is the fused kernel's name in its module.
const FusedName = "fused"

// Fusible reports whether op (a kernel op name) with that many operands
// can be a step: a float32 op whose result is float32.
func Fusible(op string, operands int) bool {
	switch operands {
	case 1:
		return op != "isfinite" && slices.Contains(UnaryOps(F32), op)
	case 2:
		return slices.Contains(BinaryOps(F32), op)
	}
	return false
}

// Fused returns the PTX module of the chain over inputs inputs, or an
// error naming a step it cannot compute.
func Fused(steps []FusedStep, inputs int) (string, error) {
	for i, st := range steps {
		if !Fusible(st.Op, len(st.Args)) {
			return "", fmt.Errorf("kernels: fused step %d: no float32 op %q of %d operands", i, st.Op, len(st.Args))
		}
		for _, a := range st.Args {
			if (a.Chain && i == 0) || (!a.Chain && (a.Input < 0 || a.Input >= inputs)) {
				return "", fmt.Errorf("kernels: fused step %d: operand %+v of %d inputs", i, a, inputs)
			}
		}
	}
	k := ptx.NewKernel(FusedName)
	o := k.ParamPtr("out")
	in := make([]ptx.Reg, inputs)
	for j := range in {
		in[j] = k.ParamPtr(fmt.Sprintf("in%d", j))
	}
	n := k.Param("n", ptx.U64)
	k.GridStride(n, func(i ptx.Reg) {
		var cur ptx.Reg
		operand := func(a FusedOperand) ptx.Reg {
			switch {
			case a.Chain:
				return cur
			case a.Single:
				return load(k, F32, in[a.Input])
			}
			return load(k, F32, k.Addr(in[a.Input], i, 4))
		}
		for _, st := range steps {
			if len(st.Args) == 1 {
				cur = unaryOp(k, st.Op, F32, operand(st.Args[0]))
				continue
			}
			cur = binaryOp(k, st.Op, F32, operand(st.Args[0]), operand(st.Args[1]))
		}
		store(k, F32, k.Addr(o, i, 4), cur)
	})
	m := ptx.NewModule()
	m.Add(k)
	return m.String(), nil
}
