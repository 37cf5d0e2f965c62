package ops

import (
	"fmt"
	"math"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/attnmask"
	"github.com/eagerflow/eagerflow/tensor"
)

// Scaled dot-product attention as one op (Vaswani et al.; PyTorch's
// F.scaled_dot_product_attention): softmax(q·kᵀ·scale + mask)·v over the
// last two dimensions, the leading ones batch (and heads). A backend's
// kernel computes it a block of keys at a time with an online softmax
// (Milakov & Gimelshein; FlashAttention's forward), keeping each row's
// log-sum-exp for the backward op instead of the score matrix; a device
// without a kernel runs the same mathematics as ops (the score matrix
// materialised).

// AttentionAttrs are the attention ops' attributes: the scale of the
// scores and whether a query attends only to keys at or before its own
// position (PyTorch's is_causal: the mask aligned at the top left).
type AttentionAttrs struct {
	Scale  float64
	Causal bool
}

func (a AttentionAttrs) String() string { return fmt.Sprintf("scale=%g causal=%v", a.Scale, a.Causal) }

var attentionOp, attentionBackpropOp *eager.Op

// attentionShapes checks q [..., Tq, D], k [..., Tk, D], v [..., Tk, Dv]
// (one batch shape) and an optional bool mask (attnmask.Of's forms),
// failing c otherwise.
func attentionShapes(c *eager.Call, q, k, v, mask *tensor.Tensor) {
	r := q.Rank()
	if r < 2 || k.Rank() != r || v.Rank() != r {
		c.Fail(tensor.ErrRank, "query, key and value need one rank of 2 or more, got %v, %v and %v", q.Shape(), k.Shape(), v.Shape())
	}
	if k.DType() != q.DType() || v.DType() != q.DType() {
		c.Fail(tensor.ErrDType, "query, key and value must share a dtype, got %v, %v and %v", q.DType(), k.DType(), v.DType())
	}
	batch := q.Shape()[:r-2]
	if !k.Shape()[:r-2].Equal(batch) || !v.Shape()[:r-2].Equal(batch) {
		c.Fail(tensor.ErrShape, "batch dimensions differ: %v, %v and %v", q.Shape(), k.Shape(), v.Shape())
	}
	if q.Dim(-1) != k.Dim(-1) || k.Dim(-2) != v.Dim(-2) {
		c.Fail(tensor.ErrShape, "query %v and key %v must share their last dimension, key and value %v their positions", q.Shape(), k.Shape(), v.Shape())
	}
	if mask == nil {
		return
	}
	if _, ok := attnmask.Of(batch, q.Dim(-2), k.Dim(-2), mask.Shape()); mask.DType() != tensor.Bool || !ok {
		c.Fail(tensor.ErrShape, "the mask must be %s (true: attend) for batch %v, Tq %d and Tk %d, got %s", attnmask.Forms, batch, q.Dim(-2), k.Dim(-2), tensor.Describe(mask))
	}
}

func init() {
	attentionOp = eager.Register(&eager.Op{
		Name: "ScaledDotProductAttention", Inputs: -1, DTypes: floatTypes,
		Infer: func(c *eager.Call) []eager.Out {
			if len(c.Inputs) != 3 && len(c.Inputs) != 4 {
				c.Fail(tensor.ErrArity, "takes query, key, value and an optional mask, got %d inputs", len(c.Inputs))
			}
			q, k, v := c.Inputs[0], c.Inputs[1], c.Inputs[2]
			attentionShapes(c, q, k, v, maskOf(c.Inputs))
			out := append(q.Shape()[:q.Rank()-1].Clone(), v.Dim(-1))
			return []eager.Out{{DType: q.DType(), Shape: out}, {DType: statDType(q.DType()), Shape: q.Shape()[:q.Rank()-1].Clone()}}
		},
		// The backward op, from the forward's output and log-sum-exp and
		// both their gradients (the log-sum-exp's: ∂lse_i/∂s_ij = p_ij).
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			in := append([]*tensor.Tensor{g.Inputs[0], g.Inputs[1], g.Inputs[2], g.Outputs[0], g.Outputs[1], g.OutGrads[0], g.OutGrads[1]}, g.Inputs[3:]...)
			d := eager.Run(attentionBackpropOp, g.Attrs, in...)
			grads := []*tensor.Tensor{d[0], d[1], d[2]}
			if len(g.Inputs) == 4 {
				grads = append(grads, nil) // the mask
			}
			return grads
		},
	})
	// Inputs q, k, v, out, lse, dout, dlse[, mask]; outputs dq, dk, dv.
	// Differentiable as its mathematics written out (again.go).
	attentionBackpropOp = eager.Register(&eager.Op{
		Name: "ScaledDotProductAttentionBackprop", Inputs: -1, DTypes: floatTypes,
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			grads := backpropGrad(g, func(in []*tensor.Tensor) []*tensor.Tensor {
				return composedAttentionBackprop(g.Attrs.(AttentionAttrs), in)
			})
			if len(grads) == 8 {
				grads[7] = nil // the mask
			}
			return grads
		},
		Infer: func(c *eager.Call) []eager.Out {
			if len(c.Inputs) != 7 && len(c.Inputs) != 8 {
				c.Fail(tensor.ErrArity, "takes query, key, value, output, log-sum-exp, their gradients and an optional mask, got %d inputs", len(c.Inputs))
			}
			q, k, v, out, lse, dout, dlse := c.Inputs[0], c.Inputs[1], c.Inputs[2], c.Inputs[3], c.Inputs[4], c.Inputs[5], c.Inputs[6]
			var mask *tensor.Tensor
			if len(c.Inputs) == 8 {
				mask = c.Inputs[7]
			}
			attentionShapes(c, q, k, v, mask)
			return backpropOuts(c, q, k, v, out, lse, dout, dlse)
		},
	})
}

// backpropOuts checks an attention backward op's forward output, its
// log-sum-exp and their gradients (inputs 3 to 6) against q, k and v,
// failing c where they do not fit, and returns the op's outputs: dq, dk,
// dv.
func backpropOuts(c *eager.Call, q, k, v, out, lse, dout, dlse *tensor.Tensor) []eager.Out {
	os := append(q.Shape()[:q.Rank()-1].Clone(), v.Dim(-1))
	rows := q.Shape()[:q.Rank()-1]
	if !out.Shape().Equal(os) || !dout.Shape().Equal(os) || !lse.Shape().Equal(rows) || !dlse.Shape().Equal(rows) {
		c.Fail(tensor.ErrShape, "output %v, its gradient %v, log-sum-exp %v and its gradient %v do not fit %v", out.Shape(), dout.Shape(), lse.Shape(), dlse.Shape(), os)
	}
	for i, x := range []*tensor.Tensor{k, v, out, lse, dout, dlse} {
		want := q.DType()
		if i == 3 || i == 5 { // the log-sum-exp and its gradient
			want = statDType(q.DType())
		}
		if x.DType() != want {
			c.Fail(tensor.ErrDType, "input %d is %v, want %v", i+1, x.DType(), want)
		}
	}
	return []eager.Out{{DType: q.DType(), Shape: q.Shape()}, {DType: q.DType(), Shape: k.Shape()}, {DType: q.DType(), Shape: v.Shape()}}
}

// laidOut is mask as the kernels take it: itself where attnmask.Of takes
// its form; a copy broadcast out to the batch's dimensions (keeping its
// row of queries or single row) where it broadcasts to them as NumPy
// would in another form (a mask per head shared by the sequences, [1, H,
// Tq, Tk]; one of a lower rank, [H, Tq, Tk]); else itself, for the shape
// check to refuse.
func laidOut(q, k, mask *tensor.Tensor) *tensor.Tensor {
	if mask == nil || q.Rank() < 2 || k.Rank() != q.Rank() || mask.Rank() < 2 {
		return mask
	}
	batch := q.Shape()[:q.Rank()-2]
	if _, ok := attnmask.Of(batch, q.Dim(-2), k.Dim(-2), mask.Shape()); ok || mask.DType() != tensor.Bool {
		return mask
	}
	lead := mask.Shape()[:mask.Rank()-2]
	if len(lead) > len(batch) {
		return mask
	}
	off := len(batch) - len(lead)
	for i, d := range lead {
		if d != 1 && d != batch[off+i] {
			return mask
		}
	}
	return BroadcastTo(mask, append(batch.Clone(), mask.Dim(-2), mask.Dim(-1))...)
}

// maskOf is the mask among an attention call's inputs (the fourth), or nil.
func maskOf(in []*tensor.Tensor) *tensor.Tensor {
	if len(in) == 4 {
		return in[3]
	}
	return nil
}

// Attention returns softmax(q·kᵀ·scale + mask)·v: q [..., Tq, D], k [..., Tk,
// D], v [..., Tk, Dv] with one batch shape (batch and heads), one float
// dtype; the result is [..., Tq, Dv]. mask, where not nil, is bool,
// true where a query attends to a key, and broadcasts over the queries
// and batch matrices as NumPy would, in these forms: [Tq, Tk] or [1, Tk]
// for all, or with the batch's rank, each batch dimension its own or 1
// from some dimension on ([N, H, Tq, Tk]: one each; [N, 1, 1, Tk]: a
// sequence's key padding for its heads and queries), which the kernels
// read in place; any other form that broadcasts so ([1, H, Tq, Tk], a
// mask a head shared by the sequences; [H, Tq, Tk]) is broadcast out to
// the batch's dimensions first, a copy; causal masks
// the keys after each query's position (PyTorch's is_causal); scale 0
// means 1/√D. A row whose every key is masked is NaN, as softmax of
// nothing is. Differentiable in q, k and v. Panics with a *tensor.Error
// for shapes or dtypes that do not fit.
func Attention(q, k, v, mask *tensor.Tensor, causal bool, scale float64) *tensor.Tensor {
	needInputs("Attention", q, k, v)
	defer asOp("Attention")
	if scale == 0 && q.Rank() >= 1 {
		scale = 1 / math.Sqrt(float64(q.Dim(-1)))
	}
	mask = laidOut(q, k, mask)
	in := []*tensor.Tensor{q, k, v}
	if mask != nil {
		in = append(in, mask)
	}
	attrs := AttentionAttrs{Scale: scale, Causal: causal}
	if q.Rank() >= 2 && !fusedOn(attentionOp, q) {
		return composedAttention(q, k, v, mask, attrs)
	}
	return eager.Run(attentionOp, attrs, in...)[0]
}

// composedAttention is Attention as ops, for devices without its kernel:
// the weights materialised, then their product with v.
func composedAttention(q, k, v, mask *tensor.Tensor, a AttentionAttrs) *tensor.Tensor {
	return MatMul(attentionWeights(q, k, mask, a), v)
}

// composedAttentionBackprop is the attention backward op's kernel as ops
// of its inputs (q, k, v, out, lse, dout, dlse[, mask]): with P = e^(S −
// lse) the weights (0 where a key is hidden), dV = Pᵀ·dO, dS = P∘(dO·Vᵀ −
// rowsum(dO∘out) + dlse), dQ = dS·K·scale and dK = dSᵀ·Q·scale.
func composedAttentionBackprop(a AttentionAttrs, in []*tensor.Tensor) []*tensor.Tensor {
	q, k, v, out, lse, dout, dlse := in[0], in[1], in[2], in[3], in[4], in[5], in[6]
	dt := q.DType()
	stat := func(s *tensor.Tensor) *tensor.Tensor { return ExpandDims(Cast(s, dt), -1) }
	var mask *tensor.Tensor
	if len(in) == 8 {
		mask = in[7]
	}
	p := Exp(Sub(attentionScores(q, k, mask, a), stat(lse)))
	delta := Reduce(Mul(dout, out), Reduction{Kind: ReduceSum, Dims: []int{-1}, KeepDims: true})
	ds := Mul(p, Add(Sub(MatMulT(dout, v, false, true), delta), stat(dlse)))
	scale := ScalarLike(q, a.Scale)
	return []*tensor.Tensor{Mul(MatMul(ds, k), scale), Mul(MatMulT(ds, q, true, false), scale), MatMulT(p, dout, true, false)}
}

// AttentionWeights returns the weights Attention applies to v,
// softmax(q·kᵀ·scale + mask) [..., Tq, Tk], for q [..., Tq, D] and k [...,
// Tk, D] of one batch shape and float dtype, mask and causal as
// Attention's (a row of nothing is NaN), scale 0 meaning 1/√D: the score
// matrix materialised (PyTorch's need_weights; a model that drops some of
// the weights in training multiplies these by v itself). Differentiable
// in q and k. Panics with a *tensor.Error for shapes or dtypes that do
// not fit.
func AttentionWeights(q, k, mask *tensor.Tensor, causal bool, scale float64) *tensor.Tensor {
	needInputs("AttentionWeights", q, k)
	defer asOp("AttentionWeights")
	if q.Rank() < 2 || k.Rank() != q.Rank() || q.Dim(-1) != k.Dim(-1) || !q.Shape()[:q.Rank()-2].Equal(k.Shape()[:k.Rank()-2]) {
		fail("AttentionWeights", tensor.ErrShape, []*tensor.Tensor{q, k}, "query %v and key %v need one batch shape and feature size", q.Shape(), k.Shape())
	}
	mask = laidOut(q, k, mask)
	if mask != nil {
		batch := q.Shape()[:q.Rank()-2]
		if _, ok := attnmask.Of(batch, q.Dim(-2), k.Dim(-2), mask.Shape()); mask.DType() != tensor.Bool || !ok {
			fail("AttentionWeights", tensor.ErrShape, []*tensor.Tensor{q, k, mask}, "the mask must be %s (true: attend) for batch %v, Tq %d and Tk %d, got %s", attnmask.Forms, batch, q.Dim(-2), k.Dim(-2), tensor.Describe(mask))
		}
	}
	if scale == 0 {
		scale = 1 / math.Sqrt(float64(q.Dim(-1)))
	}
	return attentionWeights(q, k, mask, AttentionAttrs{Scale: scale, Causal: causal})
}

// attentionWeights is AttentionWeights of checked inputs: the scores,
// masked to -inf, softmax.
func attentionWeights(q, k, mask *tensor.Tensor, a AttentionAttrs) *tensor.Tensor {
	return Softmax(attentionScores(q, k, mask, a), -1)
}

// attentionScores are q·kᵀ·scale, -inf where mask or causality hides a
// key.
func attentionScores(q, k, mask *tensor.Tensor, a AttentionAttrs) *tensor.Tensor {
	s := Mul(MatMulT(q, k, false, true), ScalarLike(q, a.Scale))
	keep := mask
	if a.Causal {
		tq, tk := q.Dim(-2), k.Dim(-2)
		causal := Ge(Reshape(tensor.Arange(0, float64(tq), 1), tq, 1), Reshape(tensor.Arange(0, float64(tk), 1), 1, tk))
		causal, _ = causal.To(q.Device())
		if keep == nil {
			keep = causal
		} else {
			keep = LogicalAnd(keep, causal)
		}
	}
	if keep != nil {
		s = Where(keep, s, ScalarLike(s, math.Inf(-1)))
	}
	return s
}
