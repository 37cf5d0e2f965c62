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

// Attention with its weights dropped (ops.AttentionDropout) on the
// half types' tensor-core flash kernels, their _drop twins: each kernel
// draws the keep bits of its tiles of weights from the Philox stream
// itself, the forward pass and both backward kernels alike, so no mask
// and no weights are stored. The ops package sends a call here only
// where DropsInAttention says the kernels take it.

func init() {
	for _, d := range kernels.Halves {
		eager.RegisterKernel("ScaledDotProductAttentionDropout", device.GPU, tensorType(d), attentionDropout(d))
		eager.RegisterKernel("ScaledDotProductAttentionDropoutBackprop", device.GPU, tensorType(d), attentionDropoutBackprop(d))
	}
}

// DropsInAttention reports whether d's flash kernels drop the weights of
// an attention call on q, k and v themselves (ops.AttentionDropout): the
// half types, where their tensor-core flash kernels take the call.
func (d *Device) DropsInAttention(q, k, v *tensor.Tensor) bool {
	if q == nil || k == nil || v == nil || q.Rank() < 2 || k.Rank() != q.Rank() || v.Rank() != q.Rank() || !q.DType().IsHalf() {
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
		q, k, v, o, lse, dout, dlse := c.Inputs[0], c.Inputs[1], c.Inputs[2], c.Inputs[3], c.Inputs[4], c.Inputs[5], c.Inputs[6]
		a := c.Attrs.(ops.AttentionDropoutAttrs)
		starts, mask := ops.DropoutExtras(c.Inputs[7:])
		g, dev := attnGeomOf(q, k, v, mask), gpu(c)
		dq, dk, dv := outs[0], outs[1], outs[2]
		if g.batch*g.tq == 0 || g.tk == 0 {
			for _, t := range outs {
				fillFloat(c, t, 0)
			}
			return
		}
		if !dev.flashTakes(g, d, mask) {
			c.Fail(tensor.ErrShape, "the flash kernels take no dropped attention of %v widths %d and %d here", q.DType(), g.dd, g.dv)
		}
		delta, err := tensor.Empty(c.Device, tensor.Float32, tensor.Shape{g.batch * g.tq})
		if err != nil {
			c.Fail(err, "the attention's row sums [%d]", g.batch*g.tq)
		}
		defer delta.Release()
		drop := flashDrop(a, starts, q.DType())
		dev.flashLaunchWith(c, "flash_bwd_q", d, g, g.tq, a.AttentionAttrs, mask, newArgs().Ptr(ptr(dq)).Ptr(ptr(delta)).Ptr(ptr(q)).Ptr(ptr(k)).Ptr(ptr(v)).
			Ptr(ptr(o)).Ptr(ptr(dout)).Ptr(ptr(lse)).Ptr(ptr(dlse)), drop)
		dev.flashLaunchWith(c, "flash_bwd_kv", d, g, g.tk, a.AttentionAttrs, mask, newArgs().Ptr(ptr(dk)).Ptr(ptr(dv)).Ptr(ptr(q)).Ptr(ptr(k)).Ptr(ptr(v)).
			Ptr(ptr(dout)).Ptr(ptr(lse)).Ptr(ptr(delta)), drop)
	}
}
