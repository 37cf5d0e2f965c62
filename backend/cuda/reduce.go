package cuda

import (
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/backend/move"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Reduce (ops/reduce.go): the reduced dimensions made one block (a
// permuted copy when they are not), then the rows kernel where they are
// the last ones and the columns kernel otherwise.

var reduceKindNames = map[ops.ReduceKind]string{ops.ReduceSum: "sum", ops.ReduceMean: "mean",
	ops.ReduceMax: "max", ops.ReduceMin: "min", ops.ReduceProd: "prod"}

func init() {
	for _, d := range kernels.Numeric {
		eager.RegisterKernel("Reduce", device.GPU, tensorType(d), reduce(d))
	}
}

func reduce(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		x, r, out := c.Inputs[0], c.Attrs.(ops.Reduction), outs[0]
		dims := r.Dims // sorted, non-negative
		lo, hi := 0, 0
		if len(dims) > 0 {
			lo, hi = dims[0], dims[len(dims)-1]+1
		}
		if hi-lo != len(dims) {
			var kept []int
			for a := range x.Rank() {
				if !slices.Contains(dims, a) {
					kept = append(kept, a)
				}
			}
			x = move.Permuted(c, x, append(kept, dims...))
			defer x.Release()
			lo, hi = len(kept), x.Rank()
		}
		shape := x.Shape()
		outer, mid, inner := tensor.Shape(shape[:lo]).NumElements(), tensor.Shape(shape[lo:hi]).NumElements(), tensor.Shape(shape[hi:]).NumElements()
		n := outer * inner
		if n == 0 {
			return
		}
		g, kind := gpu(c), reduceKindNames[r.Kind]
		if inner == 1 {
			blocks := min(outer, max(g.info.SMs, 1)*32)
			args := new(cu.Args).Ptr(ptr(out)).Ptr(ptr(x)).U64(uint64(outer)).U64(uint64(mid))
			check(c, g.launchBlocks("reduce", kernels.Name("reduce_rows", kind, string(d)), blocks, kernels.ReduceBlock, args))
			return
		}
		args := new(cu.Args).Ptr(ptr(out)).Ptr(ptr(x)).U64(uint64(n)).U64(uint64(mid)).U64(uint64(inner))
		check(c, g.launch("reduce", kernels.Name("reduce_cols", kind, string(d)), n, args))
	}
}
