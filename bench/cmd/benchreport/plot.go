package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// plot draws eagerflow's speed relative to the best peer, one horizontal
// bar per benchmark that has both figures, with a line at 1 (as fast as
// the best peer). The PNG is written atomically.
func (t *table) plot(path string) error {
	var vals plotter.Values
	var names []string
	for _, l := range t.lines {
		if x, who, ok := l.ratio(); ok {
			vals = append(vals, x)
			names = append(names, fmt.Sprintf("%s (vs %s)", l.row.title, who))
		}
	}
	if len(vals) == 0 {
		return fmt.Errorf("no benchmark has both an eagerflow and a peer figure to plot")
	}
	p := plot.New()
	p.Title.Text = "eagerflow's speed over the best peer's (above 1: faster)"
	p.X.Label.Text = "speed ratio"
	bars, err := plotter.NewBarChart(vals, vg.Points(10))
	if err != nil {
		return err
	}
	bars.Horizontal = true
	p.Add(bars, plotter.NewGrid())
	one, err := plotter.NewLine(plotter.XYs{{X: 1, Y: -0.5}, {X: 1, Y: float64(len(vals)) - 0.5}})
	if err != nil {
		return err
	}
	p.Add(one)
	p.NominalY(names...)
	p.X.Min = 0
	p.X.Max = 1.1 * max(1, slices.Max(vals))
	tmp := filepath.Join(filepath.Dir(path), ".benchreport.tmp.png")
	if err := p.Save(9*vg.Inch, vg.Length(len(vals))*0.3*vg.Inch+1.2*vg.Inch, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
