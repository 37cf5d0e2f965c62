package ops

import (
	"fmt"
	"math"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Attention with its weights dropped in training (Transformer's attention
// dropout; PyTorch's scaled_dot_product_attention with dropout_p), one
// op each way on the CPU and where a device's kernels say they take the
// call (its DropsInAttention): a GPU's flash kernels (the half types'
// on the tensor cores, float32's where its flash kernels take the call)
// draw the keep mask themselves, tile by tile, again where the backward
// needs it, with no weights or mask stored; the CPU's draw
// the call's mask (sixteen Philox blocks at a time, internal/philox) and
// materialise a batch matrix's weights at a time, forward and again
// backward (examples/gpt's CPU step with dropout 0.1: 110-111 ms where
// the composed ops took 145-148, and 345 against 285 before the draws
// were vectorised). Elsewhere (a GPU's float64, float32 with a mask or
// below the flash kernels' size, widths its kernels are not written for)
// it is the ops it stands for (AttentionWeights,
// DropoutAt, MatMul). The CPU's kernels are the reference the GPU's are
// checked against (the conformance table). The mask is the same every
// way: the weights' elements in row-major order, drawn as RngBernoulliAt
// draws them.

// AttentionDropoutAttrs are AttentionDropout's attributes: the
// attention's, the rate of weights dropped, and where the draws are in
// the stream of Key: block starts[Slot] + Offset where the op has a
// starts input, else block Offset.
type AttentionDropoutAttrs struct {
	AttentionAttrs
	Rate   float64
	Key    [2]uint32
	Slot   int
	Offset uint64
}

func (a AttentionDropoutAttrs) String() string {
	return fmt.Sprintf("%v rate=%v key=%x slot=%d offset=%d", a.AttentionAttrs, a.Rate, a.Key, a.Slot, a.Offset)
}

// KeepThreshold is the integer a draw's top 53 bits must be below for its
// weight to be kept: ⌈(1−Rate)·2⁵³⌉, where a uniform u = m·2⁻⁵³ is below
// 1−Rate exactly when m is (tensor.RandBernoulli's comparison).
func (a AttentionDropoutAttrs) KeepThreshold() uint64 {
	return uint64(math.Ceil((1 - a.Rate) * (1 << 53)))
}

// attentionDropper is a device that says whether its attention-dropout
// kernels take a call on q, k and v (backend/cuda's Device); elsewhere
// the op is composed.
type attentionDropper interface {
	DropsInAttention(q, k, v *tensor.Tensor) bool
}

// dropsInAttention reports whether q's device runs AttentionDropout as
// one op each way: the CPU, and a device whose kernels say so.
func dropsInAttention(q, k, v *tensor.Tensor) bool {
	if dd, ok := q.Device().(attentionDropper); ok {
		return dd.DropsInAttention(q, k, v)
	}
	return q.Device().Kind() == device.CPU
}

var attentionDropoutOp, attentionDropoutBackpropOp *eager.Op

func init() {
	// Inputs q, k, v[, starts][, mask]; outputs the attention and its
	// rows' log-sum-exps (of the weights before their drop).
	attentionDropoutOp = eager.Register(&eager.Op{
		Name: "ScaledDotProductAttentionDropout", Inputs: -1, DTypes: floatTypes,
		Infer: func(c *eager.Call) []eager.Out {
			q, _, v := dropoutCall(c, 3, "query, key, value")
			out := append(q.Shape()[:q.Rank()-1].Clone(), v.Dim(-1))
			return []eager.Out{{DType: q.DType(), Shape: out}, {DType: statDType(q.DType()), Shape: q.Shape()[:q.Rank()-1].Clone()}}
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			in := []*tensor.Tensor{g.Inputs[0], g.Inputs[1], g.Inputs[2], g.Outputs[0], g.Outputs[1], g.OutGrads[0], g.OutGrads[1]}
			d := eager.Run(attentionDropoutBackpropOp, g.Attrs, append(in, g.Inputs[3:]...)...)
			// None for the starts and the mask.
			return append([]*tensor.Tensor{d[0], d[1], d[2]}, make([]*tensor.Tensor, len(g.Inputs)-3)...)
		},
	})
	// Inputs q, k, v, out, lse, dout, dlse[, starts][, mask]; outputs dq,
	// dk, dv. Differentiable as its mathematics written out, the mask
	// drawn again.
	attentionDropoutBackpropOp = eager.Register(&eager.Op{
		Name: "ScaledDotProductAttentionDropoutBackprop", Inputs: -1, DTypes: floatTypes,
		Infer: func(c *eager.Call) []eager.Out {
			q, k, v := dropoutCall(c, 7, "query, key, value, output, log-sum-exp, their gradients")
			in := c.Inputs
			return backpropOuts(c, q, k, v, in[3], in[4], in[5], in[6])
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			grads := backpropGrad(g, func(in []*tensor.Tensor) []*tensor.Tensor {
				return composedAttentionDropoutBackprop(g.Attrs.(AttentionDropoutAttrs), in)
			})
			for i := 7; i < len(grads); i++ {
				grads[i] = nil // the starts and the mask
			}
			return grads
		},
	})
}

// dropoutCall checks a dropout attention op's call of n tensors (named
// by what, for errors) and at most a starts vector and a mask after them:
// their count, q, k and v and the mask (attentionShapes), the rate and
// the starts (dropoutChecks); it returns q, k and v.
func dropoutCall(c *eager.Call, n int, what string) (q, k, v *tensor.Tensor) {
	if len(c.Inputs) < n || len(c.Inputs) > n+2 {
		c.Fail(tensor.ErrArity, "takes %s, an optional starts vector and an optional mask, got %d inputs", what, len(c.Inputs))
	}
	q, k, v = c.Inputs[0], c.Inputs[1], c.Inputs[2]
	starts, mask := DropoutExtras(c.Inputs[n:])
	attentionShapes(c, q, k, v, mask)
	dropoutChecks(c, c.Attrs.(AttentionDropoutAttrs), starts, len(c.Inputs[n:]))
	return q, k, v
}

// DropoutExtras are the starts vector (int64) and the mask (bool) among
// the dropout attention ops' inputs after their tensors (nil where
// absent), for the kernels.
func DropoutExtras(in []*tensor.Tensor) (starts, mask *tensor.Tensor) {
	for _, x := range in {
		if x != nil && x.DType() == tensor.Bool {
			mask = x
		} else {
			starts = x
		}
	}
	return starts, mask
}

// dropoutChecks fails c for a rate outside (0, 1), a starts input that
// is no Int64 vector holding Slot, or extra inputs (n of them) that are
// not one starts and one mask at most.
func dropoutChecks(c *eager.Call, a AttentionDropoutAttrs, starts *tensor.Tensor, n int) {
	if !(a.Rate > 0 && a.Rate < 1) {
		c.Fail(tensor.ErrValue, "dropout rate %v is outside (0, 1)", a.Rate)
	}
	if s := starts; s != nil && (s.DType() != tensor.Int64 || s.Rank() != 1 || a.Slot < 0 || a.Slot >= s.Dim(0)) {
		c.Fail(tensor.ErrShape, "starts must be an int64 vector holding slot %d, got %s", a.Slot, tensor.Describe(s))
	}
	if n == 2 && (starts == nil || c.Inputs[len(c.Inputs)-1].DType() != tensor.Bool) {
		c.Fail(tensor.ErrArity, "after the tensors, a starts vector and then a mask, got %s and %s", tensor.Describe(c.Inputs[len(c.Inputs)-2]), tensor.Describe(c.Inputs[len(c.Inputs)-1]))
	}
}

// AttentionDropout returns Attention(q, k, v, mask, causal, scale) with
// its weights dropped at rate in (0, 1) and the kept ones scaled by
// 1/(1−rate) (rounded to q's dtype): the weights' elements [..., Tq, Tk]
// kept as RngBernoulliAt(starts, slot, offset, key, ..., 1−rate) keeps
// them (a nil starts: the draws from block offset), so that
// DropoutAt(AttentionWeights(q, k, mask, causal, scale), rate, starts,
// slot, offset, key)·v is the same mask's result (to rounding, where the
// device's kernels compute it fused); mask (nil for none) as Attention's.
// Differentiable in q, k and v, to any order. Panics with a
// *tensor.Error for shapes or dtypes that do not fit, a rate outside (0,
// 1) or a starts that is no int64 vector holding slot.
func AttentionDropout(q, k, v, mask *tensor.Tensor, causal bool, scale, rate float64, starts *tensor.Tensor, slot int, offset uint64, key [2]uint32) *tensor.Tensor {
	needInputs("AttentionDropout", q, k, v)
	defer asOp("AttentionDropout")
	if scale == 0 && q.Rank() >= 1 {
		scale = 1 / math.Sqrt(float64(q.Dim(-1)))
	}
	a := AttentionDropoutAttrs{AttentionAttrs: AttentionAttrs{Scale: scale, Causal: causal}, Rate: rate, Key: key, Slot: slot, Offset: offset}
	if s := starts; s != nil && (s.DType() != tensor.Int64 || s.Rank() != 1 || slot < 0 || slot >= s.Dim(0)) {
		fail("AttentionDropout", tensor.ErrShape, []*tensor.Tensor{q, s}, "starts must be an int64 vector holding slot %d, got %s", slot, tensor.Describe(s))
	}
	if mask != nil && mask.DType() != tensor.Bool { // else taken for a starts vector
		fail("AttentionDropout", tensor.ErrShape, []*tensor.Tensor{q, k, mask}, "the mask must be bool (true: attend), got %s", tensor.Describe(mask))
	}
	mask = laidOut(q, k, mask)
	in := []*tensor.Tensor{q, k, v}
	for _, x := range []*tensor.Tensor{starts, mask} {
		if x != nil {
			in = append(in, x)
		}
	}
	if fusedOn(attentionDropoutOp, q) && dropsInAttention(q, k, v) {
		return eager.Run(attentionDropoutOp, a, in...)[0]
	}
	if !(rate > 0 && rate < 1) {
		fail("AttentionDropout", tensor.ErrValue, []*tensor.Tensor{q}, "dropout rate %v is outside (0, 1)", rate)
	}
	w := AttentionWeights(q, k, mask, causal, scale)
	return MatMul(droppedWeights(w, a, starts), v)
}

// droppedWeights is w dropped as a's draws drop it (DropoutAt's, or from
// block a.Offset where starts is nil).
func droppedWeights(w *tensor.Tensor, a AttentionDropoutAttrs, starts *tensor.Tensor) *tensor.Tensor {
	if starts != nil {
		return DropoutAt(w, a.Rate, starts, a.Slot, a.Offset, a.Key)
	}
	return dropWith("AttentionDropout", w, a.Rate, func(p float64) *tensor.Tensor {
		return tensor.RandBernoulliAt(w.Device(), a.Key, a.Offset, w.DType(), p, w.Shape()...)
	})
}

// composedAttentionDropoutBackprop is the dropout backward op's kernel as
// ops of its inputs (q, k, v, out, lse, dout, dlse[, starts][, mask]):
// with P = e^(S − lse) the weights (0 where a key is hidden) and Z the
// kept ones' factor (0 or 1/(1−rate)), dV = (P⊙Z)ᵀ·dO, dS = P⊙((dO·Vᵀ)⊙Z
// − rowsum(dO⊙out) + dlse), dQ = dS·K·scale and dK = dSᵀ·Q·scale.
func composedAttentionDropoutBackprop(a AttentionDropoutAttrs, in []*tensor.Tensor) []*tensor.Tensor {
	q, k, v, out, lse, dout, dlse := in[0], in[1], in[2], in[3], in[4], in[5], in[6]
	starts, mask := DropoutExtras(in[7:])
	dt := q.DType()
	stat := func(s *tensor.Tensor) *tensor.Tensor { return ExpandDims(Cast(s, dt), -1) }
	p := Exp(Sub(attentionScores(q, k, mask, a.AttentionAttrs), stat(lse)))
	z := droppedWeights(OnesLike(p), a, starts)
	delta := Reduce(Mul(dout, out), Reduction{Kind: ReduceSum, Dims: []int{-1}, KeepDims: true})
	ds := Mul(p, Add(Sub(Mul(MatMulT(dout, v, false, true), z), delta), stat(dlse)))
	scale := ScalarLike(q, a.Scale)
	return []*tensor.Tensor{Mul(MatMul(ds, k), scale), Mul(MatMulT(ds, q, true, false), scale), MatMulT(Mul(p, z), dout, true, false)}
}
