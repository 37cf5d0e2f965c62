package benchmodels

import (
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// OpStep is one op's training step of the op-step benchmarks (the CPU's
// BenchmarkOpStep, the GPU's BenchmarkOpStepGPU, their PyTorch twins in
// bench/peers): the op forward on Inputs, its output summed, the
// gradients of the inputs.
type OpStep struct {
	Name   string
	Inputs []*tensor.Tensor
	Fn     func(in []*tensor.Tensor) *tensor.Tensor
}

// Run is the step: recorded on a tape that releases its intermediates
// (as nn's steps do), the gradients released.
func (s OpStep) Run() {
	tp := tape.New(tape.Options{ReleaseIntermediates: true})
	tp.Watch(s.Inputs...)
	for _, g := range tp.Gradient(ops.Sum(s.Fn(s.Inputs)), s.Inputs...) {
		g.Release()
	}
}

// OpSizes are an op-step sweep's sizes: Rows x Cols float32 for the
// elementwise, row and sort ops (two of Rows x Cols/2 concatenated); an
// embedding table of Vocab x Width looked up by [IDRows IDs] ids; a
// Conv1D over [Batch, Length, Channels] (kernel 5, as many filters, same
// padding); a batch of 2·Batch matrix products [Mat, Mat/2]·[Mat/2, Mat];
// the factorizations of Mats matrices of Order (Cholesky of m·mᵀ + n·I,
// Solve of a + n·I with four right-hand columns, Eigh of m + mᵀ, QR and
// SVD of [Order, Order/2], MatrixExp of m/n).
type OpSizes struct {
	Rows, Cols                int
	Vocab, Width, IDs, IDRows int
	Batch, Length, Channels   int
	Mat                       int
	Mats, Order               int
}

// CPUOpSizes are the CPU's sweep's (bench/README "One op's training
// step").
var CPUOpSizes = OpSizes{Rows: 4096, Cols: 1000, Vocab: 30000, Width: 256, IDs: 256, IDRows: 64,
	Batch: 32, Length: 256, Channels: 64, Mat: 128, Mats: 256, Order: 32}

// OpSteps is the sweep at sizes z, its tensors drawn from seed 13 on the
// default device.
func OpSteps(z OpSizes) []OpStep {
	rng := tensor.NewRNG(13)
	f32 := func(shape ...int) *tensor.Tensor { return tensor.RandNormal(rng, tensor.Float32, shape...) }
	rows := f32(z.Rows, z.Cols)
	table := f32(z.Vocab, z.Width)
	ids := ops.Cast(tensor.RandUniform(rng, tensor.Float64, 0, float64(z.Vocab), z.IDRows, z.IDs), tensor.Int64)
	seq, filter := f32(z.Batch, z.Length, z.Channels), f32(1, 5, z.Channels, z.Channels)
	left, right := f32(z.Batch*2, z.Mat, z.Mat/2), f32(z.Batch*2, z.Mat/2, z.Mat)
	half, half2 := f32(z.Rows, z.Cols/2), f32(z.Rows, z.Cols-z.Cols/2)
	drops := tensor.NewRNG(5)
	zero, tenth, three := tensor.Scalar(float32(0)), tensor.Scalar(float32(0.1)), tensor.Scalar(float32(3))
	one := func(f func(x *tensor.Tensor) *tensor.Tensor) func(in []*tensor.Tensor) *tensor.Tensor {
		return func(in []*tensor.Tensor) *tensor.Tensor { return f(in[0]) }
	}
	two := func(f func(x, y *tensor.Tensor) *tensor.Tensor) func(in []*tensor.Tensor) *tensor.Tensor {
		return func(in []*tensor.Tensor) *tensor.Tensor { return f(in[0], in[1]) }
	}
	r := []*tensor.Tensor{rows}
	square, rhs, tall := f32(z.Mats, z.Order, z.Order), f32(z.Mats, z.Order, 4), f32(z.Mats, z.Order, z.Order/2)
	shift := ops.Mul(tensor.Eye(tensor.Float32, z.Order), tensor.Scalar(float32(z.Order)))
	inverseOrder := tensor.Scalar(float32(1) / float32(z.Order))
	return []OpStep{
		{"Sort", r, one(func(x *tensor.Tensor) *tensor.Tensor { return ops.Sort(x, -1, false) })},
		{"TopK5", r, one(func(x *tensor.Tensor) *tensor.Tensor { v, _ := ops.TopK(x, 5); return v })},
		{"Cumsum", r, one(func(x *tensor.Tensor) *tensor.Tensor { return ops.Cumsum(x, -1, false, false) })},
		{"LogSoftmax", r, one(func(x *tensor.Tensor) *tensor.Tensor { return ops.LogSoftmax(x, -1) })},
		{"Embedding", []*tensor.Tensor{table}, one(func(x *tensor.Tensor) *tensor.Tensor { return ops.Gather(x, ids, 0) })},
		{"Conv1D", []*tensor.Tensor{seq, filter}, two(func(x, f *tensor.Tensor) *tensor.Tensor {
			y := ops.Conv2D(ops.Reshape(x, z.Batch, 1, z.Length, z.Channels), f, ops.Conv2DOpts{Padding: ops.Same})
			return ops.Reshape(y, z.Batch, z.Length, z.Channels)
		})},
		{"GeluTanh", r, one(ops.GeluTanh)},
		{"Dropout", r, one(func(x *tensor.Tensor) *tensor.Tensor { return ops.Dropout(x, 0.1, drops) })},
		{"SoftmaxAxis0", r, one(func(x *tensor.Tensor) *tensor.Tensor { return ops.Softmax(x, 0) })},
		{"BatchMatMul", []*tensor.Tensor{left, right}, two(ops.MatMul)},
		{"Einsum", []*tensor.Tensor{left, right}, two(func(x, y *tensor.Tensor) *tensor.Tensor { return ops.Einsum("bij,bjk->bik", x, y) })},
		{"Concat", []*tensor.Tensor{half, half2}, two(func(x, y *tensor.Tensor) *tensor.Tensor { return ops.Concatenate(-1, x, y) })},
		{"Norm", r, one(func(x *tensor.Tensor) *tensor.Tensor { return ops.Norm(x, 2, -1) })},
		{"Var", r, one(func(x *tensor.Tensor) *tensor.Tensor { return ops.Var(x, -1) })},
		{"Pow3", r, one(func(x *tensor.Tensor) *tensor.Tensor { return ops.Pow(x, three) })},
		{"Where", r, one(func(x *tensor.Tensor) *tensor.Tensor { return ops.Where(ops.Gt(x, zero), x, ops.Mul(x, tenth)) })},
		{"MaskedSelect", r, one(func(x *tensor.Tensor) *tensor.Tensor { return ops.MaskedSelect(x, ops.Gt(x, zero)) })},
		{"Sin", r, one(ops.Sin)},
		{"Atan", r, one(ops.Atan)},
		{"Log1p", r, one(func(x *tensor.Tensor) *tensor.Tensor { return ops.Log1p(ops.Abs(x)) })},
		{"LeakyRelu", r, one(func(x *tensor.Tensor) *tensor.Tensor { return ops.LeakyRelu(x, 0.1) })},
		{"Elu", r, one(ops.Elu)},
		{"Silu", r, one(ops.Silu)},
		{"Mish", r, one(ops.Mish)},
		{"HardSwish", r, one(ops.HardSwish)},
		{"Lgamma", r, one(func(x *tensor.Tensor) *tensor.Tensor { return ops.Lgamma(ops.Add(ops.Abs(x), tenth)) })},
		{"LogNdtr", r, one(ops.LogNdtr)},
		{"Cholesky", []*tensor.Tensor{square}, one(func(x *tensor.Tensor) *tensor.Tensor {
			return ops.Cholesky(ops.Add(ops.MatMulT(x, x, false, true), shift))
		})},
		{"Solve", []*tensor.Tensor{square, rhs}, two(func(a, b *tensor.Tensor) *tensor.Tensor { return ops.Solve(ops.Add(a, shift), b) })},
		{"Eigh", []*tensor.Tensor{square}, one(func(x *tensor.Tensor) *tensor.Tensor {
			v, _ := ops.Eigh(ops.Add(x, ops.Transpose(x, 0, 2, 1)))
			return v
		})},
		{"QR", []*tensor.Tensor{tall}, one(func(x *tensor.Tensor) *tensor.Tensor { _, r := ops.QR(x); return r })},
		{"SVD", []*tensor.Tensor{tall}, one(func(x *tensor.Tensor) *tensor.Tensor { _, s, _ := ops.SVD(x); return s })},
		{"MatrixExp", []*tensor.Tensor{square}, one(func(x *tensor.Tensor) *tensor.Tensor { return ops.MatrixExp(ops.Mul(x, inverseOrder)) })},
	}
}
