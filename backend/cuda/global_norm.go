package cuda

import (
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// SumOfSquares and ScaleEach (ops/global_norm.go) as multi-tensor kernels
// (kernels/multi.go): a launch for every kernels.OptimSlots tensors, a
// block a chunk; the sum's block partials (float64) folded by Reduce. The
// half types' kernels widen as they read (no copies in float32), the sum
// rounded to float32 and then to the half type, as the op's computing
// through float32 rounds it (SumOfSquaresAs: to its float32 or float64
// once).

func init() {
	for _, d := range slices.Concat(kernels.Floats, kernels.Halves) {
		eager.RegisterKernel("SumOfSquares", device.GPU, tensorType(d), sumOfSquares(d))
		eager.RegisterKernel("ScaleEach", device.GPU, tensorType(d), scaleEach(d))
	}
}

// table lists xs (with outs beside them, when given) for a multi-tensor
// kernel, leaving out the empty ones.
func table(xs, outs []*tensor.Tensor) []kernels.OptimTensor {
	var tab []kernels.OptimTensor
	for i, x := range xs {
		if n := x.NumElements(); n > 0 {
			ptrs := []uint64{uint64(ptr(x))}
			if outs != nil {
				ptrs = append(ptrs, uint64(ptr(outs[i])))
			}
			tab = append(tab, kernels.OptimTensor{Ptrs: ptrs, N: n})
		}
	}
	return tab
}

func sumOfSquares(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		g, out := gpu(c), outs[0]
		tab := table(c.Inputs, nil)
		total := 0
		for _, t := range tab {
			total += (t.N + kernels.OptimChunk - 1) / kernels.OptimChunk
		}
		if total == 0 {
			check(c, g.Fill(out.Buffer(), 0, 1, make([]byte, out.DType().Size())))
			return
		}
		partial := temporary(c, tensor.Float64, tensor.Shape{total}, "the sum of squares' partials")
		defer partial.Release()
		check(c, eachTable(tab, func(slots int, tab []byte, blocks, before int) error {
			args := newArgs().Bytes(tab, 8).Ptr(ptr(partial) + cu.Ptr(8*before))
			return g.launchBlocks("optim", kernels.SumSquaresName(slots, d), blocks, blockSize, args)
		}))
		if out.DType() == tensor.Float64 { // the inputs', or SumOfSquaresAs's
			reduceInto(c, kernels.F64, partial, []int{0}, ops.ReduceSum, out)
			return
		}
		sum := temporary(c, tensor.Float64, tensor.Shape{}, "the sum of squares")
		defer sum.Release()
		reduceInto(c, kernels.F64, partial, []int{0}, ops.ReduceSum, sum)
		if d.Half() && out.DType() != tensor.Float32 { // not SumOfSquaresAs's float32
			sum32 := temporary(c, tensor.Float32, tensor.Shape{}, "the sum of squares in float32")
			defer sum32.Release()
			check(c, g.castInto(sum32, sum))
			sum = sum32
		}
		check(c, g.castInto(out, sum))
	}
}

func scaleEach(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		g, scale := gpu(c), c.Inputs[0]
		check(c, eachTable(table(c.Inputs[1:], outs), func(slots int, tab []byte, blocks, _ int) error {
			return g.launchBlocks("optim", kernels.ScaleName(slots, d), blocks, blockSize, newArgs().Bytes(tab, 8).Ptr(ptr(scale)))
		}))
	}
}
