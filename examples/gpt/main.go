// Command gpt trains a small GPT byte by byte on Go's own source tree
// (the .go files under $(go env GOROOT)/src, on every machine with Go)
// and samples Go-looking text from it.
//
//	go run ./examples/gpt [-steps 150] [-layers 4] [-dim 128] [-sample 200]
//
// The model is nanoGPT's: token and position embeddings, pre-norm
// transformer blocks of causal attention and a GELU MLP, a last
// LayerNorm and a head to 256 byte logits; AdamW with a warm-up and a
// cosine decay, gradients clipped to norm 1. It is issue 34's first cut:
// sampling runs the whole context each token (no KV cache yet) and the
// data is read straight from the files (TFRecord shards come next).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

func main() {
	cfg := defaults()
	flag.IntVar(&cfg.steps, "steps", cfg.steps, "training steps")
	flag.IntVar(&cfg.layers, "layers", cfg.layers, "transformer blocks")
	flag.IntVar(&cfg.heads, "heads", cfg.heads, "attention heads")
	flag.IntVar(&cfg.dim, "dim", cfg.dim, "model width")
	flag.IntVar(&cfg.context, "context", cfg.context, "context length in bytes")
	flag.IntVar(&cfg.batch, "batch", cfg.batch, "sequences a step")
	flag.IntVar(&cfg.sample, "sample", cfg.sample, "bytes to generate after training")
	flag.Float64Var(&cfg.temperature, "temperature", cfg.temperature, "sampling temperature")
	flag.IntVar(&cfg.topK, "topk", cfg.topK, "sample among the k likeliest bytes")
	flag.Parse()
	cfg.progress = os.Stderr
	res, err := run(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "gpt:", err)
		os.Exit(1)
	}
	fmt.Printf("train loss %.3f -> %.3f nats/byte, validation %.3f\n%s\n", res.first, res.last, res.val, res.sample)
}

type config struct {
	steps, layers, heads, dim, context, batch int
	sample, topK                              int
	temperature                               float64
	source                                    string // the tree to read (default: GOROOT/src)
	maxBytes                                  int    // the most source bytes to read
	progress                                  io.Writer
}

func defaults() config {
	return config{steps: 150, layers: 4, heads: 4, dim: 128, context: 128, batch: 16, sample: 200,
		topK: 40, temperature: 0.8, maxBytes: 4 << 20, progress: io.Discard}
}

type result struct {
	first, last, val float64
	sample           string
}

// GPT is the model: x [N, T] byte ids -> logits [N, T, 256].
type GPT struct {
	Tok, Pos *nn.Embedding
	Blocks   []*nn.TransformerBlock
	Norm     *nn.LayerNorm
	Head     *nn.Dense
}

func newGPT(rng *tensor.RNG, c config) *GPT {
	g := &GPT{
		Tok:  nn.NewEmbedding("tok", rng, 256, c.dim, tensor.Float32),
		Pos:  nn.NewEmbedding("pos", rng, c.context, c.dim, tensor.Float32),
		Norm: nn.NewLayerNorm("ln_f", c.dim, tensor.Float32),
		Head: nn.NewDense("head", rng, c.dim, 256, nn.DenseOpts{NoBias: true}),
	}
	for i := range c.layers {
		g.Blocks = append(g.Blocks, nn.NewTransformerBlock(fmt.Sprintf("h%d", i), rng, c.dim, c.heads, nn.MultiHeadAttentionOpts{Causal: true}))
	}
	return g
}

// Forward maps byte ids [N, T] to logits [N, T, 256].
func (g *GPT) Forward(ids *tensor.Tensor) *tensor.Tensor {
	t := ids.Dim(1)
	x := ops.Add(g.Tok.Forward(ids), g.Pos.Forward(tensor.Arange(int32(0), int32(t), 1)))
	for _, b := range g.Blocks {
		x = b.Forward(x)
	}
	return g.Head.Forward(g.Norm.Forward(x))
}

// Variables lists the model's variables.
func (g *GPT) Variables() []*tape.Variable {
	ms := []nn.Module{g.Tok, g.Pos}
	for _, b := range g.Blocks {
		ms = append(ms, b)
	}
	var out []*tape.Variable
	for _, m := range append(ms, g.Norm, g.Head) {
		out = append(out, m.Variables()...)
	}
	return out
}

// newOpt is AdamW (decay 0.1) with a warm-up over a tenth of the steps
// and a cosine decay from 3e-3 to 3e-4.
func newOpt(c config) nn.Optimizer {
	return nn.NewAdamW(nn.Warmup(nn.Cosine(3e-3, c.steps, 3e-4), max(c.steps/10, 1)), 0.1)
}

// loss is the mean cross-entropy of logits [N, T, 256] against the next
// bytes [N, T].
func loss(logits, next *tensor.Tensor) *tensor.Tensor {
	return nn.SparseSoftmaxCrossEntropy(ops.Reshape(logits, -1, 256), ops.Reshape(next, -1))
}

// readSource returns up to max bytes of the .go files under root, in
// path order.
func readSource(root string, max int) ([]byte, error) {
	var out []byte
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || len(out) >= max {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || d.Name() == "vendor") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			out = append(out, b...)
		}
		return nil
	})
	if err == nil && len(out) == 0 {
		err = errors.New("no .go files under " + root)
	}
	return out[:min(len(out), max)], err
}

// batch draws n windows of t+1 bytes of text: ids [n, t] and the next bytes.
func batch(r *rand.Rand, text []byte, n, t int) (x, y *tensor.Tensor) {
	xs, ys := make([]int32, n*t), make([]int32, n*t)
	for i := range n {
		at := r.IntN(len(text) - t - 1)
		for j := range t {
			xs[i*t+j], ys[i*t+j] = int32(text[at+j]), int32(text[at+j+1])
		}
	}
	return tensor.FromSlice(xs, n, t), tensor.FromSlice(ys, n, t)
}

func run(c config) (result, error) {
	root := c.source
	if root == "" {
		root = filepath.Join(runtime.GOROOT(), "src")
	}
	text, err := readSource(root, c.maxBytes)
	if err != nil {
		return result{}, err
	}
	if len(text) < 10*(c.context+1) {
		return result{}, fmt.Errorf("%d bytes of source is too little for a context of %d", len(text), c.context)
	}
	split := len(text) * 9 / 10
	train, val := text[:split], text[split:]
	model, opt := newGPT(tensor.NewRNG(1), c), newOpt(c)
	r := rand.New(rand.NewPCG(1, 2))
	var res result
	for step := range c.steps {
		x, y := batch(r, train, c.batch, c.context)
		l, err := trainStep(model, opt, x, y)
		if err != nil {
			return res, err
		}
		if step == 0 {
			res.first = l
		}
		res.last = l
		if step%20 == 0 || step == c.steps-1 {
			fmt.Fprintf(c.progress, "step %d/%d  loss %.3f\n", step+1, c.steps, l)
		}
	}
	vr := rand.New(rand.NewPCG(3, 4))
	for range 4 {
		x, y := batch(vr, val, c.batch, c.context)
		res.val += loss(model.Forward(x), y).Float() / 4
	}
	res.sample = sample(model, c, []byte("func "), rand.New(rand.NewPCG(5, 6)))
	return res, nil
}

// trainStep takes one step: the loss and its gradients, clipped to a
// global norm of 1, and AdamW's update.
func trainStep(model *GPT, opt nn.Optimizer, x, y *tensor.Tensor) (float64, error) {
	var l float64
	var applied error
	err := tensor.Catch(func() {
		tp := tape.New(tape.Options{ReleaseIntermediates: true})
		value := loss(model.Forward(x), y)
		vars := model.Variables()
		grads, _ := nn.ClipByGlobalNorm(tp.Gradient(value, nn.Values(vars)...), 1)
		applied = opt.Apply(vars, grads)
		l = value.Float()
	})
	return l, errors.Join(err, applied)
}

// sample generates c.sample bytes after prompt: each from the last
// context's logits, divided by the temperature, among the top k.
func sample(model *GPT, c config, prompt []byte, r *rand.Rand) string {
	out := slices.Clone(prompt)
	for range c.sample {
		ctx := out[max(0, len(out)-c.context):]
		ids := make([]int32, len(ctx))
		for i, b := range ctx {
			ids[i] = int32(b)
		}
		logits := ops.Reshape(model.Forward(tensor.FromSlice(ids, 1, len(ids))), len(ids), 256)
		last := tensor.ToSlice[float32](ops.Index(logits, -1))
		out = append(out, pick(last, c.temperature, c.topK, r))
	}
	return string(out)
}

// pick draws a byte from logits at temperature among the k likeliest.
func pick(logits []float32, temperature float64, k int, r *rand.Rand) byte {
	order := make([]int, len(logits))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		switch {
		case logits[a] > logits[b]:
			return -1
		case logits[a] < logits[b]:
			return 1
		}
		return 0
	})
	order = order[:max(1, min(k, len(order)))]
	w := make([]float64, len(order))
	total := 0.0
	for i, o := range order {
		w[i] = math.Exp((float64(logits[o]) - float64(logits[order[0]])) / temperature)
		total += w[i]
	}
	u := r.Float64() * total
	for i, o := range order {
		if u -= w[i]; u <= 0 {
			return byte(o)
		}
	}
	return byte(order[len(order)-1])
}
