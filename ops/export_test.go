package ops

import "github.com/eagerflow/eagerflow/tensor"

// Internals that the external tests (package ops_test) check against.

// GemmConvApplies reports whether Conv2D takes its GEMM ops for options o,
// an h x w input and a kh x kw filter.
func GemmConvApplies(o Conv2DOpts, h, w, kh, kw int) bool {
	_, ok := gemmConv(o, h, w, kh, kw)
	return ok
}

// GeneralConvOpts is the general lowering's form of o (ConvOpts).
func GeneralConvOpts(o Conv2DOpts, h, w, kh, kw int) ConvOpts { return o.convOpts(h, w, kh, kw) }

// The general lowering's backprops.
var (
	GeneralConvBackpropInput  = convBackpropInput
	GeneralConvBackpropFilter = convBackpropFilter
)

// GemmConvAttrs is the GEMM ops' attributes for options o, an h x w input
// and a kh x kw filter (the ops that FusedConv2D's gradient runs take them).
func GemmConvAttrs(o Conv2DOpts, h, w, kh, kw int) Conv2DGemmAttrs {
	a, _ := gemmConv(o, h, w, kh, kw)
	return a
}

// FusesMulChain reports whether chain runs dy·(k·x), two Muls, as one
// kernel for these operands; MulChain computes it through chain.
func FusesMulChain(k, x, dy *tensor.Tensor) bool {
	c, _ := fused([]link{step(mulOp, k, x), step(mulOp, dy, nil)})
	return c != nil
}

func MulChain(k, x, dy *tensor.Tensor) *tensor.Tensor {
	return chain(step(mulOp, k, x), step(mulOp, dy, nil))
}
