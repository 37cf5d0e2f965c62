package nn

import (
	"fmt"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// MultiHeadAttention is self-attention over a sequence (Vaswani et al.):
// x [N, T, C] is projected to queries, keys and values by one [C, 3C]
// kernel (as nanoGPT's c_attn), split into Heads heads of C/Heads
// features, attended (ops.Attention, causal where Causal is set: a
// decoder's), merged and projected back by a [C, C] kernel: [N, T, C].
// In training, Dropout of the attention weights are dropped (the weights
// then materialised: ops.AttentionWeights, not the fused op).
type MultiHeadAttention struct {
	In, Out  *Dense // the joint query-key-value projection and the output's
	Heads    int
	Causal   bool
	Dropout  float64 // the rate of attention weights dropped in training
	rng      *tensor.RNG
	training bool
	draws    *traceDraws // where a traced step has it draw (draws.go)
}

// MultiHeadAttentionOpts configure NewMultiHeadAttention (and
// NewTransformerBlock): the dtype (Float32 when unset), causal masking, no
// biases in the projections, and the dropout rate in training (of the
// attention weights; a TransformerBlock's residual branches too, as
// nanoGPT's), its masks drawn from the constructor's rng.
type MultiHeadAttentionOpts struct {
	DType   tensor.DType
	Causal  bool
	NoBias  bool
	Dropout float64
}

// NewMultiHeadAttention makes the layer for width c and heads heads (c a
// multiple of heads), its variables under name: name+"/qkv/kernel" and
// the rest (Glorot-uniform kernels, zero biases). It panics with a
// *tensor.Error where heads does not divide c.
func NewMultiHeadAttention(name string, rng *tensor.RNG, c, heads int, o MultiHeadAttentionOpts) *MultiHeadAttention {
	if heads <= 0 || c <= 0 || c%heads != 0 {
		panic(tensor.NewError("nn", "NewMultiHeadAttention", tensor.ErrAttr, nil, "", "%d heads do not divide a width of %d", heads, c))
	}
	dense := DenseOpts{DType: o.DType, NoBias: o.NoBias}
	if !(o.Dropout >= 0 && o.Dropout < 1) {
		panic(tensor.NewError("nn", "NewMultiHeadAttention", tensor.ErrValue, nil, "", "dropout rate %v is outside [0, 1)", o.Dropout))
	}
	return &MultiHeadAttention{
		In:    NewDense(name+"/qkv", rng, c, 3*c, dense),
		Out:   NewDense(name+"/out", rng, c, c, dense),
		Heads: heads, Causal: o.Causal, Dropout: o.Dropout, rng: rng, training: true,
	}
}

// SetTraining switches the dropping of attention weights on or off.
func (m *MultiHeadAttention) SetTraining(training bool) { m.training = training }

// Training reports whether m drops attention weights (where its rate is
// above 0).
func (m *MultiHeadAttention) Training() bool { return m.training }

// drops reports whether m drops attention weights now.
func (m *MultiHeadAttention) drops() bool { return m.training && m.Dropout > 0 }

// Forward attends over x [N, T, C] and returns [N, T, C].
func (m *MultiHeadAttention) Forward(x *tensor.Tensor) *tensor.Tensor { return m.ForwardCached(x, nil) }

// KVCache holds the keys and values a causal MultiHeadAttention has seen
// of the sequences it generates (K and V [N, Heads, T, C/Heads], nil
// before the first call), so that each new position attends to them
// without computing them again: a token costs work linear in the
// context, not quadratic. One cache per layer; the zero value is empty.
type KVCache struct {
	K, V *tensor.Tensor
}

// Len is the number of positions the cache holds.
func (c *KVCache) Len() int {
	if c == nil || c.K == nil {
		return 0
	}
	return c.K.Dim(2)
}

// ForwardCached attends over x [N, T, C], the next T positions of
// sequences whose earlier positions' keys and values cache holds (nil:
// none, as Forward), appends x's to the cache and returns [N, T, C]. Each
// new position attends to every cached one and, where the layer is
// causal, to the new ones up to itself. Panics with a *tensor.Error for a
// rank other than 3 or a cache of other sequences (another N).
func (m *MultiHeadAttention) ForwardCached(x *tensor.Tensor, cache *KVCache) *tensor.Tensor {
	return m.attend(x, cache, nil)
}

// ForwardMasked attends over x [N, T, C] as Forward does, each position
// only to the keys keep marks: keep is bool [N, T], false at a
// sequence's padding (PyTorch's key_padding_mask, inverted), and, where
// the layer is causal, to those up to itself. A position whose sequence
// keeps no key it may see is NaN, as a softmax of nothing. The mask
// reaches the attention op as [N, 1, 1, T], which it broadcasts. Panics
// with a *tensor.Error where keep is not bool [N, T] for x, as Forward
// does for x.
func (m *MultiHeadAttention) ForwardMasked(x, keep *tensor.Tensor) *tensor.Tensor {
	mustArgs("MultiHeadAttention.ForwardMasked", arg{"x", x}, arg{"keep", keep})
	if x.Rank() == 3 && (keep.DType() != tensor.Bool || !keep.Shape().Equal(tensor.Shape{x.Dim(0), x.Dim(1)})) {
		panic(tensor.NewError("nn", "MultiHeadAttention.ForwardMasked", tensor.ErrShape, []*tensor.Tensor{x, keep}, "", "keep must be bool [N, T] = [%d %d] for x %v, got %s", x.Dim(0), x.Dim(1), x.Shape(), tensor.Describe(keep)))
	}
	return m.attend(x, nil, keep)
}

// attend is ForwardCached, each position attending only to the keys keep
// (bool [N, T]; nil: all) marks.
func (m *MultiHeadAttention) attend(x *tensor.Tensor, cache *KVCache, keep *tensor.Tensor) *tensor.Tensor {
	if x.Rank() != 3 {
		panic(tensor.NewError("nn", "MultiHeadAttention", tensor.ErrRank, []*tensor.Tensor{x}, "", "needs a sequence batch [N, T, C], got %v", x.Shape()))
	}
	needFeatures("MultiHeadAttention", x, -1, m.In.Kernel.Value().Dim(0), "features", "")
	n, t := x.Dim(0), x.Dim(1)
	qkv := m.heads(m.In.Forward(x), 3)
	q, k, v := qkv[0], qkv[1], qkv[2]
	past := cache.Len()
	if past > 0 {
		if cache.K.Dim(0) != n {
			panic(tensor.NewError("nn", "MultiHeadAttention", tensor.ErrShape, []*tensor.Tensor{x, cache.K}, "", "the cache holds %d sequences, x has %d", cache.K.Dim(0), n))
		}
		k, v = ops.Concatenate(2, cache.K, k), ops.Concatenate(2, cache.V, v)
	}
	if cache != nil {
		cache.K, cache.V = k, v
	}
	var mask *tensor.Tensor
	causal := m.Causal
	if keep != nil {
		mask = keysKept("MultiHeadAttention.ForwardMasked", x, keep)
	}
	if causal && past > 0 {
		// Query i (position past+i) sees keys up to past+i: PyTorch's
		// is_causal aligns at the top left, so a mask does it.
		causal = false
		if t > 1 {
			mask = ops.Le(ops.Reshape(tensor.Arange(0, float64(past+t), 1), 1, past+t),
				ops.Reshape(tensor.Arange(float64(past), float64(past+t), 1), t, 1))
			mask, _ = mask.To(x.Device())
		}
	}
	return m.combine(q, k, v, mask, causal)
}

// heads splits a projection y [N, T, parts·C] (the joint projection's
// queries, keys and values side by side) into parts tensors of the
// layer's heads, each [N, H, T, C/H]. Several are row-major, as the
// attention kernels read them: one transposed copy of y, [parts, N, H, T,
// C/H], cut in stretches (one Split: a call on a GPU), where a Split
// along the features and a transposed copy of each piece took six for
// three; their gradients likewise the other way. One is a transposed
// view (dispatch lays it out for the kernel). Reshape copies the merged
// heads after the attention: a taped op.
func (m *MultiHeadAttention) heads(y *tensor.Tensor, parts int) []*tensor.Tensor {
	n, t, h := y.Dim(0), y.Dim(1), m.Heads
	d := y.Dim(2) / parts / h
	if parts == 1 {
		return []*tensor.Tensor{ops.Transpose(ops.Reshape(y, n, t, h, d), 0, 2, 1, 3)}
	}
	out := ops.Split(ops.Transpose(ops.Reshape(y, n, t, parts, h, d), 2, 0, 3, 1, 4), 0, nil)
	for i, p := range out {
		out[i] = ops.Reshape(p, n, h, t, d)
	}
	return out
}

// combine attends the heads q to k and v (mask and causal as
// ops.Attention's; the weights dropped in training), merges the heads and
// projects them: [N, Tq, C].
func (m *MultiHeadAttention) combine(q, k, v, mask *tensor.Tensor, causal bool) *tensor.Tensor {
	var y *tensor.Tensor
	if m.drops() { // one op (a GPU's flash kernels drop inside)
		y = attentionDropout("MultiHeadAttention", q, k, v, mask, causal, m.Dropout, m.rng, m.draws)
	} else {
		y = ops.Attention(q, k, v, mask, causal, 0)
	}
	n, t := y.Dim(0), y.Dim(2)
	merged := ops.Reshape(ops.Transpose(y, 0, 2, 1, 3), n, t, y.Dim(1)*y.Dim(3))
	return m.Out.Forward(merged)
}

// keysKept is keep (bool [N, Tk], checked) on x's device as the
// attention's mask, [N, 1, 1, Tk], which the op broadcasts over the heads
// and queries.
func keysKept(op string, x, keep *tensor.Tensor) *tensor.Tensor {
	kept, err := keep.To(x.Device())
	if err != nil {
		panic(tensor.NewError("nn", op, err, []*tensor.Tensor{x, keep}, "", "moving keep to %s: %v", x.Device().Name(), err))
	}
	return ops.Reshape(kept, keep.Dim(0), 1, 1, keep.Dim(1))
}

// ForwardCross attends the positions of x [N, Tq, C] to those of memory
// [N, Tk, C] (an encoder's output, for a decoder's cross-attention): the
// queries are the joint projection's query part of x, the keys and values
// its key and value parts of memory (PyTorch's in_proj split), each
// position attending to the keys keep marks (bool [N, Tk], false at
// memory's padding; nil: all) and, where the layer is causal, to those
// up to its own position (top left aligned, as ops.Attention's causal).
// memory is taken in x's dtype. ForwardCross(x, x, nil) is Forward(x).
// Returns [N, Tq, C]. Panics with a *tensor.Error for shapes that do not
// fit (ranks, features, sequences, keep).
func (m *MultiHeadAttention) ForwardCross(x, memory, keep *tensor.Tensor) *tensor.Tensor {
	mustArgs("MultiHeadAttention.ForwardCross", arg{"x", x}, arg{"memory", memory})
	c := m.In.Kernel.Value().Dim(0)
	if x.Rank() != 3 || memory.Rank() != 3 {
		panic(tensor.NewError("nn", "MultiHeadAttention.ForwardCross", tensor.ErrRank, []*tensor.Tensor{x, memory}, "", "needs sequence batches x [N, Tq, C] and memory [N, Tk, C], got %v and %v", x.Shape(), memory.Shape()))
	}
	needFeatures("MultiHeadAttention", x, -1, c, "features", "")
	needFeatures("MultiHeadAttention", memory, -1, c, "memory features", "")
	n, tk := x.Dim(0), memory.Dim(1)
	if memory.Dim(0) != n {
		panic(tensor.NewError("nn", "MultiHeadAttention.ForwardCross", tensor.ErrShape, []*tensor.Tensor{x, memory}, "", "x has %d sequences, memory %d", n, memory.Dim(0)))
	}
	if keep != nil && (keep.DType() != tensor.Bool || !keep.Shape().Equal(tensor.Shape{n, tk})) {
		panic(tensor.NewError("nn", "MultiHeadAttention.ForwardCross", tensor.ErrShape, []*tensor.Tensor{memory, keep}, "", "keep must be bool [N, Tk] = [%d %d] for memory %v, got %s", n, tk, memory.Shape(), tensor.Describe(keep)))
	}
	memory = castFloat(memory, x.DType())
	w := valueAs(m.In.Kernel, x)
	var b *tensor.Tensor
	if m.In.Bias != nil {
		b = valueAs(m.In.Bias, x)
	}
	// project is y·W[:, from:to] + b[from:to], [N, T, to-from].
	project := func(y *tensor.Tensor, from, to int) *tensor.Tensor {
		flat, ws := ops.Reshape(y, -1, c), ops.Slice(w, []int{0, from}, []int{c, to}, nil)
		var p *tensor.Tensor
		if b != nil {
			p = ops.FusedMatMul(flat, ws, ops.Slice(b, []int{from}, []int{to}, nil), ops.NoActivation)
		} else {
			p = ops.MatMul(flat, ws)
		}
		return ops.Reshape(p, y.Dim(0), y.Dim(1), to-from)
	}
	kv := m.heads(project(memory, c, 3*c), 2)
	var mask *tensor.Tensor
	if keep != nil {
		mask = keysKept("MultiHeadAttention.ForwardCross", x, keep)
	}
	return m.combine(m.heads(project(x, 0, c), 1)[0], kv[0], kv[1], mask, m.Causal)
}

// ForwardStep attends x [N, 1, C], the token at position pos (an Int32
// scalar), to the keys k and values v [N, Heads, capacity, C/Heads] of
// the positions before it (what is after pos is ignored), and returns
// [N, 1, C] and the caches with x's keys and values written at pos: a
// generation step whose state keeps its shape, as a loop's must
// (control.While; NewStepCache makes the first). Inference only: no
// dropout. Panics with a *tensor.Error for other shapes.
func (m *MultiHeadAttention) ForwardStep(x, k, v, pos *tensor.Tensor) (y, k2, v2 *tensor.Tensor) {
	if x.Rank() != 3 || x.Dim(1) != 1 || k.Rank() != 4 || !k.Shape().Equal(v.Shape()) || k.Dim(1) != m.Heads || k.Dim(0) != x.Dim(0) || k.Dim(3)*m.Heads != x.Dim(2) {
		panic(tensor.NewError("nn", "MultiHeadAttention.ForwardStep", tensor.ErrShape, []*tensor.Tensor{x, k, v}, "", "needs x [N, 1, C] and caches [N, %d, capacity, C/%d], got %v, %v and %v", m.Heads, m.Heads, x.Shape(), k.Shape(), v.Shape()))
	}
	n, c, h, capacity := x.Dim(0), x.Dim(2), m.Heads, k.Dim(2)
	qkv := ops.Split(m.In.Forward(x), 2, []int{c, c, c})
	heads := func(y *tensor.Tensor) *tensor.Tensor { return ops.Reshape(y, n, h, 1, c/h) } // one position: no transpose
	zeros := tensor.FullOn(pos.Device(), tensor.Int32, 0, 2)
	starts := ops.Concatenate(0, zeros, ops.Reshape(ops.Cast(pos, tensor.Int32), 1), ops.Slice(zeros, []int{0}, []int{1}, nil))
	k2 = ops.DynamicUpdateSlice(k, ops.Cast(heads(qkv[1]), k.DType()), starts)
	v2 = ops.DynamicUpdateSlice(v, ops.Cast(heads(qkv[2]), v.DType()), starts)
	positions, _ := ops.Reshape(tensor.Arange(int32(0), int32(capacity), 1), 1, capacity).To(pos.Device())
	keep := ops.Le(positions, ops.Cast(pos, tensor.Int32))
	att := ops.Attention(heads(qkv[0]), ops.Cast(k2, x.DType()), ops.Cast(v2, x.DType()), keep, false, 0)
	return m.Out.Forward(ops.Reshape(att, n, 1, c)), k2, v2
}

// NewStepCache returns zero keys and values for ForwardStep: [n, Heads,
// capacity, C/Heads] of dtype dt each, on the device of the layer's
// variables.
func (m *MultiHeadAttention) NewStepCache(n, capacity int, dt tensor.DType) (k, v *tensor.Tensor) {
	kernel := m.Out.Kernel.Value()
	c, dev := kernel.Dim(0), kernel.Device()
	return tensor.FullOn(dev, dt, 0, n, m.Heads, capacity, c/m.Heads), tensor.FullOn(dev, dt, 0, n, m.Heads, capacity, c/m.Heads)
}

// Variables returns the projections' variables.
func (m *MultiHeadAttention) Variables() []*tape.Variable {
	return append(m.In.Variables(), m.Out.Variables()...)
}

func (m *MultiHeadAttention) String() string {
	causal := ""
	if m.Causal {
		causal = ", causal"
	}
	return fmt.Sprintf("MultiHeadAttention %s: %d wide, %d heads%s", layerName(m.In), m.In.Kernel.Value().Dim(0), m.Heads, causal)
}

// RMSNorm scales each example by the root mean square of its last
// dimension, with a learned gain (Zhang & Sennrich; LLaMA's norm):
// x·rsqrt(mean(x²) + Epsilon)·Gamma, over x [..., C]; a half x in
// float32, the result in x's dtype.
type RMSNorm struct {
	Gamma   *tape.Variable
	Epsilon float64
}

// NewRMSNorm makes an RMSNorm over c features with epsilon 1e-6, its gain
// name+"/gamma" (ones).
func NewRMSNorm(name string, c int, dt tensor.DType) *RMSNorm {
	return &RMSNorm{Gamma: tape.NewVariable(name+"/gamma", tensor.Ones(orFloat32(dt), c)), Epsilon: 1e-6}
}

// Forward normalizes x over its last dimension.
func (r *RMSNorm) Forward(x *tensor.Tensor) *tensor.Tensor {
	if halfWithFloat32(x, r.Gamma) {
		return ops.RMSNorm(x, r.Gamma.Value(), r.Epsilon)
	}
	return inFloat32(x, func(x *tensor.Tensor) *tensor.Tensor {
		return ops.RMSNorm(x, valueAs(r.Gamma, x), r.Epsilon)
	})
}

// Variables returns the gain.
func (r *RMSNorm) Variables() []*tape.Variable { return []*tape.Variable{r.Gamma} }

func (r *RMSNorm) String() string {
	return joinParts("RMSNorm", layerName(r), fmt.Sprintf("%d features", r.Gamma.Value().Dim(0)))
}

// TransformerBlock is a pre-norm decoder (or encoder) block as GPT-2 and
// nanoGPT write it: x + Attn(LN1(x)), then that + MLP(LN2(that)), the MLP
// a Dense of 4C with GELU (tanh form) and a Dense back to C; x [N, T, C].
type TransformerBlock struct {
	Norm1, Norm2 *LayerNorm
	Attn         *MultiHeadAttention
	Up, Down     *Dense
}

// ForwardStep runs the block over the token at position pos, x [N, 1,
// C], with its attention's keys and values k and v (as
// MultiHeadAttention.ForwardStep), returning [N, 1, C] and the caches.
func (b *TransformerBlock) ForwardStep(x, k, v, pos *tensor.Tensor) (y, k2, v2 *tensor.Tensor) {
	a, k2, v2 := b.Attn.ForwardStep(b.Norm1.Forward(x), k, v, pos)
	x = ops.Add(x, a)
	return ops.Add(x, b.Down.Forward(b.Up.Forward(b.Norm2.Forward(x)))), k2, v2
}

// Modules returns the block's layers (nn.SetTraining switches its
// dropout through its attention's).
func (b *TransformerBlock) Modules() []Module {
	return []Module{b.Norm1, b.Attn, b.Norm2, b.Up, b.Down}
}

// residual is x + branch, the branch dropped at the attention's rate in
// training.
func (b *TransformerBlock) residual(x, branch *tensor.Tensor) *tensor.Tensor {
	if b.Attn.drops() {
		branch = dropout("TransformerBlock", branch, b.Attn.Dropout, b.Attn.rng, b.Attn.draws)
	}
	return ops.Add(x, branch)
}

// NewTransformerBlock makes a block of width c and heads heads (causal
// where o says), its variables under name.
func NewTransformerBlock(name string, rng *tensor.RNG, c, heads int, o MultiHeadAttentionOpts) *TransformerBlock {
	dense := DenseOpts{DType: o.DType, NoBias: o.NoBias}
	up := dense
	up.Activation = ops.GeluTanh
	return &TransformerBlock{
		Norm1: NewLayerNorm(name+"/ln1", c, o.DType),
		Attn:  NewMultiHeadAttention(name+"/attn", rng, c, heads, o),
		Norm2: NewLayerNorm(name+"/ln2", c, o.DType),
		Up:    NewDense(name+"/mlp_up", rng, c, 4*c, up),
		Down:  NewDense(name+"/mlp_down", rng, 4*c, c, dense),
	}
}

// Forward runs the block over x [N, T, C].
func (b *TransformerBlock) Forward(x *tensor.Tensor) *tensor.Tensor { return b.ForwardCached(x, nil) }

// ForwardCached runs the block over the next positions x [N, T, C] of
// sequences whose earlier keys and values cache holds (nil: none), as
// MultiHeadAttention.ForwardCached.
func (b *TransformerBlock) ForwardCached(x *tensor.Tensor, cache *KVCache) *tensor.Tensor {
	return b.mlp(b.residual(x, b.Attn.ForwardCached(b.Norm1.Forward(x), cache)))
}

// ForwardMasked runs the block over x [N, T, C], its attention to the
// keys keep (bool [N, T], false at padding) marks, as
// MultiHeadAttention.ForwardMasked.
func (b *TransformerBlock) ForwardMasked(x, keep *tensor.Tensor) *tensor.Tensor {
	mustArgs("TransformerBlock.ForwardMasked", arg{"x", x}, arg{"keep", keep})
	return b.mlp(b.residual(x, b.Attn.ForwardMasked(b.Norm1.Forward(x), keep)))
}

// mlp is the block's second half: x plus its MLP branch.
func (b *TransformerBlock) mlp(x *tensor.Tensor) *tensor.Tensor {
	return b.residual(x, b.Down.Forward(b.Up.Forward(b.Norm2.Forward(x))))
}

// Variables returns the norms', attention's and MLP's variables.
func (b *TransformerBlock) Variables() []*tape.Variable {
	var out []*tape.Variable
	for _, m := range b.Modules() {
		out = append(out, m.Variables()...)
	}
	return out
}

func (b *TransformerBlock) String() string {
	return fmt.Sprintf("TransformerBlock %s: %s", layerName(b.Norm1), b.Attn)
}
