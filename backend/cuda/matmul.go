package cuda

import (
	"errors"
	"fmt"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// MatMul (ops/matmul.go) in float32 and float64 through cuBLAS: one
// strided batched GEMM per call, a rank-2 operand shared across the batch
// by a batch stride of 0. Integers by a kernel of the matmul family (a
// thread per output element; wrapping as the CPU's).

func init() {
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64, tensor.BFloat16, tensor.Float16} {
		eager.RegisterKernel("MatMul", device.GPU, dt, matmul)
		eager.RegisterKernel("FusedMatMul", device.GPU, dt, fusedMatmul)
		eager.RegisterKernel("FusedMatMulWeightsGrad", device.GPU, dt, weightsGrad)
	}
	for _, d := range []kernels.DType{kernels.S32, kernels.S64, kernels.U8} {
		eager.RegisterKernel("MatMul", device.GPU, tensorType(d), intMatmul(d))
	}
}

func intMatmul(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		a, b, out, at := c.Inputs[0], c.Inputs[1], outs[0], c.Attrs.(opattr.MatMulAttrs)
		m, k, n := at.Dims(a.Shape(), b.Shape())
		if out.NumElements() == 0 {
			return
		}
		sa, sb := uint64(m*k), uint64(k*n)
		if a.Rank() == 2 {
			sa = 0
		}
		if b.Rank() == 2 {
			sb = 0
		}
		total := out.NumElements()
		args := divisorArg(newArgs().Ptr(ptr(out)).Ptr(ptr(a)).Ptr(ptr(b)).U64(uint64(total/(m*n))).
			U64(uint64(m)).U64(uint64(k)), n, total).U64(sa).U64(sb).U64(flag(at.TransposeA)).U64(flag(at.TransposeB))
		check(c, gpu(c).launch("matmul", kernels.Name("matmul", string(d)), total, divisorArg(args, m*n, total)))
	}
}

// SetTF32 lets float32 MatMul on d run on the TF32 tensor cores (inputs
// rounded to 10 mantissa bits, as PyTorch's allow_tf32 does); off by
// default.
func (d *Device) SetTF32(on bool) { d.tf32.Store(on) }

// gemm queues g on the device's stream.
func (d *Device) gemm(g cu.Gemm) error {
	return d.ctx.Do(func() error { return d.ctx.Gemm(d.s, g) })
}

func matmul(c *eager.Call, outs []*tensor.Tensor) {
	a, b, out, at := c.Inputs[0], c.Inputs[1], outs[0], c.Attrs.(opattr.MatMulAttrs)
	m, k, n := at.Dims(a.Shape(), b.Shape())
	p := product{a: a, b: b, c: out, transA: at.TransposeA, transB: at.TransposeB, m: m, k: k, n: n, strideA: m * k, strideB: k * n}
	if a.Rank() == 2 {
		p.strideA = 0
	}
	if b.Rank() == 2 {
		p.strideB = 0
	}
	if m*n > 0 {
		p.batch = out.NumElements() / (m * n)
	}
	checkProduct(c, outs, gpu(c).product(p))
}

// checkProduct fails c with err, but where err says the device's GEMM
// does not take a half type (cu.ErrGemmType), or its epilogue, for a half
// call: that call computes through float32 instead.
func checkProduct(c *eager.Call, outs []*tensor.Tensor, err error) {
	if (errors.Is(err, cu.ErrGemmType) || errors.Is(err, cu.ErrNoEpilogue)) && outs[0].DType().IsHalf() && eager.ThroughFloat32(c, outs) {
		return
	}
	check(c, err)
}

// fusedMatmul is FusedMatMul: one GEMM whose epilogue adds the bias and
// applies Relu (cuBLASLt's), or, where the context has no epilogues, the
// GEMM then the bias and Relu kernels FusedConv2D uses.
func fusedMatmul(c *eager.Call, outs []*tensor.Tensor) {
	x, w, bias, out := c.Inputs[0], c.Inputs[1], c.Inputs[2], outs[0]
	relu := c.Attrs.(ops.FusedMatMulAttrs).Activation == ops.ReluActivation
	d := gpu(c)
	p := product{a: x, b: w, c: out, m: x.Dim(0), k: x.Dim(1), n: w.Dim(1), batch: 1, bias: bias, relu: relu}
	half := out.DType().IsHalf()
	if p.k > 0 && (!d.noEpilogue.Load() || half) {
		// cuBLASLt's Relu epilogue on float16 turns NaN into 0 (seen on an
		// H200, 2026-11-28; bfloat16's and float32's kept it), where Relu
		// keeps it: float16 takes the bias alone in the epilogue and Relu
		// by its own kernel, in place.
		ownRelu := relu && out.DType() == tensor.Float16
		p.relu = relu && !ownRelu
		err := d.product(p)
		if err == nil && ownRelu && out.NumElements() > 0 {
			n, kt := out.NumElements(), kernelType(out.DType())
			err = d.launchVector("unary", kname("relu", string(kt), ""), n, kernels.Lanes(kt), newArgs().Ptr(ptr(out)).Ptr(ptr(out)).U64(uint64(n)))
		}
		if half || !errors.Is(err, cu.ErrNoEpilogue) { // the half types have no bias kernels of their own
			checkProduct(c, outs, err)
			return
		}
		d.noEpilogue.Store(true)
	}
	if half {
		checkProduct(c, outs, fmt.Errorf("%w: no contraction", cu.ErrGemmType))
		return
	}
	p.bias, p.relu = nil, false
	check(c, d.product(p))
	check(c, d.biasRelu(out, bias, tensor.Shape{bias.Dim(0)}, relu))
}

// biasRelu adds bias, broadcast as along (out's trailing shape, ones
// where it does not vary), to out in place, then applies Relu where relu
// is set: one elementwise launch (addrelu where relu is set).
func (d *Device) biasRelu(out, bias *tensor.Tensor, along tensor.Shape, relu bool) error {
	n := out.NumElements()
	if n == 0 {
		return nil
	}
	dt, shape := kernelType(out.DType()), out.Shape()
	geom := kernels.Geometry(shape, [][]int{strides(shape, shape), strides(shape, along)}, nil)
	args := newArgs().Ptr(ptr(out)).Ptr(ptr(out)).Ptr(ptr(bias)).U64(uint64(n)).Bytes(geom, 8)
	op := "add"
	if relu {
		op = "addrelu"
	}
	return d.launch("binary", kernels.Name(op, string(dt), "bc"), n, args)
}

// product is a batch of row-major float products c = op(a)·op(b), op(x)
// = xᵀ where trans is set: op(a) is m×k, op(b) k×n, c m×n. The strides
// step a and b from one matrix of the batch to the next, in elements (0
// shares one matrix); c's matrices follow one another. With a bias (n
// elements) or relu, c = relu(op(a)·op(b) + bias) in the GEMM's epilogue.
// a, b and c are of one dtype, or a and b of a 16-bit float type and c
// float32 (cu.Gemm.In: no epilogue).
type product struct {
	a, b, c          *tensor.Tensor
	transA, transB   bool
	m, k, n          int
	strideA, strideB int
	batch            int
	bias             *tensor.Tensor
	relu             bool
	// biasGrad, where set, receives op(b)'s column sums (n elements of
	// c's dtype) from the GEMM's epilogue (cu.Gemm.BiasGradA: cuBLAS
	// multiplies b by a, so op(b)ᵀ is its A).
	biasGrad *tensor.Tensor
}

// weightsGrad is FusedMatMulWeightsGrad: dw = xᵀ·dz by one GEMM whose
// epilogue sums dz's rows into db (cuBLASLt's BGRADA), or, where the
// context has no such epilogue (cu.ErrNoEpilogue: no cuBLASLt, no
// algorithm for the shape or dtype), the GEMM and a column fold.
func weightsGrad(c *eager.Call, outs []*tensor.Tensor) {
	x, dz, dw, db := c.Inputs[0], c.Inputs[1], outs[0], outs[1]
	p := product{a: x, b: dz, c: dw, transA: true, m: x.Dim(1), k: x.Dim(0), n: dz.Dim(1), batch: 1}
	if !productSummingB(c, p, db) && db.NumElements() > 0 {
		reduceInto(c, kernelType(dz.DType()), dz, []int{0}, ops.ReduceSum, db)
	}
}

// productSummingB queues p, with op(b)'s column sums into sums (nil:
// none) by the GEMM's epilogue where the context runs it (p.biasGrad),
// and reports whether it wrote them; else the GEMM alone (a context
// without epilogues, a refusal of this one: the caller folds the
// columns itself).
func productSummingB(c *eager.Call, p product, sums *tensor.Tensor) bool {
	d := gpu(c)
	if sums != nil && p.k > 0 && p.batch == 1 && !d.noEpilogue.Load() {
		p.biasGrad = sums
		err := d.product(p)
		if !errors.Is(err, cu.ErrNoEpilogue) {
			check(c, err)
			return true
		}
		p.biasGrad = nil
	}
	check(c, d.product(p))
	return false
}

// product queues p: one strided batched GEMM (a fill where k is 0, which
// takes no epilogue). A p with an epilogue the context cannot run returns
// an error wrapping cu.ErrNoEpilogue, having queued nothing.
func (d *Device) product(p product) error {
	if p.c.NumElements() == 0 {
		return nil
	}
	if p.k == 0 && p.bias == nil && !p.relu {
		return d.Fill(p.c.Buffer(), 0, p.c.NumElements(), make([]byte, p.c.DType().Size()))
	}
	if p.k == 0 {
		return fmt.Errorf("%w: an epilogue without a contraction", cu.ErrNoEpilogue)
	}
	var bias, biasGrad cu.Ptr
	if p.bias != nil {
		bias = ptr(p.bias)
	}
	if p.biasGrad != nil {
		biasGrad = ptr(p.biasGrad)
	}
	t, in := gemmTypes[p.c.DType()], cu.GemmType(0)
	if a := gemmTypes[p.a.DType()]; a != t {
		in = a // 16-bit operands into float32 (cu.Gemm.In)
	}
	// Row-major C = op(A)·op(B) is column-major Cᵀ = op(B)ᵀ·op(A)ᵀ, and a
	// row-major matrix read column-major is its transpose: so cuBLAS
	// multiplies b by a, each transposed as the call asks.
	ldb, lda := p.n, p.k
	if p.transB {
		ldb = p.k
	}
	if p.transA {
		lda = p.m
	}
	return d.gemm(cu.Gemm{
		Type: t, TransA: p.transB, TransB: p.transA, M: p.n, N: p.m, K: p.k, Alpha: 1,
		A: ptr(p.b), LDA: ldb, StrideA: int64(p.strideB), B: ptr(p.a), LDB: lda, StrideB: int64(p.strideA),
		C: ptr(p.c), LDC: p.n, StrideC: int64(p.m * p.n), Batch: p.batch,
		TF32: t == cu.Float32 && in == 0 && d.tf32.Load(), Bias: bias, Relu: p.relu, In: in, BiasGradA: biasGrad,
	})
}
