// Command charrnn trains a character-level LSTM language model on a short
// text shipped with it (text.txt, written for this project and dedicated to
// the public domain), with the training step traced once by
// trace.NewFunction and run from its graph afterwards, and prints a
// sample of generated text.
//
//	go run ./examples/charrnn [-epochs 30] [-dir runs/charrnn]
//
// With -dir it keeps a checkpoint (and resumes from it), TensorBoard
// events (tensorboard --logdir DIR/logs) and curves.png (losses) there; without, it
// uses a temporary directory.
package main

import (
	"context"
	_ "embed"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"

	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/examples/internal/report"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

//go:embed text.txt
var text string

func main() {
	var cfg config
	flag.IntVar(&cfg.epochs, "epochs", 30, "training epochs (each: every batch of windows once)")
	flag.StringVar(&cfg.dir, "dir", "", "output directory (default: a temporary one)")
	flag.Parse()
	cfg.progress = os.Stderr
	res, err := run(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "charrnn:", err)
		os.Exit(1)
	}
	fmt.Printf("final loss %.3f nats/char (from %.3f), %d traces of the train step\nsample: %q\n",
		res.loss, res.firstLoss, res.traces, res.sample)
}

type config struct {
	epochs   int
	dir      string
	windows  int // training windows of seqLen+1 characters (0: 512)
	progress io.Writer
}

type result struct {
	firstLoss, loss float64
	traces          int
	sample          string
}

const (
	seqLen = 32
	batch  = 16
	embed  = 16
	hidden = 96
)

// model is embedding -> LSTM over the sequence -> dense logits per step.
type model struct {
	vocab []rune
	emb   *nn.Embedding
	rnn   *nn.RNN
	out   *nn.Dense
}

func newModel(vocab []rune) *model {
	rng := tensor.NewRNG(7)
	return &model{
		vocab: vocab,
		emb:   nn.NewEmbedding("embedding", rng, len(vocab), embed, tensor.Float32),
		rnn:   &nn.RNN{Cell: nn.NewLSTMCell("lstm", rng, embed, hidden, tensor.Float32), ReturnSequences: true},
		out:   nn.NewDense("logits", rng, hidden, len(vocab), nn.DenseOpts{}),
	}
}

func (m *model) variables() []*tape.Variable {
	return slices.Concat(m.emb.Variables(), m.rnn.Variables(), m.out.Variables())
}

// logits maps ids [N T] to [N*T vocab].
func (m *model) logits(ids *tensor.Tensor) *tensor.Tensor {
	h := m.rnn.Forward(m.emb.Forward(ids)) // [N T hidden]
	return m.out.Forward(ops.Reshape(h, -1, hidden))
}

// trainStep returns the traced step: (ids [N T], next ids [N*T]) -> the
// loss and one gradient per variable.
func (m *model) trainStep() *trace.Function {
	vars := m.variables()
	return trace.NewFunction(func(a []*tensor.Tensor) []*tensor.Tensor {
		tp := tape.New()
		loss := nn.SparseSoftmaxCrossEntropy(m.logits(a[0]), a[1])
		return append([]*tensor.Tensor{loss}, tp.Gradient(loss, nn.Values(vars)...)...)
	})
}

// windows cuts n random windows of seqLen+1 characters from ids: inputs
// [n seqLen] and targets (the next characters) [n seqLen], Int32.
func windows(ids []int32, n int, seed uint64) (x, y *tensor.Tensor) {
	r := rand.New(rand.NewPCG(seed, 1))
	xs, ys := make([]int32, 0, n*seqLen), make([]int32, 0, n*seqLen)
	for range n {
		at := r.IntN(len(ids) - seqLen - 1)
		xs = append(xs, ids[at:at+seqLen]...)
		ys = append(ys, ids[at+1:at+seqLen+1]...)
	}
	return tensor.FromSlice(xs, n, seqLen), tensor.FromSlice(ys, n, seqLen)
}

func run(cfg config) (result, error) {
	if cfg.epochs <= 0 {
		return result{}, fmt.Errorf("epochs must be positive, got %d", cfg.epochs)
	}
	if cfg.windows == 0 {
		cfg.windows = 512
	}
	dir, cleanup, err := report.OutputDir(cfg.dir, "charrnn")
	if err != nil {
		return result{}, err
	}
	defer cleanup()

	vocab := slices.Compact(slices.Sorted(slices.Values([]rune(text))))
	index := map[rune]int32{}
	for i, c := range vocab {
		index[c] = int32(i)
	}
	ids := make([]int32, 0, len(text))
	for _, c := range text {
		ids = append(ids, index[c])
	}
	x, y := windows(ids, cfg.windows, 1)
	ds, err := data.FromSlices(x, y)
	if err != nil {
		return result{}, err
	}
	ds = ds.Cache().Shuffle(cfg.windows, 2, true).Batch(batch, true)

	m := newModel(vocab)
	vars := m.variables()
	opt := nn.NewAdam(nn.Constant(0.01))
	f := m.trainStep()
	step := func(b data.Element) (float64, int, error) {
		out, err := f.Call(b[0], ops.Reshape(b[1], -1))
		if err != nil {
			return 0, 0, err
		}
		grads, _ := nn.ClipByGlobalNormTensor(out[1:], 5)
		return out[0].Float(), b[0].Dim(0), opt.Apply(vars, grads)
	}
	h, err := nn.Fit(context.Background(), ds, vars, opt, step,
		nn.FitConfig{Epochs: cfg.epochs, Dir: dir, Progress: cfg.progress, StepsPerEpoch: cfg.windows / batch})
	if err != nil {
		return result{}, err
	}
	res := result{traces: f.Traces(), sample: m.sample("The keeper ", 160, 0.6, 3)}
	res.firstLoss, res.loss, err = report.Finish(dir, cfg.dir != "", cfg.progress, "charrnn: LSTM language model", h)
	return res, err
}

// sample feeds prime through the model and then draws n characters, each
// from the softmax of the logits divided by temperature (seeded).
func (m *model) sample(prime string, n int, temperature float64, seed uint64) string {
	r := rand.New(rand.NewPCG(seed, 2))
	index := map[rune]int32{}
	for i, c := range m.vocab {
		index[c] = int32(i)
	}
	var state []*tensor.Tensor
	var b strings.Builder
	b.WriteString(prime)
	next := func(id int32) []float32 {
		var h *tensor.Tensor
		h, state = m.rnn.Run(m.emb.Forward(tensor.FromSlice([]int32{id}, 1, 1)), state)
		return tensor.ToSlice[float32](m.out.Forward(ops.Reshape(h, 1, hidden)))
	}
	var logits []float32
	for _, c := range prime {
		logits = next(index[c])
	}
	for range n {
		weights := make([]float64, len(logits))
		top := float64(slices.Max(logits))
		total := 0.0
		for i, l := range logits {
			weights[i] = math.Exp((float64(l) - top) / temperature)
			total += weights[i]
		}
		pick, u := len(weights)-1, r.Float64()*total
		for i, w := range weights {
			if u -= w; u < 0 {
				pick = i
				break
			}
		}
		b.WriteRune(m.vocab[pick])
		logits = next(int32(pick))
	}
	return b.String()
}
