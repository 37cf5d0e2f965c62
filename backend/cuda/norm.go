package cuda

import (
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// LayerNorm and its backprop (ops/layernorm.go), RMSNorm's too: a block per
// row (kernels/norm.go); the backward's scale and offset gradients are
// column sums of dy·x̂ (which the row kernel writes) and of dy, by the
// reduction kernels. The half types are read and written as such.

func init() {
	for _, d := range slices.Concat(kernels.Floats, kernels.Halves) {
		eager.RegisterKernel("LayerNorm", device.GPU, tensorType(d), layerNorm(d))
		eager.RegisterKernel("LayerNormBackprop", device.GPU, tensorType(d), layerNormBackprop(d))
	}
}

func layerNorm(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		a := c.Attrs.(ops.NormAttrs)
		x, out, mean, rstd := c.Inputs[0], outs[0], outs[1], outs[2]
		rows := mean.NumElements()
		if rows == 0 {
			return
		}
		kind := "layer_norm_scale"
		args := newArgs().Ptr(ptr(out)).Ptr(ptr(mean)).Ptr(ptr(rstd)).Ptr(ptr(x)).Ptr(ptr(c.Inputs[1]))
		switch {
		case a.RMS:
			kind = "rms_norm"
		case len(c.Inputs) == 3:
			kind = "layer_norm"
			args.Ptr(ptr(c.Inputs[2]))
		}
		args.U64(uint64(rows)).U64(uint64(x.Dim(-1))).F64(a.Epsilon)
		launchFamilyRows(c, "norm", kernels.NormName(kind, d, kernelType(c.Inputs[1].DType())), rows, x.Dim(-1), args)
	}
}

func layerNormBackprop(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		a := c.Attrs.(ops.NormAttrs)
		x, gamma, mean, rstd, dy, dmean, drstd := c.Inputs[0], c.Inputs[1], c.Inputs[2], c.Inputs[3], c.Inputs[4], c.Inputs[5], c.Inputs[6]
		dx, dgamma, dbeta := outs[0], outs[1], outs[2]
		rows, n := mean.NumElements(), x.Dim(-1)
		if rows == 0 || n == 0 { // nothing to sum: zero gradients of the scale and offset
			for _, t := range []*tensor.Tensor{dgamma, dbeta} {
				check(c, gpu(c).Fill(t.Buffer(), 0, t.NumElements(), make([]byte, t.DType().Size())))
			}
			return
		}
		// The products in the compute dtype: a half type's scale gradient
		// is their float32 sums rounded once, as the CPU rounds it.
		wide := d.Compute()
		prod := temporary(c, tensorType(wide), x.Shape(), "the products dy·x̂")
		defer prod.Release()
		kind := "layer_norm_grad"
		if a.RMS {
			kind = "rms_norm_grad"
		}
		launchFamilyRows(c, "norm", kernels.NormName(kind, d, kernelType(gamma.DType())), rows, n, newArgs().Ptr(ptr(dx)).Ptr(ptr(prod)).Ptr(ptr(x)).Ptr(ptr(gamma)).
			Ptr(ptr(mean)).Ptr(ptr(rstd)).Ptr(ptr(dy)).Ptr(ptr(dmean)).Ptr(ptr(drstd)).U64(uint64(rows)).U64(uint64(n)))
		lead := make([]int, x.Rank()-1)
		for i := range lead {
			lead[i] = i
		}
		if wide == d || dgamma.DType() == prod.DType() { // float32 parameters of a half x: no rounding
			reduceInto(c, wide, prod, lead, ops.ReduceSum, dgamma)
		} else {
			sum := temporary(c, tensorType(wide), dgamma.Shape(), "the scale's gradient before rounding")
			defer sum.Release()
			reduceInto(c, wide, prod, lead, ops.ReduceSum, sum)
			check(c, gpu(c).castInto(dgamma, sum))
		}
		reduceInto(c, d, dy, lead, ops.ReduceSum, dbeta)
	}
}
