package plot

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
)

// How a chart looks beyond its data: one sans-serif face for every text,
// ticks at round numbers each with its label, and a band above the data
// for the legend, so that it never covers a curve.

// sans is the one face of every text of a chart.
var sans = font.Font{Typeface: "Liberation", Variant: "Sans"}

// style gives p's texts the sans face at their sizes, and its linear axes
// round ticks.
func style(p *plot.Plot) {
	for _, s := range []*font.Font{&p.Title.TextStyle.Font, &p.X.Label.TextStyle.Font, &p.Y.Label.TextStyle.Font,
		&p.X.Tick.Label.Font, &p.Y.Tick.Label.Font, &p.Legend.TextStyle.Font} {
		*s = font.From(sans, s.Size)
	}
	p.X.Tick.Marker = roundTicks{}
	if _, log := p.Y.Scale.(plot.LogScale); !log {
		p.Y.Tick.Marker = roundTicks{}
	}
}

// legendBand widens p's Y range so that its top part (where the legend is
// drawn, one line per entry) holds no data, and puts the legend there,
// at the right. A log axis widens by a factor, a linear one by a length.
func legendBand(p *plot.Plot, entries int) {
	if entries == 0 {
		return
	}
	p.Legend.Top, p.Legend.Left = true, false
	p.Legend.Padding = vg.Points(1)
	frac := min(0.1+0.07*float64(entries), 0.4) // of the axis' height above the data
	lo, hi := p.Y.Min, p.Y.Max
	if _, log := p.Y.Scale.(plot.LogScale); log && lo > 0 {
		span := math.Log(hi / lo)
		if span == 0 {
			span = math.Log(10)
		}
		p.Y.Max = hi * math.Exp(span*frac/(1-frac))
		return
	}
	span := hi - lo
	if span == 0 {
		span = math.Max(math.Abs(hi), 1)
	}
	p.Y.Max = hi + span*frac/(1-frac)
}

// roundTicks are ticks at round numbers, 1, 2 or 5 times a power of ten
// apart, between 4 and 10 of them, each labelled (gonum's default labels
// some and leaves the others bare: 50, 200, 350 on an axis of 360 steps).
type roundTicks struct{}

func (roundTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return []plot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', 4, 64)}}
	}
	step := roundStep(hi-lo, 8)
	first := math.Ceil(lo/step) * step
	var ticks []plot.Tick
	digits := max(0, -int(math.Floor(math.Log10(step))))
	for v := first; v <= hi+step*1e-9; v += step {
		if math.Abs(v) < step*1e-9 {
			v = 0 // not -1e-17
		}
		ticks = append(ticks, plot.Tick{Value: v, Label: strconv.FormatFloat(v, 'f', digits, 64)})
	}
	return ticks
}

// roundStep is the step 1, 2 or 5 times a power of ten that divides span
// into about want parts.
func roundStep(span float64, want int) float64 {
	raw := span / float64(want)
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*pow >= raw {
			return m * pow
		}
	}
	return 10 * pow
}
