// Command tfrecord-pipeline writes a dataset to sharded TFRecord files of
// tf.train.Examples, reads it back through a data pipeline (file
// interleave, parallel parse, shuffle, batch, prefetch) and trains a small
// classifier on it with the tape, printing loss and accuracy per epoch.
//
//	go run ./examples/tfrecord-pipeline [-dir DIR] [-epochs 8]
//
// The shards go to -dir, with curves.png (loss and accuracy) and TensorBoard events (DIR/logs);
// by default a fresh temporary directory, removed at the end.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/plot"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

func main() {
	var cfg config
	flag.StringVar(&cfg.dir, "dir", "", "directory for the TFRecord shards (default: a temporary one)")
	flag.IntVar(&cfg.epochs, "epochs", 8, "training epochs")
	flag.Parse()
	res, err := run(cfg, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "tfrecord-pipeline:", err)
		os.Exit(1)
	}
	fmt.Printf("final loss %.4f, accuracy %.1f%%\n", res.loss, 100*res.accuracy)
}

type config struct {
	dir      string
	epochs   int
	shards   int
	perShard int
}

type result struct{ firstLoss, loss, accuracy float64 }

const classes = 3

// writeShards writes points of three Gaussian blobs (features "x": 2
// floats, "label": int64) to shards.
func writeShards(dir string, shards, perShard int) ([]string, error) {
	rng := tensor.NewRNG(42)
	centers := [classes][2]float64{{-2, 0}, {2, 0}, {0, 2.5}}
	var files []string
	for s := range shards {
		name := filepath.Join(dir, fmt.Sprintf("blobs-%05d-of-%05d.tfrecord", s, shards))
		w, err := data.CreateWriter(name, data.WriterOptions{})
		if err != nil {
			return nil, err
		}
		noise := tensor.ToSlice[float64](tensor.RandNormal(rng, tensor.Float64, perShard, 2))
		for i := range perShard {
			c := (s*perShard + i) % classes
			e := &data.Example{Features: map[string]*data.Feature{
				"x": {Kind: data.KindFloat, Floats: []float32{
					float32(centers[c][0] + 0.8*noise[2*i]), float32(centers[c][1] + 0.8*noise[2*i+1])}},
				"label": {Kind: data.KindInt64, Int64s: []int64{int64(c)}},
			}}
			if err := w.Write(e.Marshal()); err != nil {
				w.Abort()
				return nil, err
			}
		}
		if err := w.Close(); err != nil {
			return nil, err
		}
		files = append(files, name)
	}
	return files, nil
}

func run(cfg config, out io.Writer) (result, error) {
	if cfg.epochs <= 0 {
		return result{}, fmt.Errorf("epochs must be positive, got %d", cfg.epochs)
	}
	if cfg.shards == 0 {
		cfg.shards, cfg.perShard = 4, 600
	}
	keep := cfg.dir != "" // a directory the user asked for also gets curves.png and events
	if cfg.dir == "" {
		dir, err := os.MkdirTemp("", "tfrecord-pipeline-")
		if err != nil {
			return result{}, err
		}
		defer os.RemoveAll(dir)
		cfg.dir = dir
	}
	var sw *nn.SummaryWriter
	var curve nn.History // loss and accuracy per epoch, for the plot
	if keep {
		var err error
		if sw, err = nn.NewSummaryWriter(filepath.Join(cfg.dir, "logs")); err != nil {
			return result{}, err
		}
		defer sw.Close()
	}
	files, err := writeShards(cfg.dir, cfg.shards, cfg.perShard)
	if err != nil {
		return result{}, err
	}
	parser, err := data.NewParser(data.ParseSpec{
		"label": data.FixedLen{Shape: []int{}, DType: tensor.Int64},
		"x":     data.FixedLen{Shape: []int{2}, DType: tensor.Float32},
	})
	if err != nil {
		return result{}, err
	}
	// Components come in sorted feature order: label, x.
	ds := data.TFRecordFiles(files, data.TFRecordOptions{ShuffleFiles: true, Seed: 7, Parallel: 2}).
		Map(data.ParseWith(parser), data.MapOptions{Parallel: 2}).
		Shuffle(512, 7, true).
		Batch(32, false).
		Prefetch(2).
		Repeat(cfg.epochs)

	rng := tensor.NewRNG(1)
	w1 := tape.NewVariable("w1", ops.Mul(tensor.RandNormal(rng, tensor.Float32, 2, 32), tensor.Scalar(float32(0.7))))
	b1 := tape.NewVariable("b1", tensor.Zeros(tensor.Float32, 32))
	w2 := tape.NewVariable("w2", ops.Mul(tensor.RandNormal(rng, tensor.Float32, 32, classes), tensor.Scalar(float32(0.25))))
	b2 := tape.NewVariable("b2", tensor.Zeros(tensor.Float32, classes))
	params := []*tape.Variable{w1, b1, w2, b2}

	var res result
	steps := cfg.shards * cfg.perShard / 32
	if cfg.shards*cfg.perShard%32 != 0 {
		steps++
	}
	var epochLoss, correct, seen float64
	step := 0
	for batch, err := range ds.All(context.Background()) {
		if err != nil {
			return res, err
		}
		labels, x := batch[0], batch[1]
		tp := tape.New()
		logits := ops.Add(ops.MatMul(ops.Relu(ops.Add(ops.MatMul(x, w1.Value()), b1.Value())), w2.Value()), b2.Value())
		loss := ops.Mean(ops.SparseSoftmaxCrossEntropy(logits, labels))
		vals := make([]*tensor.Tensor, len(params))
		for i, p := range params {
			vals[i] = p.Value()
		}
		for i, g := range tp.Gradient(loss, vals...) {
			params[i].AssignScaled(-0.1, g)
		}
		l := loss.Float()
		if math.IsNaN(l) {
			return res, fmt.Errorf("loss became NaN at step %d", step)
		}
		n := float64(labels.Dim(0))
		epochLoss += l * n
		pred, want := tensor.ToSlice[int64](ops.ArgMax(logits, 1)), tensor.ToSlice[int64](labels)
		for i := range pred {
			if pred[i] == want[i] {
				correct++
			}
		}
		seen += n
		if step++; step%steps == 0 {
			res.loss, res.accuracy = epochLoss/seen, correct/seen
			if step == steps {
				res.firstLoss = res.loss
			}
			if out != nil {
				fmt.Fprintf(out, "epoch %d  loss %.4f  accuracy %.1f%%\n", step/steps, res.loss, 100*res.accuracy)
			}
			curve.Epochs = append(curve.Epochs, nn.Logs{"loss": res.loss, "accuracy": res.accuracy})
			if sw != nil {
				if err := sw.Scalar("loss", int64(step/steps), res.loss); err != nil {
					return res, err
				}
				if err := sw.Scalar("accuracy", int64(step/steps), res.accuracy); err != nil {
					return res, err
				}
			}
			epochLoss, correct, seen = 0, 0, 0
		}
	}
	if keep {
		if err := plot.History(filepath.Join(cfg.dir, "curves.png"), curve, plot.Options{Title: "tfrecord-pipeline", ByEpoch: true}); err != nil {
			return res, err
		}
	}
	return res, nil
}
