package cuda

import (
	"fmt"
	"math"
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/attnmask"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// ScaledDotProductAttention and its backprop (ops/attention.go). Float32
// calls without a mask tensor whose rows are 16, 32 or 64 wide and whose
// score matrix would be large (FlashAutoBytes; SetFlashAttention) take the
// flash kernels (kernels/flash.go): the score matrix is never written,
// one launch forward and three backward, memory linear in the sequence.
// Other calls take the products as strided batched GEMMs (cuBLAS) and
// the softmax and the scores' gradient as row kernels
// (kernels/attention.go), the score matrix materialised per call
// ([batch, tq, tk]); three launches forward, six backward. The half
// types' calls with rows 16, 32, 64 or 128 wide, with a mask tensor or
// without, take their own flash kernels on devices of compute capability
// 8.0 and later (kernels/flash_tc.go: the products on the tensor cores,
// the scores in registers; one launch forward, two backward), whatever
// their size; their other calls take the products path in their own
// dtype (attention_half.go).

func init() {
	for _, d := range slices.Concat(kernels.Floats, kernels.Halves) {
		eager.RegisterKernel("ScaledDotProductAttention", device.GPU, tensorType(d), attention(d))
		eager.RegisterKernel("ScaledDotProductAttentionBackprop", device.GPU, tensorType(d), attentionBackprop(d))
	}
}

// attnGeom is a call's sizes: batch matrices (batch and heads) of tq
// queries and tk keys, dd features of query and key, dv of value; where
// a mask's elements lie (attnmask.Layout; the zero value without one).
type attnGeom struct {
	batch, tq, tk, dd, dv int
	mask                  attnmask.Layout
}

func attnGeomOf(q, k, v, mask *tensor.Tensor) attnGeom {
	r := q.Rank()
	g := attnGeom{batch: tensor.Shape(q.Shape()[:r-2]).NumElements(), tq: q.Dim(-2), tk: k.Dim(-2), dd: q.Dim(-1), dv: v.Dim(-1)}
	if mask != nil {
		g.mask, _ = attnmask.Of(q.Shape()[:r-2], g.tq, g.tk, mask.Shape()) // checked by the op
	}
	return g
}

// maskArgs appends a mask's kernel arguments: the mask, its rep (a
// divisor), step and row (attnmask.Layout).
func (g attnGeom) maskArgs(args *cu.Args, mask *tensor.Tensor) {
	args.Ptr(ptr(mask))
	divisorArg(args, g.mask.Rep, max(g.batch, 1)).U64(uint64(g.mask.Step)).U64(uint64(g.mask.Row))
}

// scratch returns an uninitialised [batch tq tk] tensor of dt on the
// call's device, failing the call when there is no memory.
func (g attnGeom) scratch(c *eager.Call, dt tensor.DType) *tensor.Tensor {
	t, err := tensor.Empty(c.Device, dt, tensor.Shape{g.batch, g.tq, g.tk})
	if err != nil {
		c.Fail(err, "the attention's scores [%d %d %d]", g.batch, g.tq, g.tk)
	}
	return t
}

// rowArgs appends the row kernels' mask and size arguments (the caller
// then the scale and causal flag) and returns the kernel's name.
func (g attnGeom) rowArgs(kind string, d kernels.DType, args *cu.Args, mask *tensor.Tensor, withDV bool) string {
	name := kernels.Name(kind, string(d))
	if mask != nil {
		name = kernels.Name(kind, string(d), "mask")
		g.maskArgs(args, mask)
	}
	args.U64(uint64(g.batch * g.tq))
	divisorArg(args, g.tq, g.batch*g.tq).U64(uint64(g.tk))
	if withDV {
		args.U64(uint64(g.dv))
	}
	return name
}

// attentionMask is the call's mask input, or nil.
func attentionMask(in []*tensor.Tensor, n int) *tensor.Tensor {
	if len(in) == n+1 {
		return in[n]
	}
	return nil
}

func attention(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		q, k, v := c.Inputs[0], c.Inputs[1], c.Inputs[2]
		a := c.Attrs.(ops.AttentionAttrs)
		g, dev := attnGeomOf(q, k, v, attentionMask(c.Inputs, 3)), gpu(c)
		out, lse := outs[0], outs[1]
		if g.batch*g.tq == 0 {
			return
		}
		if g.tk == 0 { // rows of nothing: NaN, and a log-sum-exp of -Inf, as the CPU's
			fillFloat(c, out, math.NaN())
			fillFloat(c, lse, math.Inf(-1))
			return
		}
		if mask := attentionMask(c.Inputs, 3); dev.flashTakes(g, d, mask) {
			args := newArgs().Ptr(ptr(out)).Ptr(ptr(lse)).Ptr(ptr(q)).Ptr(ptr(k)).Ptr(ptr(v))
			dev.flashLaunch(c, "flash_fwd", d, g, g.tq, a, mask, args)
			return
		}
		if d.Half() {
			if dev.flashTakes(g, kernels.F32, attentionMask(c.Inputs, 3)) || !dev.halfAttention(c, a, g, q, k, v, attentionMask(c.Inputs, 3), out, lse) {
				throughFloat32(c, outs)
			}
			return
		}
		s := g.scratch(c, q.DType())
		defer s.Release()
		check(c, dev.product(product{a: q, b: k, c: s, transB: true, m: g.tq, k: g.dd, n: g.tk, strideA: g.tq * g.dd, strideB: g.tk * g.dd, batch: g.batch}))
		args := newArgs().Ptr(ptr(s)).Ptr(ptr(lse))
		name := g.rowArgs("attn_probs", d, args, attentionMask(c.Inputs, 3), false)
		args.F64(a.Scale).U64(boolU64(a.Causal))
		launchFamilyRows(c, "attention", name, g.batch*g.tq, g.tk, args)
		check(c, dev.product(product{a: s, b: v, c: out, m: g.tq, k: g.tk, n: g.dv, strideA: g.tq * g.tk, strideB: g.tk * g.dv, batch: g.batch}))
	}
}

// Inputs q, k, v, out, lse, dout, dlse[, mask]; outputs dq, dk, dv.
func attentionBackprop(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		q, k, v, o, lse, dout, dlse := c.Inputs[0], c.Inputs[1], c.Inputs[2], c.Inputs[3], c.Inputs[4], c.Inputs[5], c.Inputs[6]
		a := c.Attrs.(ops.AttentionAttrs)
		g, dev := attnGeomOf(q, k, v, attentionMask(c.Inputs, 7)), gpu(c)
		dq, dk, dv := outs[0], outs[1], outs[2]
		if g.batch*g.tq == 0 || g.tk == 0 { // nothing to attend: zero gradients
			for _, t := range outs {
				fillFloat(c, t, 0)
			}
			return
		}
		if mask := attentionMask(c.Inputs, 7); dev.flashTakes(g, d, mask) {
			dev.flashBackward(c, outs, d, g, a, mask, nil)
			return
		}
		if d.Half() {
			mask := attentionMask(c.Inputs, 7)
			if dev.flashTakes(g, kernels.F32, mask) || !dev.halfAttentionBackprop(c, a, g, q, k, v, o, lse, dout, dlse, mask, dq, dk, dv) {
				throughFloat32(c, outs)
			}
			return
		}
		s, dp := g.scratch(c, q.DType()), g.scratch(c, q.DType())
		defer s.Release()
		defer dp.Release()
		check(c, dev.product(product{a: q, b: k, c: s, transB: true, m: g.tq, k: g.dd, n: g.tk, strideA: g.tq * g.dd, strideB: g.tk * g.dd, batch: g.batch}))
		check(c, dev.product(product{a: dout, b: v, c: dp, transB: true, m: g.tq, k: g.dv, n: g.tk, strideA: g.tq * g.dv, strideB: g.tk * g.dv, batch: g.batch}))
		args := newArgs().Ptr(ptr(s)).Ptr(ptr(dp)).Ptr(ptr(lse)).Ptr(ptr(dlse)).Ptr(ptr(o)).Ptr(ptr(dout))
		name := g.rowArgs("attn_grad", d, args, attentionMask(c.Inputs, 7), true)
		args.F64(a.Scale).U64(boolU64(a.Causal))
		launchFamilyRows(c, "attention", name, g.batch*g.tq, g.tk, args)
		// dV = Pᵀ·dO, dQ = dS·K, dK = dSᵀ·Q.
		check(c, dev.product(product{a: s, transA: true, b: dout, c: dv, m: g.tk, k: g.tq, n: g.dv, strideA: g.tq * g.tk, strideB: g.tq * g.dv, batch: g.batch}))
		check(c, dev.product(product{a: dp, b: k, c: dq, m: g.tq, k: g.tk, n: g.dd, strideA: g.tq * g.tk, strideB: g.tk * g.dd, batch: g.batch}))
		check(c, dev.product(product{a: dp, transA: true, b: q, c: dk, m: g.tk, k: g.tq, n: g.dd, strideA: g.tq * g.tk, strideB: g.tq * g.dd, batch: g.batch}))
	}
}

// FlashAutoBytes is the size of the score matrix ([batch, tq, tk]
// float32) from which float32 attention takes the flash kernels by
// default (the half types take theirs at every size). Below
// it the products (cuBLAS GEMMs at float32's full rate, and row kernels
// over the materialised scores) are expected faster than the flash
// kernels, which compute a row by four threads without tensor cores; at and
// above it the memory (two such matrices in the backward pass) decides.
// The figures of BenchmarkAttentionGPU's forced paths on a GPU are what
// should set it.
const FlashAutoBytes = 1 << 32

const (
	flashAuto int32 = iota
	flashAlways
	flashNever
)

// SetFlashAttention makes d take the flash kernels for every attention
// call they can compute (on: float32 without a mask tensor, rows 16, 32
// or 64 wide; bfloat16 or float16 with one or without, rows 16, 32, 64 or
// 128 wide, on compute capability 8.0 and later), or for none (off). By default d takes the
// half types' wherever they can, and float32's where the score matrix
// would take FlashAutoBytes or more.
func (d *Device) SetFlashAttention(on bool) {
	d.flashMode.Store(map[bool]int32{true: flashAlways, false: flashNever}[on])
}

// flashTakes reports whether the flash kernels take a call of dtype dt
// with sizes g and mask (nil: none). The half types' flash kernels run
// on the tensor cores (compute capability 8.0 and later) and take every
// call they can unless SetFlashAttention(false): they read and write
// less than the products path at every size, with the same tensor-core
// products.
func (d *Device) flashTakes(g attnGeom, dt kernels.DType, mask *tensor.Tensor) bool {
	mode := d.flashMode.Load()
	can := g.dd == g.dv && g.batch*max(g.tq, g.tk) < 1<<31
	switch {
	case !can || mode == flashNever:
		return false
	case dt.Half(): // a mask tensor too (the _mask twins)
		return d.info.Major >= 8 && slices.Contains(kernels.FlashTCDims, g.dd)
	}
	return dt == kernels.F32 && mask == nil && slices.Contains(kernels.FlashDims, g.dd) && (mode == flashAlways || 4*g.batch*g.tq*g.tk >= FlashAutoBytes)
}

// flashBackward queues the flash kernels of an attention's gradient: the
// call's inputs q, k, v, out, lse, dout, dlse, its outputs (outs) dq, dk,
// dv;
// drop appends a _drop twin's arguments where not nil (flashLaunchWith).
func (d *Device) flashBackward(c *eager.Call, outs []*tensor.Tensor, dt kernels.DType, g attnGeom, a ops.AttentionAttrs, mask *tensor.Tensor, drop func(*cu.Args)) {
	q, k, v, o, lse, dout, dlse := c.Inputs[0], c.Inputs[1], c.Inputs[2], c.Inputs[3], c.Inputs[4], c.Inputs[5], c.Inputs[6]
	dq, dk, dv := outs[0], outs[1], outs[2]
	delta, err := tensor.Empty(c.Device, tensor.Float32, tensor.Shape{g.batch * g.tq})
	if err != nil {
		c.Fail(err, "the attention's row sums [%d]", g.batch*g.tq)
	}
	defer delta.Release()
	d.flashLaunchWith(c, "flash_bwd_q", dt, g, g.tq, a, mask, newArgs().Ptr(ptr(dq)).Ptr(ptr(delta)).Ptr(ptr(q)).Ptr(ptr(k)).Ptr(ptr(v)).
		Ptr(ptr(o)).Ptr(ptr(dout)).Ptr(ptr(lse)).Ptr(ptr(dlse)), drop)
	if dt.Half() { // one kernel for both, on the tensor cores
		d.flashLaunchWith(c, "flash_bwd_kv", dt, g, g.tk, a, mask, newArgs().Ptr(ptr(dk)).Ptr(ptr(dv)).Ptr(ptr(q)).Ptr(ptr(k)).Ptr(ptr(v)).
			Ptr(ptr(dout)).Ptr(ptr(lse)).Ptr(ptr(delta)), drop)
		return
	}
	for _, w := range []struct {
		name string
		out  *tensor.Tensor
	}{{"flash_bwd_dk", dk}, {"flash_bwd_dv", dv}} {
		d.flashLaunchWith(c, w.name, dt, g, g.tk, a, nil, newArgs().Ptr(ptr(w.out)).Ptr(ptr(q)).Ptr(ptr(k)).Ptr(ptr(v)).
			Ptr(ptr(dout)).Ptr(ptr(lse)).Ptr(ptr(delta)), drop)
	}
}

// flashLaunch queues flash kernel kind of dtype dt (float32, or a half
// type's tensor-core kernels) over the blocks of rows (tq, or tk for the
// keys' gradients) of every batch matrix, args holding its tensors; the
// sizes, the scale and the causal flag follow them, and where mask is not
// nil (the half types' kernels) the mask tensor and its step.
func (d *Device) flashLaunch(c *eager.Call, kind string, dt kernels.DType, g attnGeom, rows int, a ops.AttentionAttrs, mask *tensor.Tensor, args *cu.Args) {
	d.flashLaunchWith(c, kind, dt, g, rows, a, mask, args, nil)
}

// flashLaunchWith is flashLaunch, the _drop twin where drop is not nil
// (drop appending its arguments after the mask's).
func (d *Device) flashLaunchWith(c *eager.Call, kind string, dt kernels.DType, g attnGeom, rows int, a ops.AttentionAttrs, mask *tensor.Tensor, args *cu.Args, drop func(*cu.Args)) {
	per := (rows + kernels.FlashBlock - 1) / kernels.FlashBlock
	blocks := g.batch * per
	args.U64(uint64(g.tq)).U64(uint64(g.tk))
	divisorArg(args, per, blocks).U64(uint64(blocks)).F32(float32(a.Scale * math.Log2E))
	if kind != "flash_fwd" {
		args.F32(float32(a.Scale))
	}
	args.U64(boolU64(a.Causal))
	family, threads, shared := "attention", kernels.FlashThreads, 0
	if dt.Half() {
		family, threads, shared = "attention_tc", kernels.FlashTCThreads, kernels.FlashTCShared(kind, g.dd)
	}
	name := kernels.Name(kind, string(dt), fmt.Sprint(g.dd))
	if dt.Half() {
		name = kernels.FlashTCName(kind, dt, g.dd, mask != nil, drop != nil)
	}
	if mask != nil {
		g.maskArgs(args, mask)
		if !dt.Half() {
			name = kernels.Name(kind, string(dt), fmt.Sprint(g.dd), "mask")
		}
	}
	if drop != nil {
		if !dt.Half() {
			name = kernels.Name(name, "drop")
		}
		drop(args)
	}
	check(c, d.launchShared(family, name, min(blocks, max(d.info.SMs, 1)*8), threads, shared, args))
}

func boolU64(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// fillFloat sets every element of t (float32 or float64) to v.
func fillFloat(c *eager.Call, t *tensor.Tensor, v float64) {
	if t.NumElements() == 0 {
		return
	}
	b := tensor.FullOn(device.Host(), t.DType(), v).HostBytes()
	check(c, gpu(c).Fill(t.Buffer(), 0, t.NumElements(), b))
}
