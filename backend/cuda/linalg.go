package cuda

import (
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Cholesky and TriangularSolve (ops/linalg.go), by the linalg family's
// kernels: the CPU's algorithms, bit for bit.

// choleskyBlock is the threads of a Cholesky block (one matrix).
const choleskyBlock = 128

func init() {
	for _, d := range kernels.LinalgTypes {
		eager.RegisterKernel("Cholesky", device.GPU, tensorType(d), cholesky(d))
		eager.RegisterKernel("TriangularSolve", device.GPU, tensorType(d), triangularSolve(d))
	}
}

func cholesky(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		a, out := c.Inputs[0], outs[0]
		n := a.Dim(-1)
		if out.NumElements() == 0 {
			return
		}
		args := newArgs().Ptr(ptr(out)).Ptr(ptr(a)).U64(uint64(n))
		check(c, gpu(c).launchBlocks("linalg", kernels.Name("cholesky", string(d)), out.NumElements()/(n*n), choleskyBlock, args))
	}
}

func triangularSolve(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		a, b, out := c.Inputs[0], c.Inputs[1], outs[0]
		at := c.Attrs.(opattr.TriangularSolveAttrs)
		n, m := b.Dim(-2), b.Dim(-1)
		if out.NumElements() == 0 {
			return
		}
		jobs := out.NumElements() / n
		v := kernels.SolveVariant{Upper: at.Upper, Transpose: at.Transpose, Unit: at.UnitDiagonal}
		args := newArgs().Ptr(ptr(out)).Ptr(ptr(a)).Ptr(ptr(b)).U64(uint64(n)).U64(uint64(m)).U64(uint64(jobs))
		check(c, gpu(c).launch("linalg", kernels.Name("trisolve", string(d), v.Suffix()), jobs, args))
	}
}
