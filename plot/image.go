package plot

import (
	"bytes"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math"

	"github.com/eagerflow/eagerflow/internal/atomicfile"
	"github.com/eagerflow/eagerflow/internal/checked"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// ImageOptions shape an image of a tensor. The zero value maps the
// tensor's own smallest value to black and its largest to white, one
// pixel per element, channels last.
type ImageOptions struct {
	// Min and Max are the values drawn black and white (values outside
	// are clipped). Both zero: the tensor's own range.
	Min, Max float64
	// Cols is the number of images per row of a batch's grid (0: the
	// smallest that makes the grid at least as wide as it is tall).
	Cols int
	// Scale draws every element as a Scale x Scale square (0: 1).
	Scale int
	// ChannelsFirst reads [C H W] and [N C H W] rather than [H W C] and
	// [N H W C].
	ChannelsFirst bool
	// Heat draws one-channel values through the viridis colour map (dark
	// purple at Min, yellow at Max; see Viridis) rather than in grey: a
	// heatmap, where small differences show. Ignored for 3 and 4 channels.
	Heat bool
}

// viridis is matplotlib's viridis colour map sampled at 0, 1/8, ..., 1
// (8-bit values).
var viridis = [9][3]float64{
	{68, 1, 84}, {71, 45, 123}, {59, 82, 139}, {44, 114, 142}, {33, 145, 140},
	{40, 174, 128}, {94, 201, 98}, {173, 220, 48}, {253, 231, 37},
}

// Viridis is the colour of t in [0, 1] on the viridis colour map (t is
// clamped): perceptually uniform, readable in grey and by colour-blind
// readers. Heat images use it.
func Viridis(t float64) color.NRGBA {
	t = min(max(t, 0), 1) * float64(len(viridis)-1)
	i := min(int(t), len(viridis)-2)
	f := t - float64(i)
	var c [3]uint8
	for k := range c {
		c[k] = uint8(math.Round(viridis[i][k]*(1-f) + viridis[i+1][k]*f))
	}
	return color.NRGBA{c[0], c[1], c[2], 255}
}

// MaxImagePixels bounds the images ToImage and Image draw (2^28 pixels,
// 1 GiB of RGBA): a Scale or a tensor that would make a larger one is an
// error, not an allocation that takes the machine's memory.
const MaxImagePixels = 1 << 28

// Image writes x as a PNG image to path; see ToImage for the shapes.
func Image(path string, x *tensor.Tensor, opts ImageOptions) error {
	img, err := toImage(x, opts)
	if err != nil {
		return fmt.Errorf("plot: %s: %w", path, err)
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return fmt.Errorf("plot: %s: %w", path, err)
	}
	if err := atomicfile.WriteFile(path, buf.Bytes()); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	return nil
}

// ToImage draws x, of any real dtype on any device: [H W] in grey (or
// through a colour map under Heat); [H W C]
// with C 1 (grey), 3 (RGB) or 4 (RGBA); [N H W C] as a grid of N images,
// one pixel of background between them ([C H W] and [N C H W] under
// ChannelsFirst). Infinite values are clipped to Min and Max (the range
// the zero options take is that of the finite values). Errors: a nil
// tensor, another rank or channel count, a Bool tensor, an empty one,
// Min > Max or either not finite, a negative Cols or Scale, NaN values,
// and an image of more than MaxImagePixels.
func ToImage(x *tensor.Tensor, opts ImageOptions) (image.Image, error) {
	img, err := toImage(x, opts)
	if err != nil {
		return nil, fmt.Errorf("plot: %w", err)
	}
	return img, nil
}

// toImage is ToImage with errors that do not name the package.
func toImage(x *tensor.Tensor, opts ImageOptions) (image.Image, error) {
	if x == nil {
		return nil, fmt.Errorf("the tensor is nil")
	}
	if x.DType() == tensor.Bool {
		return nil, fmt.Errorf("a Bool tensor has no brightness; Cast it first")
	}
	if opts.Min > opts.Max || opts.Cols < 0 || opts.Scale < 0 || math.IsInf(opts.Min, 0) || math.IsInf(opts.Max, 0) ||
		math.IsNaN(opts.Min) || math.IsNaN(opts.Max) {
		return nil, fmt.Errorf("options Min %v Max %v Cols %d Scale %d: want finite Min <= Max and Cols, Scale >= 0", opts.Min, opts.Max, opts.Cols, opts.Scale)
	}
	var values []float64
	var nhwc *tensor.Tensor
	err := tensor.Catch(func() {
		nhwc = x
		switch {
		case x.Rank() == 2:
			nhwc = ops.Index(x, ops.NewAxis, ops.Ellipsis, ops.NewAxis)
		case x.Rank() == 3 && opts.ChannelsFirst:
			nhwc = ops.Index(ops.Transpose(x, 1, 2, 0), ops.NewAxis)
		case x.Rank() == 3:
			nhwc = ops.Index(x, ops.NewAxis)
		case x.Rank() == 4 && opts.ChannelsFirst:
			nhwc = ops.Transpose(x, 0, 2, 3, 1)
		}
		if nhwc.Rank() == 4 {
			values = tensor.ToSlice[float64](ops.Cast(nhwc, tensor.Float64))
		}
	})
	if err != nil {
		return nil, err
	}
	layout := "[H W], [H W C] or [N H W C]"
	if opts.ChannelsFirst {
		layout = "[H W], [C H W] or [N C H W]"
	}
	if nhwc.Rank() != 4 {
		return nil, fmt.Errorf("shape %v: want %s", x.Shape(), layout)
	}
	n, h, w, c := nhwc.Dim(0), nhwc.Dim(1), nhwc.Dim(2), nhwc.Dim(3)
	if c != 1 && c != 3 && c != 4 {
		return nil, fmt.Errorf("shape %v has %d channels: want 1, 3 or 4 (%s)", x.Shape(), c, layout)
	}
	if len(values) == 0 {
		return nil, fmt.Errorf("shape %v has no elements", x.Shape())
	}
	lo, hi := opts.Min, opts.Max
	if lo == 0 && hi == 0 {
		lo, hi = math.Inf(1), math.Inf(-1)
		for _, v := range values {
			if !math.IsInf(v, 0) {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
		if lo > hi { // no finite value: the infinities alone, black and white
			lo, hi = 0, 1
		}
	}
	for i, v := range values {
		if math.IsNaN(v) {
			return nil, fmt.Errorf("element %d is NaN", i)
		}
	}
	fraction := func(v float64) float64 {
		if hi <= lo {
			return 0.5
		}
		return (min(max(v, lo), hi) - lo) / (hi - lo)
	}
	level := func(v float64) uint8 { return uint8(math.Round(255 * fraction(v))) }
	cols := opts.Cols
	if cols == 0 {
		cols = int(math.Ceil(math.Sqrt(float64(n) * float64(h) / float64(w))))
	}
	cols = max(min(cols, n), 1)
	rows := (n + cols - 1) / cols
	s := max(opts.Scale, 1)
	gap := 0
	if n > 1 {
		gap = 1
	}
	width, ok1 := checked.Mul(cols*(w+gap)-gap, s)
	height, ok2 := checked.Mul(rows*(h+gap)-gap, s)
	pixels, ok3 := checked.Mul(width, height)
	if !ok1 || !ok2 || !ok3 || pixels > MaxImagePixels {
		return nil, fmt.Errorf("shape %v at Scale %d makes an image of %d x %d tiles of %d x %d pixels each: more than MaxImagePixels (%d)",
			x.Shape(), s, cols, rows, w*s, h*s, MaxImagePixels)
	}
	img := image.NewNRGBA(image.Rect(0, 0, width, height))
	for i := range img.Pix {
		img.Pix[i] = 255 // white background between tiles
	}
	for k := range n {
		ox, oy := (k%cols)*(w+gap), (k/cols)*(h+gap)
		for y := range h {
			for xx := range w {
				e := ((k*h+y)*w + xx) * c
				var px color.NRGBA
				switch c {
				case 1:
					g := level(values[e])
					px = color.NRGBA{g, g, g, 255}
					if opts.Heat {
						px = Viridis(fraction(values[e]))
					}
				case 3:
					px = color.NRGBA{level(values[e]), level(values[e+1]), level(values[e+2]), 255}
				case 4:
					px = color.NRGBA{level(values[e]), level(values[e+1]), level(values[e+2]), level(values[e+3])}
				}
				for dy := range s {
					for dx := range s {
						img.SetNRGBA((ox+xx)*s+dx, (oy+y)*s+dy, px)
					}
				}
			}
		}
	}
	return img, nil
}
