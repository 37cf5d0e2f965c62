package cuda

import (
	"math"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Attention with its weights dropped (ops.AttentionDropout) on the flash
// kernels' _drop twins (float32's, the half types' on the tensor cores),
// for the widths and sizes the flash kernels take: each kernel
// draws the keep bits of its tiles of weights from the Philox stream
// itself, the forward pass and both backward kernels alike, so no mask
// and no weights are stored. The ops package sends a call here only
// where DropsInAttention says the kernels take it.

func init() {
	for _, d := range append([]kernels.DType{kernels.F32}, kernels.Halves...) {
		eager.RegisterKernel("ScaledDotProductAttentionDropout", device.GPU, tensorType(d), attentionDropout(d))
		eager.RegisterKernel("ScaledDotProductAttentionDropoutBackprop", device.GPU, tensorType(d), attentionDropoutBackprop(d))
	}
}

// DropsInAttention reports whether d's flash kernels drop the weights of
// an attention call on q, k and v themselves (ops.AttentionDropout):
// float32 and the half types, where their flash kernels take the call
// (float32's: no mask, widths kernels.FlashDims, FlashAutoBytes of
// weights or more unless SetFlashAttention says always).
func (d *Device) DropsInAttention(q, k, v *tensor.Tensor) bool {
	if q == nil || k == nil || v == nil || q.Rank() < 2 || k.Rank() != q.Rank() || v.Rank() != q.Rank() || !(q.DType().IsHalf() || q.DType() == tensor.Float32) {
		return false
	}
	return d.flashTakes(attnGeomOf(q, k, v, nil), kernelType(q.DType()), nil)
}

// flashDrop is the dropped kernels' trailing arguments: the stream's key,
// the starts vector's slot's address (0: none), the offset, the keep
// threshold and the kept weights' factor.
func flashDrop(a ops.AttentionDropoutAttrs, starts *tensor.Tensor, dt tensor.DType) func(args *cu.Args) {
	at := cu.Ptr(0)
	if starts != nil {
		at = ptr(starts) + cu.Ptr(8*a.Slot)
	}
	// The factor as the composed op's (ops.Dropout's scalar of the
	// weights' dtype), widened.
	rscale := float32(tensor.FullOf(dt, 1/(1-a.Rate)).Float())
	return func(args *cu.Args) {
		args.U32(a.Key[0]).U32(a.Key[1]).Ptr(at).U64(a.Offset).U64(a.KeepThreshold()).F32(rscale)
	}
}

func attentionDropout(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		q, k, v := c.Inputs[0], c.Inputs[1], c.Inputs[2]
		a := c.Attrs.(ops.AttentionDropoutAttrs)
		starts, mask := ops.DropoutExtras(c.Inputs[3:])
		g, dev := attnGeomOf(q, k, v, mask), gpu(c)
		out, lse := outs[0], outs[1]
		if g.batch*g.tq == 0 {
			return
		}
		if g.tk == 0 { // rows of nothing, as Attention's
			fillFloat(c, out, math.NaN())
			fillFloat(c, lse, math.Inf(-1))
			return
		}
		if !dev.flashTakes(g, d, mask) {
			c.Fail(tensor.ErrShape, "the flash kernels take no dropped attention of %v widths %d and %d here (ops.AttentionDropout composes it where DropsInAttention says so)", q.DType(), g.dd, g.dv)
		}
		args := newArgs().Ptr(ptr(out)).Ptr(ptr(lse)).Ptr(ptr(q)).Ptr(ptr(k)).Ptr(ptr(v))
		dev.flashLaunchWith(c, "flash_fwd", d, g, g.tq, a.AttentionAttrs, mask, args, flashDrop(a, starts, q.DType()))
	}
}

// Inputs q, k, v, out, lse, dout, dlse[, starts][, mask]; outputs dq, dk,
// dv.
func attentionDropoutBackprop(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		q, k, v := c.Inputs[0], c.Inputs[1], c.Inputs[2]
		a := c.Attrs.(ops.AttentionDropoutAttrs)
		starts, mask := ops.DropoutExtras(c.Inputs[7:])
		g, dev := attnGeomOf(q, k, v, mask), gpu(c)
		if g.batch*g.tq == 0 || g.tk == 0 {
			for _, t := range outs {
				fillFloat(c, t, 0)
			}
			return
		}
		if !dev.flashTakes(g, d, mask) {
			c.Fail(tensor.ErrShape, "the flash kernels take no dropped attention of %v widths %d and %d here", q.DType(), g.dd, g.dv)
		}
		dev.flashBackward(c, outs, d, g, a.AttentionAttrs, mask, flashDrop(a, starts, q.DType()))
	}
}
