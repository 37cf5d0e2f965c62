package cuda

import (
	"fmt"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// The GPU's eager.Fuser: a traced graph's chains of float32 elementwise
// ops (control/graph's fusion) become one kernel each, its PTX generated
// when the graph is optimised (kernels.Fused) and loaded on each GPU the
// graph runs on at its first launch there.

func init() { eager.RegisterFuser(device.GPU, fuser{}) }

type fuser struct{}

// kernelOp is the kernel op name of the elementwise op named op with that
// many inputs.
func kernelOp(op string, inputs int) (string, bool) {
	names := unaryOps
	if inputs == 2 {
		names = binaryOps
	}
	k, ok := names[op]
	return k, ok
}

func (fuser) CanFuse(op string, inputs int) bool {
	k, ok := kernelOp(op, inputs)
	return ok && kernels.Fusible(k, inputs)
}

func (fuser) Fuse(steps []eager.FuseStep) (eager.Kernel, error) {
	ks := make([]kernels.FusedStep, len(steps))
	inputs := 0
	for i, st := range steps {
		k, ok := kernelOp(st.Op, len(st.Args))
		if !ok {
			return nil, fmt.Errorf("cuda: no elementwise kernel for %s of %d inputs", st.Op, len(st.Args))
		}
		ks[i].Op = k
		for _, a := range st.Args {
			ks[i].Args = append(ks[i].Args, kernels.FusedOperand{Chain: a.Chain, Input: a.Input, Single: a.Single})
			if !a.Chain {
				inputs = max(inputs, a.Input+1)
			}
		}
	}
	src, err := kernels.Fused(ks, inputs)
	if err != nil {
		return nil, err
	}
	return func(c *eager.Call, outs []*tensor.Tensor) {
		out := outs[0]
		n := out.NumElements()
		if n == 0 {
			return
		}
		d := gpu(c)
		f, err := d.compiled(src, kernels.FusedName)
		check(c, err)
		args := newArgs().Ptr(ptr(out))
		for _, x := range c.Inputs {
			args.Ptr(ptr(x))
		}
		check(c, d.launchFunction(f, d.gridFor(n), blockSize, args.U64(uint64(n))))
	}, nil
}
