// Command gpt trains a small GPT byte by byte on Go's own source tree
// (the .go files under $(go env GOROOT)/src, on every machine with Go)
// and samples Go-looking text from it.
//
//	go run ./examples/gpt [-steps 150] [-layers 4] [-dim 128] [-sample 200] [-out DIR]
//
// The model (package model) is nanoGPT's: token and position embeddings,
// pre-norm transformer blocks of causal attention and a GELU MLP, a last
// LayerNorm and a head to 256 byte logits; AdamW with a warm-up and a
// cosine decay, gradients clipped to norm 1. The source is written once
// to TFRecord shards of context+1-byte windows (-data, by default in the
// user's cache directory; written again when the source or the context
// changes) and streamed back through a data pipeline (shuffled, batched,
// prefetched); the validation shard's loss is printed every -eval steps.
// -out DIR keeps the checkpoint (gpt.ckpt) and the loss curves
// (curves.png). Sampling keeps each block's keys and values in a KV
// cache, so a byte costs work linear in the context.
package main

import (
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/eagerflow/eagerflow/examples/gpt/model"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/plot"
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
	flag.Uint64Var(&cfg.seed, "seed", cfg.seed, "seed of the initialisation and of the batches drawn")
	flag.IntVar(&cfg.evalEvery, "eval", cfg.evalEvery, "steps between validations")
	flag.Float64Var(&cfg.dropout, "dropout", cfg.dropout, "dropout rate in training (embeddings, attention weights, residual branches)")
	mixed := flag.Bool("mixed", false, "compute the blocks in bfloat16 (mixed precision: variables and logits stay float32)")
	flag.StringVar(&cfg.dataDir, "data", "", "directory of the TFRecord shards (default: in the user's cache directory)")
	flag.StringVar(&cfg.out, "out", "", "directory for the checkpoint (gpt.ckpt) and the loss curves (curves.png); none if empty")
	flag.Parse()
	if *mixed {
		cfg.compute = tensor.BFloat16
	}
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
	temperature, dropout                      float64
	compute                                   tensor.DType
	seed                                      uint64
	evalEvery                                 int
	dataDir, out                              string
	source                                    string // the tree to read (default: GOROOT/src)
	maxBytes                                  int    // the most source bytes to read
	progress                                  io.Writer
}

func defaults() config {
	return config{steps: 150, layers: 4, heads: 4, dim: 128, context: 128, batch: 16, sample: 200,
		topK: 40, temperature: 0.8, seed: 1, evalEvery: 50, maxBytes: 4 << 20, progress: io.Discard}
}

type result struct {
	first, last, val float64
	history          nn.History
	sample           string
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

// shape is the model's shape.
func (c config) shape() model.Config {
	return model.Config{Layers: c.layers, Heads: c.heads, Dim: c.dim, Context: c.context, Dropout: c.dropout, Compute: c.compute}
}

func run(c config) (result, error) {
	if c.steps <= 0 || c.evalEvery <= 0 || c.batch <= 0 || c.context <= 0 {
		return result{}, fmt.Errorf("steps (%d), -eval (%d), batch (%d) and context (%d) must be positive", c.steps, c.evalEvery, c.batch, c.context)
	}
	root := c.source
	if root == "" {
		root = filepath.Join(runtime.GOROOT(), "src")
	}
	text, err := readSource(root, c.maxBytes)
	if err != nil {
		return result{}, err
	}
	if nt, nv := windowCounts(len(text), c.context); nt < c.batch || nv < c.batch {
		return result{}, fmt.Errorf("%d bytes of source make %d training and %d validation windows of %d bytes, fewer than a batch of %d", len(text), nt, nv, c.context+1, c.batch)
	}
	dir := c.dataDir
	if dir == "" {
		dir = cacheDir(root, c.context)
	}
	describe := fmt.Sprintf("layout %d\nsource %s\nbytes %d\ncrc32 %08x\ncontext %d\n", shardLayout, root, len(text), crc32.ChecksumIEEE(text), c.context)
	trainFiles, valFiles, err := shardFiles(dir, describe, text, c.context)
	if err != nil {
		return result{}, fmt.Errorf("writing the shards to %s: %w", dir, err)
	}
	trainDS, err := windows(trainFiles, c.context, c.batch, c.seed)
	if err != nil {
		return result{}, err
	}
	valDS, err := windows(valFiles, c.context, c.batch, 99)
	if err != nil {
		return result{}, err
	}
	nextTrain, stopTrain := batches(trainDS)
	defer stopTrain()
	nextVal, stopVal := batches(valDS)
	defer stopVal()
	m, opt := model.New(tensor.NewRNG(c.seed), c.shape()), model.NewOptimizer(c.steps)
	validate := func() (float64, error) {
		nn.SetTraining(m, false)
		defer nn.SetTraining(m, true)
		v := 0.0
		for range 4 {
			x, y, err := nextVal()
			if err != nil {
				return 0, err
			}
			v += model.Loss(m.Forward(x), y).Float() / 4
		}
		return v, nil
	}

	var res result
	var since float64 // training loss summed since the last validation
	for step := range c.steps {
		x, y, err := nextTrain()
		if err != nil {
			return res, err
		}
		l, err := m.TrainStep(opt, x, y)
		if err != nil {
			return res, err
		}
		if step == 0 {
			res.first = l
		}
		res.last, since = l, since+l
		res.history.StepLoss = append(res.history.StepLoss, l)
		if (step+1)%c.evalEvery == 0 || step == c.steps-1 {
			if res.val, err = validate(); err != nil {
				return res, err
			}
			n := step + 1 - lastStep(res.history)
			res.history.Epochs = append(res.history.Epochs, nn.Logs{"loss": since / float64(n), "val_loss": res.val})
			res.history.EpochSteps = append(res.history.EpochSteps, step+1)
			fmt.Fprintf(c.progress, "step %d/%d  loss %.3f  val_loss %.3f\n", step+1, c.steps, since/float64(n), res.val)
			since = 0
		}
	}
	if c.out != "" {
		if err := save(c, m, opt, res.history); err != nil {
			return res, err
		}
	}
	nn.SetTraining(m, false)
	res.sample = sample(m, c, []byte("func "), rand.New(rand.NewPCG(5, 6)))
	return res, nil
}

// lastStep is the step of h's last validation (0 before any).
func lastStep(h nn.History) int {
	if len(h.EpochSteps) == 0 {
		return 0
	}
	return h.EpochSteps[len(h.EpochSteps)-1]
}

// save writes the model and its optimizer to c.out/gpt.ckpt and the loss
// curves to c.out/curves.png.
func save(c config, m *model.GPT, opt nn.Optimizer, h nn.History) error {
	if err := os.MkdirAll(c.out, 0o755); err != nil {
		return err
	}
	meta := map[string]string{"layers": fmt.Sprint(c.layers), "heads": fmt.Sprint(c.heads), "dim": fmt.Sprint(c.dim), "context": fmt.Sprint(c.context)}
	if err := nn.SaveCheckpoint(filepath.Join(c.out, "gpt.ckpt"), m.Variables(), opt, meta); err != nil {
		return err
	}
	return plot.History(filepath.Join(c.out, "curves.png"), h, plot.Options{Title: "examples/gpt"})
}

// sample generates c.sample bytes after prompt: each from the logits
// of the last, divided by the temperature, among the top k. The caches
// hold the keys and values of the bytes so far; when they fill the
// context, the last half of it is run again into fresh ones.
func sample(m *model.GPT, c config, prompt []byte, r *rand.Rand) string {
	out := slices.Clone(prompt)
	caches := m.NewCaches()
	next := out[max(0, len(out)-c.context):]
	for range c.sample {
		if caches[0].Len()+len(next) > c.context {
			caches = m.NewCaches()
			next = out[len(out)-c.context/2:]
		}
		ids := make([]int32, len(next))
		for i, b := range next {
			ids[i] = int32(b)
		}
		logits := m.Decode(tensor.FromSlice(ids, 1, len(ids)), caches)
		last := tensor.ToSlice[float32](ops.Reshape(ops.Slice(logits, []int{0, len(ids) - 1, 0}, []int{1, len(ids), model.Vocab}, nil), model.Vocab))
		out = append(out, pick(last, c.temperature, c.topK, r))
		next = out[len(out)-1:]
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
