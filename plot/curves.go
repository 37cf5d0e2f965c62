// Package plot draws what training produces: curves of losses and metrics
// against steps or epochs, and images of tensors.
//
// Curves are drawn with gonum/plot and written in the format the file's
// extension names (.png, .svg, .pdf, .jpg); images are PNG. Every file is
// written whole or not at all (a temporary beside it, then a rename).
//
//	h, err := nn.Fit(ctx, train, vars, opt, step, cfg)
//	...
//	err = plot.History("curves.png", h, plot.Options{Title: "fashion-mnist"})
//	err = plot.Image("batch.png", images, plot.ImageOptions{Cols: 8, Scale: 4})
package plot

import (
	"bytes"
	"errors"
	"fmt"
	"image/color"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	_ "gonum.org/v1/plot/vg/vgimg" // png, jpg
	_ "gonum.org/v1/plot/vg/vgpdf" // pdf
	_ "gonum.org/v1/plot/vg/vgsvg" // svg

	"github.com/eagerflow/eagerflow/internal/atomicfile"
)

// Series is one line of a chart: Y[i] against X[i], named in the legend.
// X and Y have the same length; an empty series is left out.
type Series struct {
	Name string
	X, Y []float64
	// Points marks each point with a dot (for sparse series such as one
	// value per epoch); otherwise only the line is drawn.
	Points bool

	faint bool // drawn thin and light: History's per-step loss
}

// Options shape a chart. The zero value draws a 6x4-inch chart on linear
// axes with no title.
type Options struct {
	Title          string
	XLabel, YLabel string
	// LogY puts the Y axis on a log scale; every Y must then be > 0.
	LogY bool
	// Width and Height in inches (0: 6 and 4; History multiplies the
	// width by its number of panels).
	Width, Height float64
	// ByEpoch puts epochs rather than steps on History's X axis.
	ByEpoch bool
}

// Lines writes a chart of series to path, its format from the extension
// (.png, .svg, .pdf, .jpg, .jpeg). Errors: no series with points, X and Y
// of different lengths, a non-finite value, Y <= 0 under LogY, an unknown
// extension, or the write's own.
func Lines(path string, opts Options, series ...Series) error {
	return toFile(path, func(w io.Writer, format string) error { return writeLines(w, format, opts, series) })
}

// WriteLines writes the chart Lines draws to w in format: "png", "svg",
// "pdf" or "jpg". Errors are those of Lines.
func WriteLines(w io.Writer, format string, opts Options, series ...Series) error {
	if w == nil {
		return errors.New("plot: WriteLines: the writer is nil")
	}
	if err := writeLines(w, format, opts, series); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
}

func writeLines(w io.Writer, format string, opts Options, series []Series) error {
	p, err := chart(opts, series)
	if err != nil {
		return err
	}
	return render(w, format, opts, 1, []*plot.Plot{p})
}

// chart builds one panel.
func chart(opts Options, series []Series) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = opts.Title
	p.X.Label.Text = opts.XLabel
	p.Y.Label.Text = opts.YLabel
	if opts.LogY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	}
	style(p)
	p.Add(plotter.NewGrid())
	drawn, entries := 0, 0
	for i, s := range series {
		if len(s.X) != len(s.Y) {
			return nil, fmt.Errorf("series %q has %d X and %d Y values", s.Name, len(s.X), len(s.Y))
		}
		if len(s.X) == 0 {
			continue
		}
		pts := make(plotter.XYs, len(s.X))
		for j := range s.X {
			x, y := s.X[j], s.Y[j]
			if math.IsNaN(x) || math.IsInf(x, 0) || math.IsNaN(y) || math.IsInf(y, 0) {
				return nil, fmt.Errorf("series %q point %d is (%v, %v): values must be finite", s.Name, j, x, y)
			}
			if opts.LogY && y <= 0 {
				return nil, fmt.Errorf("series %q point %d has Y %v: a log scale needs Y > 0", s.Name, j, y)
			}
			pts[j] = plotter.XY{X: x, Y: y}
		}
		line, err := plotter.NewLine(pts)
		if err != nil {
			return nil, err
		}
		line.Color = palette[i%len(palette)]
		line.Width = vg.Points(1.5)
		if s.faint {
			line.Color, line.Width = color.RGBA{150, 190, 225, 255}, vg.Points(0.6)
		}
		p.Add(line)
		if s.Points {
			dots, err := plotter.NewScatter(pts)
			if err != nil {
				return nil, err
			}
			dots.Color = line.Color
			dots.Shape = draw.CircleGlyph{}
			dots.Radius = vg.Points(2.5)
			p.Add(dots)
			if s.Name != "" {
				p.Legend.Add(s.Name, line, dots)
				entries++
			}
		} else if s.Name != "" {
			p.Legend.Add(s.Name, line)
			entries++
		}
		drawn++
	}
	if drawn == 0 {
		return nil, fmt.Errorf("no series has points")
	}
	legendBand(p, entries)
	return p, nil
}

// palette: a colour-blind-safe set (Okabe and Ito's).
var palette = []color.Color{
	color.RGBA{0, 114, 178, 255},   // blue
	color.RGBA{213, 94, 0, 255},    // vermillion
	color.RGBA{0, 158, 115, 255},   // bluish green
	color.RGBA{204, 121, 167, 255}, // reddish purple
	color.RGBA{230, 159, 0, 255},   // orange
	color.RGBA{86, 180, 233, 255},  // sky blue
}

// formats are the formats render draws, as file extensions name them.
var formats = []string{"png", "svg", "pdf", "jpg", "jpeg"}

// toFile runs draw into memory with the format path's extension names and
// writes the result to path whole or not at all. Errors name path.
func toFile(path string, draw func(w io.Writer, format string) error) error {
	format := strings.TrimPrefix(strings.ToLower(filepath.Ext(path)), ".")
	if !slices.Contains(formats, format) {
		return fmt.Errorf("plot: %s: unknown format %q (use .png, .svg, .pdf or .jpg)", path, filepath.Ext(path))
	}
	var buf bytes.Buffer
	if err := draw(&buf, format); err != nil {
		return fmt.Errorf("plot: %s: %w", path, err)
	}
	if err := atomicfile.WriteFile(path, buf.Bytes()); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
}

// render draws panels side by side onto one canvas and writes it to w.
func render(w io.Writer, format string, opts Options, cols int, panels []*plot.Plot) error {
	format = strings.ToLower(format)
	if !slices.Contains(formats, format) {
		return fmt.Errorf("unknown format %q (use png, svg, pdf or jpg)", format)
	}
	width, height := opts.Width, opts.Height
	if width <= 0 {
		width = 6 * float64(cols)
	}
	if height <= 0 {
		height = 4
	}
	c, err := draw.NewFormattedCanvas(vg.Length(width)*vg.Inch, vg.Length(height)*vg.Inch, format)
	if err != nil {
		return err
	}
	dc := draw.New(c)
	tiles := draw.Tiles{Rows: 1, Cols: cols, PadX: vg.Millimeter * 4, PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}
	canvases := plot.Align([][]*plot.Plot{panels}, tiles, dc)
	for j, p := range panels {
		p.Draw(canvases[0][j])
	}
	_, err = c.WriteTo(w)
	return err
}
