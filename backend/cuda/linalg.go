package cuda

import (
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Cholesky and TriangularSolve (ops/linalg.go), LU, Solve, Det and
// Slogdet (ops/linalg_lu.go), MatrixExp (ops/linalg_expm.go), Eigh, QR and SVD (ops/linalg_eigh.go, linalg_qr.go,
// linalg_svd.go), by the linalg family's
// kernels: the CPU's algorithms, bit for bit (Slogdet's logarithms
// within 2 ulps).

// choleskyBlock is the threads of a Cholesky block (one matrix).
const choleskyBlock = 128

func init() {
	for _, d := range kernels.LinalgTypes {
		eager.RegisterKernel("Cholesky", device.GPU, tensorType(d), cholesky(d))
		eager.RegisterKernel("TriangularSolve", device.GPU, tensorType(d), triangularSolve(d))
		eager.RegisterKernel("LU", device.GPU, tensorType(d), luFactor(d))
		eager.RegisterKernel("Solve", device.GPU, tensorType(d), solve(d))
		eager.RegisterKernel("Det", device.GPU, tensorType(d), determinant(d, false))
		eager.RegisterKernel("Slogdet", device.GPU, tensorType(d), determinant(d, true))
		eager.RegisterKernel("MatrixExp", device.GPU, tensorType(d), matrixExp(d))
		eager.RegisterKernel("Eigh", device.GPU, tensorType(d), eigh(d))
		eager.RegisterKernel("QR", device.GPU, tensorType(d), qr(d))
		eager.RegisterKernel("SVD", device.GPU, tensorType(d), svd(d))
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

// luBlock is the threads of an LU block (one matrix).
const luBlock = 128

// factor queues the LU factorization of each matrix of a [..., n, n]:
// its float64 factors and u32 exchanges, into piv where it is given
// (Int32 [..., n]) or into a tensor of its own; the caller releases work
// and what factor made.
func factor(c *eager.Call, d kernels.DType, a, piv *tensor.Tensor) (work, madePiv *tensor.Tensor) {
	n := a.Dim(-1)
	batch := a.Shape()[:a.Rank()-2].NumElements()
	var err error
	if work, err = tensor.Empty(c.Device, tensor.Float64, tensor.Shape{batch, n, n}); err != nil {
		c.Fail(err, "the LU factors of %v", a.Shape())
	}
	if piv == nil {
		if piv, err = tensor.Empty(c.Device, tensor.Int32, tensor.Shape{batch, n}); err != nil {
			work.Release()
			c.Fail(err, "the LU exchanges of %v", a.Shape())
		}
		madePiv = piv
	}
	if n > 0 && batch > 0 {
		args := newArgs().Ptr(ptr(work)).Ptr(ptr(piv)).Ptr(ptr(a)).U64(uint64(n))
		check(c, gpu(c).launchBlocks("linalg", kernels.Name("lu", string(d)), batch, luBlock, args))
	}
	return work, madePiv
}

// factorInto factors a into LU's outputs outs (lu, pivots, perm),
// returning the float64 factors for the caller to use and release.
func factorInto(c *eager.Call, d kernels.DType, a *tensor.Tensor, outs []*tensor.Tensor) *tensor.Tensor {
	work, _ := factor(c, d, a, outs[1])
	n := a.Dim(-1)
	if batch := outs[2].NumElements() / max(n, 1); n > 0 && batch > 0 {
		args := newArgs().Ptr(ptr(outs[0])).Ptr(ptr(outs[2])).Ptr(ptr(work)).Ptr(ptr(outs[1])).U64(uint64(n)).U64(uint64(batch))
		check(c, gpu(c).launch("linalg", kernels.Name("luout", string(d)), batch*n*n, args))
	}
	return work
}

func luFactor(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		factorInto(c, d, c.Inputs[0], outs).Release()
	}
}

func solve(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		a, b, out := c.Inputs[0], c.Inputs[1], outs[0]
		n, m := b.Dim(-2), b.Dim(-1)
		if n == 0 {
			return
		}
		work := factorInto(c, d, a, outs[1:])
		defer work.Release()
		if out.NumElements() == 0 {
			return
		}
		jobs := out.NumElements() / n
		y := temporary(c, tensor.Float64, tensor.Shape{jobs, n}, "the solve's scratch")
		defer y.Release()
		args := newArgs().Ptr(ptr(out)).Ptr(ptr(work)).Ptr(ptr(outs[2])).Ptr(ptr(b)).Ptr(ptr(y)).U64(uint64(n)).U64(uint64(m)).U64(uint64(jobs))
		check(c, gpu(c).launch("linalg", kernels.Name("lusolve", string(d)), jobs, args))
	}
}

// determinant is Det's kernel, or where logs Slogdet's.
func determinant(d kernels.DType, logs bool) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		a := c.Inputs[0]
		batch := outs[0].NumElements()
		if batch == 0 {
			return
		}
		work, piv := factor(c, d, a, nil)
		defer work.Release()
		defer piv.Release()
		args, name := newArgs().Ptr(ptr(outs[0])), "det"
		if logs {
			args, name = args.Ptr(ptr(outs[1])), "slogdet"
		}
		args = args.Ptr(ptr(work)).Ptr(ptr(piv)).U64(uint64(a.Dim(-1))).U64(uint64(batch))
		check(c, gpu(c).launch("linalg", kernels.Name(name, string(d)), batch, args))
	}
}

// expmBlock is the threads of a MatrixExp block (one matrix).
const expmBlock = 128

func matrixExp(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		a := c.Inputs[0]
		n := a.Dim(-1)
		if outs[0].NumElements() == 0 {
			return
		}
		batch := outs[0].NumElements() / (n * n)
		work := temporary(c, tensor.Float64, tensor.Shape{batch, kernels.ExpmSlots, n, n}, "MatrixExp's work")
		defer work.Release()
		piv := temporary(c, tensor.Int32, tensor.Shape{batch, n}, "MatrixExp's exchanges")
		defer piv.Release()
		args := newArgs().Ptr(ptr(outs[0])).Ptr(ptr(work)).Ptr(ptr(piv)).Ptr(ptr(a)).U64(uint64(n))
		check(c, gpu(c).launchBlocks("linalg", kernels.Name("expm", string(d)), batch, expmBlock, args))
	}
}

// eighBlock is the threads of an Eigh block (one matrix).
const eighBlock = 128

func eigh(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		a := c.Inputs[0]
		n := a.Dim(-1)
		if outs[1].NumElements() == 0 {
			return
		}
		batch := outs[1].NumElements() / (n * n)
		work := temporary(c, tensor.Float64, tensor.Shape{batch, 2, n, n}, "Eigh's rotations")
		defer work.Release()
		order := temporary(c, tensor.Int32, tensor.Shape{batch, n}, "Eigh's order")
		defer order.Release()
		args := newArgs().Ptr(ptr(outs[0])).Ptr(ptr(outs[1])).Ptr(ptr(work)).Ptr(ptr(order)).Ptr(ptr(a)).U64(uint64(n))
		check(c, gpu(c).launchBlocks("linalg", kernels.Name("eigh", string(d)), batch, eighBlock, args))
	}
}

// qrBlock is the threads of a QR block (one matrix).
const qrBlock = 128

func qr(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		a := c.Inputs[0]
		m, n := a.Dim(-2), a.Dim(-1)
		k := min(m, n)
		batch := a.Shape()[:a.Rank()-2].NumElements()
		if k == 0 || batch == 0 {
			return
		}
		work := temporary(c, tensor.Float64, tensor.Shape{batch, m*n + 2*m*k}, "QR's work")
		defer work.Release()
		args := newArgs().Ptr(ptr(outs[0])).Ptr(ptr(outs[1])).Ptr(ptr(work)).Ptr(ptr(a)).U64(uint64(m)).U64(uint64(n))
		check(c, gpu(c).launchBlocks("linalg", kernels.Name("qr", string(d)), batch, qrBlock, args))
	}
}

// svdBlock is the threads of an SVD block (one matrix).
const svdBlock = 128

func svd(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		a := c.Inputs[0]
		m, n := a.Dim(-2), a.Dim(-1)
		r, k := max(m, n), min(m, n)
		batch := a.Shape()[:a.Rank()-2].NumElements()
		if k == 0 || batch == 0 {
			return
		}
		work := temporary(c, tensor.Float64, tensor.Shape{batch, 2*r*k + 2*k*k + k}, "SVD's work")
		defer work.Release()
		order := temporary(c, tensor.Int32, tensor.Shape{batch, k}, "SVD's order")
		defer order.Release()
		args := newArgs().Ptr(ptr(outs[0])).Ptr(ptr(outs[1])).Ptr(ptr(outs[2])).Ptr(ptr(work)).Ptr(ptr(order)).Ptr(ptr(a)).U64(uint64(m)).U64(uint64(n))
		check(c, gpu(c).launchBlocks("linalg", kernels.Name("svd", string(d)), batch, svdBlock, args))
	}
}
