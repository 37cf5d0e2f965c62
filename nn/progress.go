package nn

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// Logs are an epoch's measurements by name: "loss" (the mean training
// loss), the validation metrics as "val_<name>", and what callbacks add
// (a schedule's "lr"...).
type Logs map[string]float64

// String lists the entries, loss first, then the others by name, then the
// validation ones by name: "loss 0.4123  accuracy 0.8812  val_loss 0.3901".
func (l Logs) String() string {
	names := make([]string, 0, len(l))
	for k := range l {
		names = append(names, k)
	}
	rank := func(k string) int {
		switch {
		case k == "loss":
			return 0
		case strings.HasPrefix(k, "val_"):
			return 2
		}
		return 1
	}
	slices.SortFunc(names, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(names))
	for i, k := range names {
		parts[i] = fmt.Sprintf("%s %.4g", k, l[k])
	}
	return strings.Join(parts, "  ")
}

// progress reports Fit's advance on a writer: a redrawn bar on a terminal,
// plain lines (at most one per plainEvery within an epoch, and one per
// epoch) on anything else, where carriage returns would pile up.
type progress struct {
	w          io.Writer
	terminal   bool
	total      int // steps per epoch, 0 unknown
	epochs     int
	bar        *progressbar.ProgressBar
	start      time.Time
	trained    time.Duration // the epoch's training time, without validation
	lastLine   time.Time
	plainEvery time.Duration
}

// plainLineEvery spaces the plain progress lines within an epoch.
var plainLineEvery = 10 * time.Second

func newProgress(w io.Writer, stepsPerEpoch, epochs int) *progress {
	if w == nil {
		return nil
	}
	p := &progress{w: w, total: stepsPerEpoch, epochs: epochs, plainEvery: plainLineEvery}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.terminal = true
	}
	return p
}

func (p *progress) startEpoch(epoch int) {
	if p == nil {
		return
	}
	p.start, p.lastLine = time.Now(), time.Now()
	if !p.terminal {
		return
	}
	total := int64(p.total)
	if total == 0 {
		total = -1
	}
	p.bar = progressbar.NewOptions64(total, progressbar.OptionSetWriter(p.w),
		progressbar.OptionSetDescription(fmt.Sprintf("epoch %d/%d", epoch+1, p.epochs)),
		progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true),
		progressbar.OptionThrottle(100*time.Millisecond), progressbar.OptionOnCompletion(func() { fmt.Fprintln(p.w) }))
}

// step reports the epoch's steps so far, mean loss and examples.
func (p *progress) step(epoch, steps int, loss float64, examples int) {
	if p == nil {
		return
	}
	rate := float64(examples) / max(time.Since(p.start).Seconds(), 1e-9)
	if p.terminal {
		p.bar.Describe(fmt.Sprintf("epoch %d/%d  loss %.4f  %.0f examples/s", epoch+1, p.epochs, loss, rate))
		p.bar.Add(1)
		return
	}
	if time.Since(p.lastLine) < p.plainEvery {
		return
	}
	p.lastLine = time.Now()
	of := ""
	if p.total > 0 {
		of = fmt.Sprintf("/%d", p.total)
	}
	fmt.Fprintf(p.w, "epoch %d/%d  step %d%s  loss %.4f  %.0f examples/s\n", epoch+1, p.epochs, steps, of, loss, rate)
}

// trainDone marks the end of the epoch's training steps.
func (p *progress) trainDone() {
	if p != nil {
		p.trained = time.Since(p.start)
	}
}

// endEpoch closes the bar and prints the epoch's line.
func (p *progress) endEpoch(epoch, steps, examples int, logs Logs) {
	if p == nil {
		return
	}
	if p.bar != nil {
		p.bar.Finish()
		p.bar = nil
	}
	secs := p.trained.Seconds()
	fmt.Fprintf(p.w, "epoch %d/%d  %d steps  %.1fs  %.0f examples/s  %v\n",
		epoch+1, p.epochs, steps, secs, float64(examples)/max(secs, 1e-9), logs)
}
