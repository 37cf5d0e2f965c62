package cuda

import (
	"errors"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Attention of the half types on the products path: the scores and their
// gradient in float32, from GEMMs of 16-bit operands into float32
// (cu.Gemm.In: the tensor cores), the float32 row kernels on them, then
// the probabilities and the scores' gradient rounded to the half type for
// the products that read them (as flash attention's tensor-core products
// read them), each output and gradient rounded once from float32 sums.
// This path takes the calls the half types' flash kernels do not (rows
// other than 16, 32, 64 or 128 wide, a device before compute capability 8.0,
// SetFlashAttention(false)); where the float32 flash kernels would take
// the call (a large score matrix without a mask), or the context has no
// GEMM of mixed types, the call computes through float32 instead.

// halfScratch returns an uninitialised tensor of dt and shape on the
// call's device, failing the call when there is no memory.
func halfScratch(c *eager.Call, dt tensor.DType, shape tensor.Shape) *tensor.Tensor {
	t, err := tensor.Empty(c.Device, dt, shape)
	if err != nil {
		c.Fail(err, "the attention's %v scratch %v", dt, shape)
	}
	return t
}

// mixedProduct queues p, reporting false, with nothing queued, where the
// context has no GEMM of p's mixed types.
func (d *Device) mixedProduct(c *eager.Call, p product) bool {
	err := d.product(p)
	if errors.Is(err, cu.ErrGemmType) {
		return false
	}
	check(c, err)
	return true
}

// halfAttention is the forward pass of a half call (q, k, v of its dtype;
// mask nil or bool; lse float32); false, with nothing queued, where it
// must compute through float32.
func (d *Device) halfAttention(c *eager.Call, a ops.AttentionAttrs, g attnGeom, q, k, v, mask, out, lse *tensor.Tensor) bool {
	s := g.scratch(c, tensor.Float32)
	defer s.Release()
	if !d.mixedProduct(c, product{a: q, b: k, c: s, transB: true, m: g.tq, k: g.dd, n: g.tk, strideA: g.tq * g.dd, strideB: g.tk * g.dd, batch: g.batch}) {
		return false
	}
	args := newArgs().Ptr(ptr(s)).Ptr(ptr(lse))
	name := g.rowArgs("attn_probs", kernels.F32, args, mask, false)
	args.F64(a.Scale).U64(boolU64(a.Causal))
	launchFamilyRows(c, "attention", name, g.batch*g.tq, g.tk, args)
	p := g.scratch(c, q.DType())
	defer p.Release()
	check(c, d.castInto(p, s))
	check(c, d.product(product{a: p, b: v, c: out, m: g.tq, k: g.tk, n: g.dv, strideA: g.tq * g.tk, strideB: g.tk * g.dv, batch: g.batch}))
	return true
}

// halfAttentionBackprop is the backward pass of a half call (lse and
// dlse float32), as halfAttention.
func (d *Device) halfAttentionBackprop(c *eager.Call, a ops.AttentionAttrs, g attnGeom, q, k, v, o, lse, dout, dlse, mask, dq, dk, dv *tensor.Tensor) bool {
	s, dp := g.scratch(c, tensor.Float32), g.scratch(c, tensor.Float32)
	defer s.Release()
	defer dp.Release()
	if !d.mixedProduct(c, product{a: q, b: k, c: s, transB: true, m: g.tq, k: g.dd, n: g.tk, strideA: g.tq * g.dd, strideB: g.tk * g.dd, batch: g.batch}) {
		return false
	}
	check(c, d.product(product{a: dout, b: v, c: dp, transB: true, m: g.tq, k: g.dv, n: g.tk, strideA: g.tq * g.dv, strideB: g.tk * g.dv, batch: g.batch}))
	// The row kernel's δ reads the output and its gradient in float32.
	o32, do32 := halfScratch(c, tensor.Float32, o.Shape()), halfScratch(c, tensor.Float32, dout.Shape())
	defer o32.Release()
	defer do32.Release()
	check(c, d.castInto(o32, o))
	check(c, d.castInto(do32, dout))
	args := newArgs().Ptr(ptr(s)).Ptr(ptr(dp)).Ptr(ptr(lse)).Ptr(ptr(dlse)).Ptr(ptr(o32)).Ptr(ptr(do32))
	name := g.rowArgs("attn_grad", kernels.F32, args, mask, true)
	args.F64(a.Scale).U64(boolU64(a.Causal))
	launchFamilyRows(c, "attention", name, g.batch*g.tq, g.tk, args)
	p, ds := g.scratch(c, q.DType()), g.scratch(c, q.DType())
	defer p.Release()
	defer ds.Release()
	check(c, d.castInto(p, s))
	check(c, d.castInto(ds, dp))
	// dV = Pᵀ·dO, dQ = dS·K, dK = dSᵀ·Q.
	check(c, d.product(product{a: p, transA: true, b: dout, c: dv, m: g.tk, k: g.tq, n: g.dv, strideA: g.tq * g.tk, strideB: g.tq * g.dv, batch: g.batch}))
	check(c, d.product(product{a: ds, b: k, c: dq, m: g.tq, k: g.tk, n: g.dd, strideA: g.tq * g.tk, strideB: g.tk * g.dd, batch: g.batch}))
	check(c, d.product(product{a: ds, transA: true, b: q, c: dk, m: g.tk, k: g.tq, n: g.dd, strideA: g.tq * g.tk, strideB: g.tq * g.dd, batch: g.batch}))
	return true
}
