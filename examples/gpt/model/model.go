// Package model is examples/gpt's model, nanoGPT's written with
// eagerflow's layers: token and position embeddings, pre-norm transformer
// blocks of causal self-attention and a GELU MLP, a last LayerNorm and a
// head to 256 byte logits. The example trains and samples it; bench times
// its training step and its generation against a PyTorch twin
// (bench/peers/torch_bench.py).
package model

import (
	"errors"
	"fmt"
	"sync"

	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Vocab is the number of tokens: bytes.
const Vocab = 256

// Config is a GPT's shape: blocks, heads, width and the longest context
// (the position table's size); and the dropout rate in training (of the
// embeddings, the attention weights and the residual branches, as
// nanoGPT's; 0 for none, which traced steps need: the masks are drawn in
// Go).
type Config struct {
	Layers, Heads, Dim, Context int
	Dropout                     float64
	// Compute is the dtype the blocks compute in: Float32 (the zero
	// value), or BFloat16 for mixed precision (the variables stay float32,
	// the products run in bfloat16 and sum in float32, the norms and the
	// attention's softmax in float32, the logits float32), as
	// nn.MixedBFloat16 does for a Sequential.
	Compute tensor.DType
}

// GPT maps byte ids [N, T] to next-byte logits [N, T, Vocab]. It is an
// nn.Container: nn.SetTraining switches its dropout.
type GPT struct {
	Tok, Pos *nn.Embedding
	Drop     *nn.Dropout
	Blocks   []*nn.TransformerBlock
	Norm     *nn.LayerNorm
	Head     *nn.Dense

	compute    tensor.DType
	generators sync.Map // sampling -> *trace.Function (generate.go)
	positions  sync.Map // device.Device -> int32 0 to Context-1 there

	step    nn.Step // TrainStep's, for stepOpt
	stepOpt nn.Optimizer
}

// New makes a GPT of shape c, its variables drawn from rng.
func New(rng *tensor.RNG, c Config) *GPT {
	g := &GPT{
		Tok:  nn.NewEmbedding("tok", rng, Vocab, c.Dim, tensor.Float32),
		Pos:  nn.NewEmbedding("pos", rng, c.Context, c.Dim, tensor.Float32),
		Norm: nn.NewLayerNorm("ln_f", c.Dim, tensor.Float32),
		Head: nn.NewDense("head", rng, c.Dim, Vocab, nn.DenseOpts{NoBias: true}),
		Drop: nn.NewDropout(c.Dropout, rng),
	}
	if c.Compute.IsHalf() {
		g.compute = c.Compute
	}
	for i := range c.Layers {
		g.Blocks = append(g.Blocks, nn.NewTransformerBlock(fmt.Sprintf("h%d", i), rng, c.Dim, c.Heads, nn.MultiHeadAttentionOpts{Causal: true, Dropout: c.Dropout}))
	}
	return g
}

// Modules lists the model's layers (nn.Container).
func (g *GPT) Modules() []nn.Module {
	ms := []nn.Module{g.Tok, g.Pos, g.Drop}
	for _, b := range g.Blocks {
		ms = append(ms, b)
	}
	return append(ms, g.Norm, g.Head)
}

// Context is the longest sequence the model takes.
func (g *GPT) Context() int { return g.Pos.Table.Value().Dim(0) }

// Forward maps byte ids [N, T] to logits [N, T, Vocab].
func (g *GPT) Forward(ids *tensor.Tensor) *tensor.Tensor { return g.Decode(ids, nil) }

// Decode maps the next positions ids [N, T] of sequences whose earlier
// positions' keys and values caches holds (one cache per block, as
// NewCaches makes; nil: no earlier positions, nothing kept) to their
// logits [N, T, Vocab], appending their keys and values to the caches.
// Panics with a *tensor.Error where the positions would pass the
// context.
func (g *GPT) Decode(ids *tensor.Tensor, caches []nn.KVCache) *tensor.Tensor {
	past := 0
	if caches != nil {
		past = caches[0].Len()
	}
	t := ids.Dim(1)
	if past+t > g.Context() {
		panic(tensor.NewError("model", "Decode", tensor.ErrShape, []*tensor.Tensor{ids}, "", "positions %d to %d pass the context of %d", past, past+t, g.Context()))
	}
	x := g.Drop.Forward(ops.Add(g.Tok.Forward(ids), g.Pos.Forward(g.positionIDs(past, t))))
	if g.compute != tensor.Invalid {
		x = ops.Cast(x, g.compute)
	}
	for i, b := range g.Blocks {
		var c *nn.KVCache
		if caches != nil {
			c = &caches[i]
		}
		x = b.ForwardCached(x, c)
	}
	return ops.Cast(g.Head.Forward(g.Norm.Forward(x)), tensor.Float32)
}

// positionIDs are the positions past to past+t (int32 [t]) on the
// position table's device: a slice of 0 to Context-1 made there once, so
// that a step copies nothing from the host for them.
func (g *GPT) positionIDs(past, t int) *tensor.Tensor {
	dev := g.device()
	all, ok := g.positions.Load(dev)
	if !ok {
		var err error
		if all, err = tensor.Arange(int32(0), int32(g.Context()), 1).To(dev); err != nil {
			panic(tensor.NewError("model", "Decode", err, nil, "", "the positions on %s: %v", dev.Name(), err))
		}
		all, _ = g.positions.LoadOrStore(dev, all)
	}
	ids := all.(*tensor.Tensor)
	if past == 0 && t == ids.Dim(0) {
		return ids
	}
	return ops.Slice(ids, []int{past}, []int{past + t}, nil)
}

// NewCaches returns empty caches for Decode, one per block.
func (g *GPT) NewCaches() []nn.KVCache { return make([]nn.KVCache, len(g.Blocks)) }

// Variables lists the model's variables.
func (g *GPT) Variables() []*tape.Variable {
	var out []*tape.Variable
	for _, m := range g.Modules() {
		out = append(out, m.Variables()...)
	}
	return out
}

// Loss is the mean cross-entropy of logits [N, T, Vocab] against the
// next bytes [N, T].
func Loss(logits, next *tensor.Tensor) *tensor.Tensor {
	return nn.SparseSoftmaxCrossEntropy(ops.Reshape(logits, -1, Vocab), ops.Reshape(next, -1))
}

// NewOptimizer is nanoGPT's AdamW for a run of steps: decay 0.1 on the
// matrices (kernels and embeddings) only, a warm-up over a tenth of the
// steps and a cosine decay from 3e-3 to 3e-4.
func NewOptimizer(steps int) *nn.Adam {
	o := nn.NewAdamW(nn.Warmup(nn.Cosine(3e-3, steps, 3e-4), max(steps/10, 1)), 0.1)
	o.Decays = nn.DecayMatrices
	return o
}

// TrainStep takes one step on ids x [N, T] and next bytes y [N, T]: the
// loss and its gradients, clipped to a global norm of 1, and opt's
// update (nn.TrainStep through an nn.ClippedOptimizer over opt: where opt
// is nn's own, the clipping is part of its step, and in mixed precision
// the half gradients go to it as they are). It returns the loss, or the
// error that stopped the step.
func (g *GPT) TrainStep(opt nn.Optimizer, x, y *tensor.Tensor) (float64, error) {
	if opt == nil {
		return 0, errors.New("model: TrainStep: a nil optimizer")
	}
	if g.stepOpt != opt {
		clipped, ok := opt.(*nn.ClippedOptimizer)
		if !ok {
			clipped = nn.NewClippedOptimizer(opt, 1)
		}
		g.step, g.stepOpt = nn.TrainStep(g, Loss, clipped), opt
	}
	l, _, err := g.step(data.Element{x, y})
	return l, err
}

// release hands back ts' buffers (nil entries skipped).
func release(ts []*tensor.Tensor) {
	for _, t := range ts {
		if t != nil {
			t.Release()
		}
	}
}
