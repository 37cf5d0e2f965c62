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

// BatchNorm and its backprop (ops/batchnorm.go), x viewed as [outer, C,
// inner], by kernels/batchnorm.go's kernels: the forward folds x and its
// square about a centre per feature in one pass, then writes y (two reads
// of x, one write); the backward folds dy and dy·(x − mean) together,
// then writes dx. Each fold is a sums kernel over parts of every feature
// (the cols kernel where the features are last, the planes kernel
// otherwise), the reduce kernels' fold of the parts, and a finishing
// kernel a thread a feature, in an order the shapes alone fix. A
// coefficient table [6, C] (float64) carries each feature's mean, r, γ·r,
// β and the input gradient's two constants between them. The half types
// run through float32 (eager/half.go).

func init() {
	for _, d := range slices.Concat(kernels.Floats, kernels.Halves) {
		eager.RegisterKernel("BatchNorm", device.GPU, tensorType(d), batchNorm(d))
		eager.RegisterKernel("BatchNormBackprop", device.GPU, tensorType(d), batchNormBackprop(d))
	}
}

// bnShape is a BatchNorm call's x as [outer, C, inner]; d is x's dtype,
// pd the parameters' and statistics' (float32 for a half x's: mixed
// precision's norms).
type bnShape struct {
	c                *eager.Call
	d, pd            kernels.DType
	outer, ch, inner int
}

func newBNShape(c *eager.Call, d kernels.DType) bnShape {
	outer, ch, inner := move.Split(c.Inputs[0].Shape(), c.Attrs.(ops.BatchNormAttrs).Axis)
	return bnShape{c: c, d: d, pd: kernelType(c.Inputs[1].DType()), outer: outer, ch: ch, inner: inner}
}

// throughFloat32 runs a half call whose parameters are of its half type
// (not float32's) through float32, reporting whether it did.
func (s bnShape) throughFloat32(outs []*tensor.Tensor) bool {
	if !s.d.Half() || s.pd == kernels.F32 {
		return false
	}
	if !eager.ThroughFloat32(s.c, outs) {
		s.c.Fail(tensor.ErrNoKernel, "no float32 kernel to compute a %v BatchNorm through", tensorType(s.d))
	}
	return true
}

// parts is how a fold by mode splits each feature's elements: the parts
// a feature, and what appends the sums kernel's arguments after (outer,
// C): for the cols kernels, the rows a part; for the planes kernels,
// kernels.BNPlaneParts's geometry.
func (s bnShape) parts(mode string) (int, func(*cu.Args)) {
	if s.inner == 1 {
		chunk := kernels.BNChunk(mode)
		return max(1, (s.outer+chunk-1)/chunk), func(a *cu.Args) { a.U64(uint64(chunk)) }
	}
	wmax, planes, groups, windows, parts := kernels.BNPlaneParts(mode, s.outer, s.inner)
	return parts, func(a *cu.Args) {
		divisorArg(a.U64(uint64(s.inner)).U64(uint64(wmax)).U64(uint64(planes)), groups, parts).U64(uint64(windows))
	}
}

// temp is a new tensor on the call's device.
func (s bnShape) temp(dt tensor.DType, shape tensor.Shape, what string) *tensor.Tensor {
	t, err := tensor.Empty(s.c.Device, dt, shape)
	if err != nil {
		s.c.Fail(err, "%s", what)
	}
	return t
}

// sums folds parts of each feature's elements by mode (kernels.BNModes)
// into a new partial [k, parts, C] float64: x, then centres (stats mode)
// or dy and coef (grad mode) are its operands.
func (s bnShape) sums(mode string, k int, operands ...*tensor.Tensor) *tensor.Tensor {
	parts, geometry := s.parts(mode)
	partial := s.temp(tensor.Float64, tensor.Shape{k, parts, s.ch}, "the partial sums of each feature")
	args := newArgs().Ptr(ptr(partial))
	for _, t := range operands {
		args.Ptr(ptr(t))
	}
	geometry(args.U64(uint64(s.outer)).U64(uint64(s.ch)))
	var blocks, grid int // cols: blocks of 32 features; planes: warps of one feature, 8 a block
	layout := "cols"
	if s.inner == 1 {
		blocks = (s.ch + 31) / 32 * parts
		grid = blocks
	} else {
		layout = "planes"
		blocks = s.ch * parts
		grid = (blocks + kernels.ReduceBlock/32 - 1) / (kernels.ReduceBlock / 32)
	}
	args = divisorArg(args, parts, blocks).U64(uint64(blocks))
	g := gpu(s.c)
	check(s.c, g.launchBlocks("norm", kernels.Name("batch_norm_sums", mode, layout, string(s.d)), min(grid, max(g.info.SMs, 1)*32), kernels.ReduceBlock, args))
	return partial
}

// finish folds partial [k, parts, C] over its parts into sums [k, C]
// (the reduce kernels), then launches the finishing kernel name, a thread
// a feature: its outputs, coef and the sums, then rest, then (C, count)
// and tail.
func (s bnShape) finish(name string, outs []*tensor.Tensor, coef, partial *tensor.Tensor, rest []*tensor.Tensor, tail func(a *cu.Args)) {
	sums := s.temp(tensor.Float64, tensor.Shape{partial.Dim(0), s.ch}, "the sums of each feature")
	defer sums.Release()
	reduceInto(s.c, kernels.F64, partial, []int{1}, ops.ReduceSum, sums)
	args := newArgs()
	for _, t := range outs {
		args.Ptr(ptr(t))
	}
	args.Ptr(ptr(coef)).Ptr(ptr(sums))
	for _, t := range rest {
		args.Ptr(ptr(t))
	}
	args.U64(uint64(s.ch)).F64(float64(s.outer * s.inner))
	if tail != nil {
		tail(args)
	}
	check(s.c, gpu(s.c).launch("norm", kernels.Name(name, string(s.pd)), s.ch, args))
}

// elementwise launches batch_norm_<kind> over x's elements: out, the
// operands, then the coefficients and the geometry.
func (s bnShape) elementwise(kind string, coef *tensor.Tensor, out *tensor.Tensor, operands ...*tensor.Tensor) {
	n := s.outer * s.ch * s.inner
	if n == 0 {
		return
	}
	args := newArgs().Ptr(ptr(out))
	for _, t := range operands {
		args.Ptr(ptr(t))
	}
	args.Ptr(ptr(coef)).U64(uint64(s.outer)).U64(uint64(s.ch))
	args = divisorArg(divisorArg(args, s.inner, n), s.ch*s.inner, n)
	check(s.c, gpu(s.c).launch("norm", kernels.Name("batch_norm_"+kind, string(s.d)), n, args))
}

// betaArgs is what follows a coefficient kernel's pointers: (eps, has_beta); it and returns beta's pointer operand
// (gamma's, not read, without one).
func (s bnShape) betaArgs(gamma, beta *tensor.Tensor) (operand *tensor.Tensor, tail func(a *cu.Args)) {
	has := uint32(1)
	if beta == nil {
		beta, has = gamma, 0
	}
	return beta, func(a *cu.Args) { a.F64(s.c.Attrs.(ops.BatchNormAttrs).Epsilon).U32(has) }
}

func batchNorm(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		s := newBNShape(c, d)
		if s.ch == 0 || s.throughFloat32(outs) {
			return
		}
		x, gamma, y, mean, variance := c.Inputs[0], c.Inputs[1], outs[0], outs[1], outs[2]
		var beta *tensor.Tensor
		if len(c.Inputs) == 3 {
			beta = c.Inputs[2]
		}
		coef := s.temp(tensor.Float64, tensor.Shape{4, s.ch}, "the coefficients of each feature")
		defer coef.Release()
		centres := s.temp(tensor.Float64, tensor.Shape{s.ch}, "the centre of each feature")
		defer centres.Release()
		partial := s.sums("stats", 2, x, centres)
		b, tail := s.betaArgs(gamma, beta)
		s.finish("batch_norm_stats", []*tensor.Tensor{mean, variance}, coef, partial, []*tensor.Tensor{centres, gamma, b}, tail)
		partial.Release()
		s.elementwise("apply", coef, y, x)
	}
}

func batchNormBackprop(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		s := newBNShape(c, d)
		if s.ch == 0 || s.throughFloat32(outs) {
			return
		}
		x, gamma, mean, variance, dy, dmean, dvar := c.Inputs[0], c.Inputs[1], c.Inputs[2], c.Inputs[3], c.Inputs[4], c.Inputs[5], c.Inputs[6]
		dx, dgamma, dbeta := outs[0], outs[1], outs[2]
		coef := s.temp(tensor.Float64, tensor.Shape{6, s.ch}, "the coefficients of each feature")
		defer coef.Release()
		b, tail := s.betaArgs(gamma, nil)
		args := newArgs().Ptr(ptr(coef)).Ptr(ptr(mean)).Ptr(ptr(variance)).Ptr(ptr(gamma)).Ptr(ptr(b)).U64(uint64(s.ch))
		tail(args)
		check(c, gpu(c).launch("norm", kernels.Name("batch_norm_coef", string(s.pd)), s.ch, args))
		partial := s.sums("grad", 2, x, dy, coef)
		defer partial.Release()
		s.finish("batch_norm_grad_coef", []*tensor.Tensor{dgamma, dbeta}, coef, partial, []*tensor.Tensor{dmean, dvar}, nil)
		s.elementwise("grad", coef, dx, x, dy)
	}
}
