// Package report holds what the examples share: a PNG plot of a loss curve
// (gonum/plot), the choice of an output directory, and the end of a
// training run (plot, where the outputs went, first and last loss).
package report

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// LossPlot writes a PNG line plot of one loss value per epoch to path.
func LossPlot(path, title string, losses []float64) error { return Plot(path, title, "epoch", losses) }

// Plot writes a PNG line plot of losses against 1, 2, ... labelled xlabel.
func Plot(path, title, xlabel string, losses []float64) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = xlabel
	p.Y.Label.Text = "loss"
	pts := make(plotter.XYs, len(losses))
	for i, l := range losses {
		pts[i].X, pts[i].Y = float64(i+1), l
	}
	line, err := plotter.NewLine(pts)
	if err != nil {
		return fmt.Errorf("report: %w", err)
	}
	p.Add(line, plotter.NewGrid())
	if err := p.Save(6*vg.Inch, 4*vg.Inch, path); err != nil {
		return fmt.Errorf("report: %w", err)
	}
	return nil
}

// OutputDir returns dir when it is set, or a fresh temporary directory
// named for the example (removed by the returned cleanup).
func OutputDir(dir, name string) (string, func(), error) {
	if dir != "" {
		return dir, func() {}, os.MkdirAll(dir, 0o755)
	}
	tmp, err := os.MkdirTemp("", name+"-")
	if err != nil {
		return "", nil, err
	}
	return tmp, func() { os.RemoveAll(tmp) }, nil
}

// Finish ends a training example: it plots the epoch losses to dir/loss.png
// (when there are any), tells progress where the outputs are when the user
// chose dir (chosen), and returns the first and last epoch loss.
func Finish(dir string, chosen bool, progress io.Writer, title string, losses []float64) (first, last float64, err error) {
	if len(losses) == 0 {
		return 0, 0, nil
	}
	if err := LossPlot(filepath.Join(dir, "loss.png"), title, losses); err != nil {
		return 0, 0, err
	}
	if chosen && progress != nil {
		fmt.Fprintf(progress, "wrote %s (checkpoint, logs/, loss.png)\n", dir)
	}
	return losses[0], losses[len(losses)-1], nil
}
