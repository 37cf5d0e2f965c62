package nn

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/schollz/progressbar/v3"
)

// FitConfig configures Fit. The zero value trains one epoch and writes
// nothing.
type FitConfig struct {
	Epochs int
	// Dir receives checkpoints (Dir/checkpoint.safetensors) and TensorBoard
	// summaries (Dir/logs); "" writes neither. When Dir holds a checkpoint,
	// Fit resumes after the epoch it recorded.
	Dir string
	// CheckpointEvery saves every that many steps as well as at the end of
	// each epoch (0: epoch ends only).
	CheckpointEvery int
	// Progress receives a progress bar (step, loss, examples/s, ETA); nil
	// shows none.
	Progress io.Writer
	// StepsPerEpoch sizes the bar (0: unknown, no ETA).
	StepsPerEpoch int
}

// Step runs one training step on a batch and returns its loss and number
// of examples.
type Step func(batch data.Element) (loss float64, examples int, err error)

// History is what Fit saw: the mean loss of each epoch it ran, and the
// epoch it started from (after a resume; when the checkpoint had done
// every epoch already, Fit runs none).
type History struct {
	FirstEpoch int
	EpochLoss  []float64
	Steps      int
}

// Fit runs step over ds for cfg.Epochs epochs. vars and opt are what
// checkpoints save and restore.
func Fit(ctx context.Context, ds *data.Dataset, vars []*tape.Variable, opt Optimizer, step Step, cfg FitConfig) (History, error) {
	var h History
	epochs := max(cfg.Epochs, 1)
	ckpt := ""
	var sw *SummaryWriter
	if cfg.Dir != "" {
		if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
			return h, fmt.Errorf("nn: fit: %w", err)
		}
		ckpt = filepath.Join(cfg.Dir, "checkpoint.safetensors")
		if _, err := os.Stat(ckpt); err == nil {
			meta, err := RestoreCheckpoint(ckpt, vars, opt)
			if err != nil {
				return h, err
			}
			done, _ := strconv.Atoi(meta["epoch"])
			h.FirstEpoch = done
			h.Steps, _ = strconv.Atoi(meta["step"])
		}
		var err error
		if sw, err = NewSummaryWriter(filepath.Join(cfg.Dir, "logs")); err != nil {
			return h, err
		}
		defer sw.Close()
	}
	save := func(epoch int) error {
		if ckpt == "" {
			return nil
		}
		return SaveCheckpoint(ckpt, vars, opt, map[string]string{"epoch": strconv.Itoa(epoch), "step": strconv.Itoa(h.Steps)})
	}
	for epoch := h.FirstEpoch; epoch < epochs; epoch++ {
		var bar *progressbar.ProgressBar
		if cfg.Progress != nil {
			total := int64(cfg.StepsPerEpoch)
			if total == 0 {
				total = -1
			}
			bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(cfg.Progress),
				progressbar.OptionSetDescription(fmt.Sprintf("epoch %d/%d", epoch+1, epochs)),
				progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true),
				progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionOnCompletion(func() { fmt.Fprintln(cfg.Progress) }))
		}
		var mean Mean
		start := time.Now()
		examples := 0
		for batch, err := range ds.All(ctx) {
			if err != nil {
				return h, err
			}
			loss, n, err := step(batch)
			if err != nil {
				return h, fmt.Errorf("nn: fit: step %d: %w", h.Steps, err)
			}
			if math.IsNaN(loss) {
				return h, fmt.Errorf("nn: fit: the loss became NaN at step %d", h.Steps)
			}
			mean.Add(loss, float64(n))
			examples += n
			h.Steps++
			if sw != nil {
				if err := sw.Scalar("loss", int64(h.Steps), loss); err != nil {
					return h, err
				}
			}
			if bar != nil {
				rate := float64(examples) / max(time.Since(start).Seconds(), 1e-9)
				bar.Describe(fmt.Sprintf("epoch %d/%d  loss %.4f  %.0f examples/s", epoch+1, epochs, mean.Value(), rate))
				bar.Add(1)
			}
			if cfg.CheckpointEvery > 0 && h.Steps%cfg.CheckpointEvery == 0 {
				if err := save(epoch); err != nil {
					return h, err
				}
			}
		}
		if bar != nil {
			bar.Finish()
		}
		h.EpochLoss = append(h.EpochLoss, mean.Value())
		if sw != nil {
			if err := sw.Scalar("epoch_loss", int64(epoch+1), mean.Value()); err != nil {
				return h, err
			}
		}
		if err := save(epoch + 1); err != nil {
			return h, err
		}
	}
	return h, nil // a resumed run that had done every epoch does nothing
}
