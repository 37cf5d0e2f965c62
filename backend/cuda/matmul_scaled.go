package cuda

import (
	"errors"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// ScaledMatMul (ops/matmul_scaled.go) of 8-bit floats: cuBLASLt's FP8
// GEMM on the tensor cores where the device has it and the shape suits
// its rules (cu.Gemm.FP8A), b turned into the [n k] layout it reads
// first; otherwise the operands widened to float32, the float32 product,
// one multiplication by scaleA·scaleB and the rounding to the output's
// dtype, as the CPU computes it.

func init() {
	for _, dt := range []tensor.DType{tensor.Float8E4M3, tensor.Float8E5M2} {
		eager.RegisterKernel("ScaledMatMul", device.GPU, dt, scaledMatmul)
	}
}

// gemmTypes are the GEMM element types of the tensor dtypes.
var gemmTypes = map[tensor.DType]cu.GemmType{
	tensor.Float32: cu.Float32, tensor.Float64: cu.Float64, tensor.BFloat16: cu.BFloat16, tensor.Float16: cu.Float16,
	tensor.Float8E4M3: cu.Float8E4M3, tensor.Float8E5M2: cu.Float8E5M2,
}

func scaledMatmul(c *eager.Call, outs []*tensor.Tensor) {
	a, b, scaleA, scaleB, out := c.Inputs[0], c.Inputs[1], c.Inputs[2], c.Inputs[3], outs[0]
	m, k, n := a.Dim(0), a.Dim(1), b.Dim(1)
	if m*n == 0 {
		return
	}
	d := gpu(c)
	if m%16 == 0 && n%16 == 0 && k%16 == 0 && k > 0 {
		// Row-major a·b is column-major (a·b)ᵀ = bᵀ·aᵀ: cuBLASLt's A is b,
		// read transposed from its [n k] copy, and its B is a as stored.
		bt := temporary(c, b.DType(), tensor.Shape{n, k}, "the FP8 product's transposed operand")
		defer bt.Release()
		check(c, d.Copy(bt.Buffer(), 0, []int{k, 1}, b.Buffer(), 0, []int{1, n}, []int{n, k}, 1))
		err := d.gemm(cu.Gemm{
			Type: gemmTypes[out.DType()], TransA: true, M: n, N: m, K: k, Alpha: 1,
			A: ptr(bt), LDA: k, B: ptr(a), LDB: k, C: ptr(out), LDC: n, Batch: 1,
			FP8A: gemmTypes[b.DType()], FP8B: gemmTypes[a.DType()], ScaleA: ptr(scaleB), ScaleB: ptr(scaleA),
		})
		if !errors.Is(err, cu.ErrGemmType) {
			check(c, err)
			return
		}
	}
	wide := func(x *tensor.Tensor) *tensor.Tensor {
		t := temporary(c, tensor.Float32, x.Shape(), "a float32 copy of an 8-bit operand")
		check(c, d.castInto(t, x))
		return t
	}
	a32, b32 := wide(a), wide(b)
	defer a32.Release()
	defer b32.Release()
	y := out
	if out.DType() != tensor.Float32 {
		y = temporary(c, tensor.Float32, out.Shape(), "the float32 product")
		defer y.Release()
	}
	check(c, d.product(product{a: a32, b: b32, c: y, m: m, k: k, n: n, batch: 1}))
	s := temporary(c, tensor.Float32, tensor.Shape{}, "the product of the scales")
	defer s.Release()
	check(c, d.mulInto(s, scaleA, scaleB))
	check(c, d.mulInto(y, y, s))
	if y != out {
		check(c, d.castInto(out, y))
	}
}

// castInto queues out = x converted to out's dtype (same shape, another
// dtype).
func (d *Device) castInto(out, x *tensor.Tensor) error {
	from, to := kernelType(x.DType()), kernelType(out.DType())
	n := out.NumElements()
	if n == 0 {
		return nil
	}
	return d.launchVector("cast", kname("cast", string(from), string(to)), n, kernels.Lanes(from, to), newArgs().Ptr(ptr(out)).Ptr(ptr(x)).U64(uint64(n)))
}

// mulInto queues out = x·y of float32 tensors, y broadcast to x's shape
// (out's).
func (d *Device) mulInto(out, x, y *tensor.Tensor) error {
	shape := out.Shape()
	n := out.NumElements()
	geom := kernels.Geometry(shape, [][]int{strides(shape, x.Shape()), strides(shape, y.Shape())}, nil)
	args := newArgs().Ptr(ptr(out)).Ptr(ptr(x)).Ptr(ptr(y)).U64(uint64(n)).Bytes(geom, 8)
	return d.launch("binary", kernels.Name("mul", string(kernelType(out.DType())), "bc"), n, args)
}
