package notebook

import (
	"bytes"
	"fmt"
	"html"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/plot"
)

// LiveOptions shape a Live display. The zero value redraws at most once a
// second, with the step count on the curves' X axis.
type LiveOptions struct {
	Title string
	// Every is the least time between two redraws while steps arrive
	// (0: one second). Epoch ends and Done always redraw.
	Every time.Duration
	// Steps is the number of steps in all, which sizes the bar of a loop
	// of one's own (0: unknown, no bar). Under Fit the bar is sized by
	// FitConfig.StepsPerEpoch times its epochs when this is 0.
	Steps int
	// LogY puts the loss on a log scale; ByEpoch puts epochs on X.
	LogY, ByEpoch bool
}

// Live shows training as it runs: a progress bar, the step, the loss, the
// speed, the last epoch's metrics, and the curves plot.History draws, all
// redrawn in place in one output of the cell. Add it to
// nn.FitConfig.Callbacks (it is an nn.StepCallback), or call Step and
// Epoch from a loop of one's own and Done at its end. Outside a notebook
// it prints a line per epoch and a last line at Done.
type Live struct {
	opts     LiveOptions
	id       string
	hist     nn.History
	start    time.Time
	lastDraw time.Time
	now      func() time.Time

	epoch, epochs, steps int // the epoch running (from 1), of how many; the bar's size
	epochExamples        int
	epochLoss            float64
	done                 bool
}

// NewLive returns a Live that draws nothing until its first step.
func NewLive(opts LiveOptions) *Live {
	if opts.Every <= 0 {
		opts.Every = time.Second
	}
	return &Live{opts: opts, id: front.newID(), now: time.Now, epoch: 1, steps: opts.Steps}
}

// Step records one training step's loss (a loop of one's own).
func (l *Live) Step(loss float64) {
	l.record(loss, 0, 0)
}

// Epoch records the end of an epoch with its measurements ("loss", the
// "val_" metrics...; a Logs without "loss" gets the mean of the epoch's
// steps) and redraws.
func (l *Live) Epoch(logs nn.Logs) {
	logs = maps.Clone(logs) // a callback after this one may add entries
	if logs == nil {
		logs = nn.Logs{}
	}
	first := 0 // the epoch's first step in StepLoss
	if n := len(l.hist.EpochSteps); n > 0 {
		first = l.hist.EpochSteps[n-1] - l.hist.FirstStep
	}
	if _, ok := logs["loss"]; !ok && len(l.hist.StepLoss) > first {
		var mean nn.Mean
		for _, v := range l.hist.StepLoss[first:] {
			mean.Add(v, 1)
		}
		logs["loss"] = mean.Value()
	}
	l.hist.Epochs = append(l.hist.Epochs, logs)
	l.hist.EpochLoss = append(l.hist.EpochLoss, logs["loss"])
	l.hist.EpochSteps = append(l.hist.EpochSteps, l.hist.Steps)
	if !front.notebook() {
		text(fmt.Sprintf("epoch %s: %s", l.epochOf(len(l.hist.Epochs)), logLine(logs)))
	}
	l.epoch = len(l.hist.Epochs) + 1
	l.epochExamples, l.epochLoss = 0, 0
	l.draw()
}

// Done draws the final state: the bar full where the run finished, the
// whole curves. Later steps start a new display.
func (l *Live) Done() {
	l.done = true
	if !front.notebook() {
		text(fmt.Sprintf("done: %d steps in %s", l.hist.Steps, l.elapsed().Round(time.Millisecond)))
		return
	}
	l.draw()
}

// History is what the display has recorded, as nn.Fit's History holds it
// (plot.History draws it).
func (l *Live) History() nn.History {
	h := l.hist
	h.StepLoss = slices.Clone(h.StepLoss)
	h.Epochs = slices.Clone(h.Epochs)
	return h
}

// StepEnd records a step of nn.Fit (rank 0's alone in a data-parallel run).
func (l *Live) StepEnd(s nn.StepState) error {
	if !s.Primary {
		return nil
	}
	l.epoch, l.epochs = s.Epoch, s.Epochs
	if l.opts.Steps == 0 && s.StepsPerEpoch > 0 {
		l.steps = s.StepsPerEpoch * s.Epochs
	}
	if len(l.hist.StepLoss) == 0 {
		l.hist.FirstStep = s.Step - 1 // a resumed run starts after its checkpoint
		l.hist.Steps = s.Step - 1
	}
	l.record(s.Loss, s.Examples, s.EpochLoss)
	return nil
}

// EpochEnd records an epoch of nn.Fit, and ends the display after the last
// epoch or when a callback before it stopped the run.
func (l *Live) EpochEnd(s *nn.FitState) error {
	if !s.Primary {
		return nil
	}
	l.epochs = s.Epochs
	l.Epoch(s.Logs)
	if s.Epoch == s.Epochs || s.Stop {
		l.Done()
	}
	return nil
}

// record adds a step; examples and epochLoss are Fit's running figures
// (0 in a loop of one's own).
func (l *Live) record(loss float64, examples int, epochLoss float64) {
	if l.done { // a new run after Done: a new display
		*l = *NewLive(l.opts)
	}
	if l.start.IsZero() {
		l.start = l.now()
	}
	l.hist.Steps++
	l.hist.StepLoss = append(l.hist.StepLoss, loss)
	l.epochExamples, l.epochLoss = examples, epochLoss
	if l.now().Sub(l.lastDraw) >= l.opts.Every {
		l.draw()
	}
}

func (l *Live) elapsed() time.Duration {
	if l.start.IsZero() {
		return 0
	}
	return l.now().Sub(l.start)
}

// shownEpoch is the epoch the display names: the one running, or, once
// the last has ended (its end moves l.epoch past it), the last.
func (l *Live) shownEpoch() int {
	e := l.epoch
	if l.done || (l.epochs > 0 && e > l.epochs) {
		e = max(len(l.hist.Epochs), 1)
	}
	return e
}

// epochOf is "3/10", or "3" when the number of epochs is unknown.
func (l *Live) epochOf(e int) string {
	if l.epochs > 0 {
		return fmt.Sprintf("%d/%d", e, l.epochs)
	}
	return fmt.Sprint(e)
}

// draw redraws the display in the notebook.
func (l *Live) draw() {
	l.lastDraw = l.now()
	if !front.notebook() {
		return
	}
	front.update(l.id, l.html())
}

// html renders the display: title, bar, figures, last epoch, curves.
func (l *Live) html() string {
	var b strings.Builder
	b.WriteString(style)
	b.WriteString(`<div class="ef-box ef-live"><div class="ef-head">`)
	if l.opts.Title != "" {
		fmt.Fprintf(&b, "<b>%s</b> ", html.EscapeString(l.opts.Title))
	}
	state := "training"
	if l.done {
		state = "done"
	}
	fmt.Fprintf(&b, `<span class="ef-mark">%s</span></div>`, state)
	done := l.hist.Steps - l.hist.FirstStep
	if l.steps > 0 {
		frac := min(float64(done)/float64(l.steps), 1)
		if l.done {
			frac = 1
		}
		fmt.Fprintf(&b, `<div style="width:420px;height:10px;background:#eee;border-radius:5px;margin:4px 0">`+
			`<div style="width:%.1f%%;height:100%%;background:#0072b2;border-radius:5px"></div></div>`, 100*frac)
	}
	el := l.elapsed()
	line := fmt.Sprintf("epoch %s · step %d", l.epochOf(l.shownEpoch()), l.hist.Steps)
	if l.steps > 0 {
		line += fmt.Sprintf("/%d", l.hist.FirstStep+l.steps)
	}
	if n := len(l.hist.StepLoss); n > 0 {
		line += fmt.Sprintf(" · loss %.4g", l.hist.StepLoss[n-1])
	}
	if l.epochExamples > 0 {
		line += fmt.Sprintf(" (epoch mean %.4g)", l.epochLoss)
	}
	if el > 0 && done > 0 {
		line += fmt.Sprintf(" · %s · %.3g steps/s", el.Round(100*time.Millisecond), float64(done)/el.Seconds())
		if l.steps > 0 && !l.done && done < l.steps {
			eta := time.Duration(float64(el) / float64(done) * float64(l.steps-done))
			line += fmt.Sprintf(" · ETA %s", eta.Round(time.Second))
		}
	}
	fmt.Fprintf(&b, "<div>%s</div>", html.EscapeString(line))
	if n := len(l.hist.Epochs); n > 0 {
		fmt.Fprintf(&b, `<div class="ef-sub">epoch %s: %s</div>`, l.epochOf(n), html.EscapeString(logLine(l.hist.Epochs[n-1])))
	}
	if len(l.hist.StepLoss) >= 2 || len(l.hist.Epochs) > 0 {
		var png bytes.Buffer
		opts := plot.Options{Title: l.opts.Title, LogY: l.opts.LogY, ByEpoch: l.opts.ByEpoch, Height: 3.2}
		if err := plot.WriteHistory(&png, "png", l.hist, opts); err != nil {
			b.WriteString(`<div class="ef-error">` + pre(err.Error()) + "</div>")
		} else {
			w, h := pngSize(png.Bytes())
			b.WriteString(`<div>` + pngTag(png.Bytes(), w, h, false) + `</div>`)
		}
	}
	b.WriteString("</div>")
	return b.String()
}

// pngSize reads a PNG's width and height from its IHDR chunk.
func pngSize(b []byte) (int, int) {
	if len(b) < 24 {
		return 0, 0
	}
	be := func(p []byte) int { return int(p[0])<<24 | int(p[1])<<16 | int(p[2])<<8 | int(p[3]) }
	return be(b[16:20]), be(b[20:24])
}

// logLine is logs sorted by name: "loss 0.3124  val_accuracy 0.91".
func logLine(logs nn.Logs) string {
	keys := make([]string, 0, len(logs))
	for k := range logs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %.4g", k, logs[k])
	}
	return strings.Join(parts, "  ")
}
