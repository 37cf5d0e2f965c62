package nn

import (
	"context"
	"fmt"
	"io"
	"iter"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/profile"
	"github.com/eagerflow/eagerflow/tape"
)

// FitConfig configures Fit. The zero value trains one epoch and writes
// nothing.
type FitConfig struct {
	Epochs int
	// Dir receives checkpoints (Dir/checkpoint.safetensors) and TensorBoard
	// summaries (Dir/logs: "loss" per step, every Logs entry per epoch);
	// "" writes neither. When Dir holds a checkpoint, Fit resumes where
	// it was saved: after the epoch it recorded, or, saved within an
	// epoch (CheckpointEvery), at the next batch of that epoch (its
	// first batches read and skipped; the epoch's mean loss then covers
	// the steps run after the resume).
	Dir string
	// CheckpointEvery saves every that many steps as well as at the end of
	// each epoch (0: epoch ends only).
	CheckpointEvery int
	// Progress receives the progress: on a terminal a redrawn bar (step,
	// loss, examples/s, ETA), elsewhere (a file, a pipe, a notebook) plain
	// lines, at most one every 10 seconds; and a line of Logs per epoch.
	// Nil shows nothing.
	Progress io.Writer
	// StepsPerEpoch, when above 0, makes every epoch that many steps, as
	// Keras's steps_per_epoch does: Fit then reads ds as one stream of
	// passes (pass n is ds.Epoch(ctx, n)), going on into the next pass
	// where one ends, so that an endless dataset (Repeat(-1)) is read
	// once through, an epoch at a time, and a finite one is cut into
	// epochs of StepsPerEpoch batches across its passes. A run resumed
	// at epoch e starts its stream at pass e. It also sizes the bar
	// (0: epochs are passes of ds, the bar has no ETA).
	StepsPerEpoch int
	// Validation, when not nil, is run through Evaluate after every
	// epoch; its metrics enter the epoch's Logs as "val_<name>".
	Validation *data.Dataset
	Evaluate   EvalStep
	// Callbacks run at the end of every epoch, in order (EarlyStopping,
	// CheckpointBest, Plateau, or a CallbackFunc of your own); those that
	// are StepCallbacks also after every step.
	Callbacks []Callback
	// Comm, when not nil, makes the run data-parallel over its ranks (see
	// DistributedTrainStep, which the step should be): vars are
	// broadcast from rank 0 before the first step, each epoch's loss and
	// validation metrics are averaged over every rank's examples (so the
	// Logs, and the callbacks' decisions, are the same on every rank), and
	// only rank 0 writes checkpoints, summaries and progress (every rank
	// resumes from Dir's checkpoint, which must be on a shared file
	// system). Each rank reads its own shard (data.Dataset.Shard), and
	// every rank must take the same number of steps per epoch (equal
	// shards, or batches with dropRemainder).
	Comm collective.Comm
}

// Step runs one training step on a batch and returns its loss and number
// of examples. It is the custom-step form of training: the step is yours
// (see the package example); TrainStep makes the usual one.
type Step func(batch data.Element) (loss float64, examples int, err error)

// EvalStep measures one validation batch: metrics by name (each the mean
// over the batch's examples: "loss", "accuracy"...) and the number of
// examples. Fit averages them over the dataset, weighted by examples.
type EvalStep func(batch data.Element) (metrics map[string]float64, examples int, err error)

// History is what Fit saw: the mean loss of each epoch it ran, each
// epoch's Logs and the step count at its end, the loss of every step, and
// the epoch and step it started from (after a resume; when the checkpoint
// had done every epoch already, Fit runs none). Stopped is the reason a
// callback gave for ending early, "" otherwise. plot.History draws it.
type History struct {
	FirstEpoch int
	FirstStep  int       // steps done before this run (a resume's)
	EpochLoss  []float64 // mean training loss of each epoch run
	Epochs     []Logs    // each epoch's Logs: "loss", "val_<metric>", what callbacks add
	EpochSteps []int     // the step count at the end of each epoch run
	StepLoss   []float64 // the loss of step FirstStep+1+i
	Steps      int       // the step count at the end
	Stopped    string
}

// String lists the epochs run, a line each with its step count and Logs
// ("epoch 3 (step 36): loss 0.41  val_accuracy 0.87"), then why the run
// stopped early, if it did; "no epochs run" for none.
func (h History) String() string {
	var b strings.Builder
	for i, logs := range h.Epochs {
		fmt.Fprintf(&b, "epoch %d", h.FirstEpoch+i+1)
		if i < len(h.EpochSteps) {
			fmt.Fprintf(&b, " (step %d)", h.EpochSteps[i])
		}
		fmt.Fprintf(&b, ": %v\n", logs)
	}
	if len(h.Epochs) == 0 {
		b.WriteString("no epochs run\n")
	}
	if h.Stopped != "" {
		fmt.Fprintf(&b, "stopped: %s\n", h.Stopped)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// Fit runs step over ds for cfg.Epochs epochs, then validation and the
// callbacks after each. Epoch e runs ds.Epoch(ctx, e), so a Shuffle with
// reshuffleEachEpoch gives every epoch its own order (and a resumed run
// the orders an uninterrupted one had); with cfg.StepsPerEpoch, epochs
// are that many batches of ds's passes read one after another
// (FitConfig). vars and opt are what checkpoints save and restore and
// what callbacks see.
func Fit(ctx context.Context, ds *data.Dataset, vars []*tape.Variable, opt Optimizer, step Step, cfg FitConfig) (h History, err error) {
	defer func() { // the profile EAGERFLOW_PROFILE asked for, written as the run ends
		if perr := profile.WriteEnv(); perr != nil && err == nil {
			err = fmt.Errorf("nn: fit: %w", perr)
		}
	}()
	if err := nilArg("Fit", arg{"the dataset", ds}, arg{"the step", step}, arg{"vars", vars}); err != nil {
		return h, err
	}
	epochs := max(cfg.Epochs, 1)
	primary := cfg.Comm == nil || cfg.Comm.Rank() == 0
	if cfg.Validation != nil && cfg.Evaluate == nil {
		return h, fmt.Errorf("nn: fit: Validation needs an Evaluate step")
	}
	ckpt := ""
	within := 0 // the steps a resumed epoch had done
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
			h.FirstStep = h.Steps
			within, _ = strconv.Atoi(meta["epoch_step"])
		}
		if primary {
			var err error
			if sw, err = NewSummaryWriter(filepath.Join(cfg.Dir, "logs")); err != nil {
				return h, err
			}
			defer sw.Close()
		}
	}
	if cfg.Comm != nil {
		if err := BroadcastVariables(cfg.Comm, vars); err != nil {
			return h, fmt.Errorf("nn: fit: %w", err)
		}
	}
	// save records the epochs done and the steps of the next one done.
	save := func(epoch, epochSteps int) error {
		if ckpt == "" || !primary {
			return nil
		}
		return SaveCheckpoint(ckpt, vars, opt, map[string]string{"epoch": strconv.Itoa(epoch), "step": strconv.Itoa(h.Steps),
			"epoch_step": strconv.Itoa(epochSteps)})
	}
	progress := cfg.Progress
	if !primary {
		progress = nil
	}
	bar := newProgress(progress, cfg.StepsPerEpoch, epochs)
	var stepCallbacks []StepCallback
	for _, c := range cfg.Callbacks {
		if sc, ok := c.(StepCallback); ok {
			stepCallbacks = append(stepCallbacks, sc)
		}
	}
	feed := &epochFeed{ctx: ctx, ds: ds, steps: cfg.StepsPerEpoch, pass: h.FirstEpoch}
	defer feed.close()
	for epoch := h.FirstEpoch; epoch < epochs; epoch++ {
		bar.startEpoch(epoch)
		var mean Mean
		examples, steps := 0, 0
		if epoch == h.FirstEpoch {
			steps = within // a resume within the epoch: its first batches are done
		}
		for batch, err := range feed.epoch(epoch, steps) {
			if err != nil {
				return h, err
			}
			loss, n, err := step(batch)
			if err != nil {
				return h, fmt.Errorf("nn: fit: step %d: %w%s", h.Steps, err, unbatchedHint(batch))
			}
			if math.IsNaN(loss) || math.IsInf(loss, 0) {
				return h, fmt.Errorf("nn: fit: the loss became %v at step %d", loss, h.Steps)
			}
			mean.Add(loss, float64(n))
			examples += n
			steps++
			h.Steps++
			h.StepLoss = append(h.StepLoss, loss)
			if sw != nil {
				if err := sw.Scalar("loss", int64(h.Steps), loss); err != nil {
					return h, err
				}
			}
			bar.step(epoch, steps, mean.Value(), examples)
			for _, c := range stepCallbacks {
				st := StepState{Epoch: epoch + 1, Epochs: epochs, Step: h.Steps, EpochStep: steps, StepsPerEpoch: cfg.StepsPerEpoch,
					Loss: loss, EpochLoss: mean.Value(), Examples: examples, Primary: primary}
				if err := c.StepEnd(st); err != nil {
					return h, err
				}
			}
			if cfg.CheckpointEvery > 0 && h.Steps%cfg.CheckpointEvery == 0 {
				if err := save(epoch, steps); err != nil {
					return h, err
				}
			}
		}
		bar.trainDone()
		logs := Logs{"loss": mean.Value()}
		if cfg.Comm != nil {
			all, _, err := globalMeans(cfg.Comm, map[string]float64{"loss": mean.sum}, mean.count)
			if err != nil {
				return h, fmt.Errorf("nn: fit: epoch %d's loss over the ranks: %w", epoch+1, err)
			}
			logs["loss"] = all["loss"]
		}
		if cfg.Validation != nil {
			sums, n, err := evaluateSums(ctx, cfg.Validation, cfg.Evaluate)
			if err == nil && cfg.Comm != nil {
				sums, n, err = globalMeans(cfg.Comm, sums, n)
			} else if err == nil {
				sums = meansOf(sums, n)
			}
			if err != nil {
				return h, fmt.Errorf("nn: fit: validation after epoch %d: %w", epoch+1, err)
			}
			for k, v := range sums {
				logs["val_"+k] = v
			}
		}
		state := &FitState{Epoch: epoch + 1, Epochs: epochs, Step: h.Steps, Logs: logs, Vars: vars, Optimizer: opt, Primary: primary}
		for _, c := range cfg.Callbacks {
			if err := c.EpochEnd(state); err != nil {
				return h, err
			}
		}
		bar.endEpoch(epoch, steps, examples, logs)
		h.EpochLoss = append(h.EpochLoss, logs["loss"])
		h.Epochs = append(h.Epochs, logs)
		h.EpochSteps = append(h.EpochSteps, h.Steps)
		if sw != nil {
			for k, v := range logs {
				if err := sw.Scalar("epoch_"+k, int64(epoch+1), v); err != nil {
					return h, err
				}
			}
		}
		if err := save(epoch+1, 0); err != nil {
			return h, err
		}
		if state.Stop {
			h.Stopped = state.Reason
			if progress != nil {
				fmt.Fprintf(progress, "stopped after epoch %d: %s\n", epoch+1, state.Reason)
			}
			break
		}
	}
	return h, nil // a resumed run that had done every epoch does nothing
}

// epochFeed gives Fit's epochs their batches: epoch e is ds.Epoch(ctx,
// e) (a reshuffling Shuffle draws the epoch's order), or, where steps is
// above 0, the next steps batches of ds's passes read one after another
// from pass on (FitConfig.StepsPerEpoch).
type epochFeed struct {
	ctx   context.Context
	ds    *data.Dataset
	steps int
	pass  int // the next pass to open
	next  func() (data.Element, error, bool)
	stop  func()
}

// epoch returns epoch e's batches after its first done (read and
// dropped: a resume within the epoch).
func (f *epochFeed) epoch(e, done int) iter.Seq2[data.Element, error] {
	if f.steps <= 0 {
		return func(yield func(data.Element, error) bool) {
			i := 0
			for batch, err := range f.ds.Epoch(f.ctx, e) {
				if i++; i <= done && err == nil {
					continue
				}
				if !yield(batch, err) {
					return
				}
			}
		}
	}
	return func(yield func(data.Element, error) bool) {
		for i := range f.steps {
			batch, err, ok := f.pull()
			if !ok {
				return
			}
			if i < done && err == nil {
				continue
			}
			if !yield(batch, err) {
				return
			}
		}
	}
}

// pull returns the stream's next batch, opening the next pass where one
// ended; ok is false where a pass just opened holds nothing (ds is empty).
func (f *epochFeed) pull() (batch data.Element, err error, ok bool) {
	for {
		opened := f.next == nil
		if opened {
			f.next, f.stop = iter.Pull2(f.ds.Epoch(f.ctx, f.pass))
			f.pass++
		}
		if batch, err, ok = f.next(); ok || opened {
			return batch, err, ok
		}
		f.close()
	}
}

// close stops the pass being read, if any.
func (f *epochFeed) close() {
	if f.stop != nil {
		f.stop()
	}
	f.next, f.stop = nil, nil
}

// Evaluate runs eval over every batch of ds and returns each metric's
// mean over the examples.
func Evaluate(ctx context.Context, ds *data.Dataset, eval EvalStep) (map[string]float64, error) {
	if err := nilArg("Evaluate", arg{"the dataset", ds}, arg{"the step", eval}); err != nil {
		return nil, err
	}
	sums, n, err := evaluateSums(ctx, ds, eval)
	if err != nil {
		return nil, err
	}
	return meansOf(sums, n), nil
}

// evaluateSums runs eval over ds and returns each metric's sum over the
// examples (its batch mean times the batch's examples) and the number of
// examples.
func evaluateSums(ctx context.Context, ds *data.Dataset, eval EvalStep) (map[string]float64, float64, error) {
	sums, n := map[string]float64{}, 0.0
	for batch, err := range ds.All(ctx) {
		if err != nil {
			return nil, 0, err
		}
		m, k, err := eval(batch)
		if err != nil {
			if hint := unbatchedHint(batch); hint != "" {
				err = fmt.Errorf("%w%s", err, hint)
			}
			return nil, 0, err
		}
		for name, v := range m {
			sums[name] += v * float64(k)
		}
		n += float64(k)
	}
	return sums, n, nil
}

// meansOf divides sums by n (NaN for no examples, as a mean of nothing).
func meansOf(sums map[string]float64, n float64) map[string]float64 {
	out := make(map[string]float64, len(sums))
	for k, v := range sums {
		out[k] = v / n
	}
	return out
}

// sortedKeys lists m's keys in order, so that every rank sends them alike.
func sortedKeys(m map[string]float64) []string {
	return slices.Sorted(maps.Keys(m))
}

// unbatchedHint says, for a step that failed, when its batch looks like
// one example rather than a batch (a scalar among its tensors, or leading
// dimensions that differ): the dataset most likely lacks a Batch.
func unbatchedHint(batch data.Element) string {
	lead := -1
	for _, t := range batch {
		if t == nil {
			continue
		}
		if t.Rank() == 0 || (lead >= 0 && t.Dim(0) != lead) {
			shapes := make([]string, 0, len(batch))
			for _, u := range batch {
				if u != nil {
					shapes = append(shapes, fmt.Sprint(u.Shape()))
				}
			}
			return fmt.Sprintf(" (the batch's tensors have shapes %s, one example's rather than a batch's: is the dataset batched? data.Dataset.Batch)",
				strings.Join(shapes, ", "))
		}
		lead = t.Dim(0)
	}
	return ""
}
