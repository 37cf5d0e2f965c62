package plot

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"gonum.org/v1/plot"

	"github.com/eagerflow/eagerflow/nn"
)

// History writes the training curves of a Fit run to path: a "loss" panel
// (every step's loss as a line, each epoch's mean training loss and its
// "val_loss" as points at the epoch's last step) and one panel for every
// other metric in the epochs' Logs (its training value and its "val_"
// twin side by side: "accuracy", "lr"...), the panels in a row. The X
// axis counts steps, or epochs when opts.ByEpoch is set (the step line is
// then left out). opts.LogY applies to the loss panel alone; opts.Title
// heads the loss panel; XLabel and YLabel are ignored. Errors: a history
// with no epoch and no step, and those of Lines.
func History(path string, h nn.History, opts Options) error {
	return toFile(path, func(w io.Writer, format string) error { return writeHistory(w, format, h, opts) })
}

// WriteHistory writes the curves History draws to w in format: "png",
// "svg", "pdf" or "jpg". Errors are those of History.
func WriteHistory(w io.Writer, format string, h nn.History, opts Options) error {
	if w == nil {
		return errors.New("plot: WriteHistory: the writer is nil")
	}
	if err := writeHistory(w, format, h, opts); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
}

func writeHistory(w io.Writer, format string, h nn.History, opts Options) error {
	if len(h.Epochs) == 0 && len(h.StepLoss) == 0 {
		return fmt.Errorf("the history has no epoch and no step")
	}
	// Epochs on X when asked, or when the history has no step counts.
	byEpoch := opts.ByEpoch || len(h.EpochSteps) != len(h.Epochs)
	x := make([]float64, len(h.Epochs))
	xlabel := "step"
	for i := range x {
		x[i] = float64(h.FirstEpoch + i + 1)
		if !byEpoch {
			x[i] = float64(h.EpochSteps[i])
		}
	}
	if byEpoch {
		xlabel = "epoch"
	}
	var panels []*plot.Plot
	for _, name := range metricNames(h.Epochs) {
		po := Options{Title: name, XLabel: xlabel, YLabel: name}
		series := []Series{{}} // the step line's place, so colours match across panels
		if name == "loss" {
			po.Title, po.LogY = "loss", opts.LogY
			if opts.Title != "" {
				po.Title = opts.Title + ": loss"
			}
			if xlabel == "step" {
				series[0] = Series{Name: "step", X: stepNumbers(h), Y: h.StepLoss, faint: true}
			}
		}
		for _, key := range []string{name, "val_" + name} {
			xs, ys := epochValues(h.Epochs, x, key)
			label := "train (epoch mean)"
			if key != name {
				label = "validation"
			} else if name == "lr" {
				label = "learning rate"
			}
			series = append(series, Series{Name: label, X: xs, Y: ys, Points: true})
		}
		p, err := chart(po, series)
		if err != nil {
			return fmt.Errorf("%s panel: %w", name, err)
		}
		panels = append(panels, p)
	}
	if len(panels) == 0 { // steps but no finished epoch
		return writeLines(w, format, Options{Title: opts.Title, XLabel: "step", YLabel: "loss", LogY: opts.LogY, Width: opts.Width, Height: opts.Height},
			[]Series{{Name: "step", X: stepNumbers(h), Y: h.StepLoss}})
	}
	return render(w, format, opts, len(panels), panels)
}

// stepNumbers is the step number of each of h.StepLoss.
func stepNumbers(h nn.History) []float64 {
	steps := make([]float64, len(h.StepLoss))
	for i := range steps {
		steps[i] = float64(h.FirstStep + i + 1)
	}
	return steps
}

// metricNames lists the metrics of logs without their "val_" prefix, loss
// first, the others sorted.
func metricNames(logs []nn.Logs) []string {
	var names []string
	for _, l := range logs {
		for k := range l {
			k = strings.TrimPrefix(k, "val_")
			if !slices.Contains(names, k) {
				names = append(names, k)
			}
		}
	}
	slices.SortFunc(names, func(a, b string) int {
		switch {
		case a == b:
			return 0
		case a == "loss":
			return -1
		case b == "loss":
			return 1
		}
		return strings.Compare(a, b)
	})
	return names
}

// epochValues picks logs[i][key] with its x for the epochs that have it.
func epochValues(logs []nn.Logs, x []float64, key string) (xs, ys []float64) {
	for i, l := range logs {
		if v, ok := l[key]; ok {
			xs, ys = append(xs, x[i]), append(ys, v)
		}
	}
	return xs, ys
}
