package notebook

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"html"
	"image"
	"image/png"
	"strings"

	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/plot"
	"github.com/eagerflow/eagerflow/tensor"
)

// Image displays x as a picture, as plot.ToImage draws it: [H W] in grey,
// [H W C] with 1, 3 or 4 channels, a batch [N H W C] as a grid ([C H W]
// and [N C H W] under opts.ChannelsFirst). Outside a notebook it prints
// a line naming the tensor and the picture's size. Errors are
// plot.ToImage's, naming x.
func Image(x *tensor.Tensor, opts plot.ImageOptions) error {
	img, err := plot.ToImage(x, opts)
	if err != nil {
		return fmt.Errorf("notebook: image of %s: %w", tensor.Describe(x), err)
	}
	if !front.notebook() {
		text(fmt.Sprintf("image of %s: %dx%d pixels", tensor.Describe(x), img.Bounds().Dx(), img.Bounds().Dy()))
		return nil
	}
	front.display(imageHTML(img))
	return nil
}

// Heatmap displays a matrix [H W], or a batch of them [N H W] as a grid,
// through the viridis colour map with its scale beside: the least value
// (or opts.Min) dark purple, the greatest (or opts.Max) yellow. A small
// matrix is magnified to about 240 pixels across (480 high at most)
// unless opts.Scale is set. Outside a notebook it prints the tensor and its range. Errors:
// another rank, a Bool tensor, no elements, NaN values (named with x).
func Heatmap(x *tensor.Tensor, opts plot.ImageOptions) error {
	if x == nil {
		return errors.New("notebook: heatmap: the tensor is nil")
	}
	h, txt, err := heatmap(x, opts)
	if err != nil {
		return fmt.Errorf("notebook: heatmap of %s: %w", tensor.Describe(x), err)
	}
	if !front.notebook() {
		text(txt)
		return nil
	}
	front.display(h)
	return nil
}

// heatmap renders Heatmap's HTML and text.
func heatmap(x *tensor.Tensor, opts plot.ImageOptions) (string, string, error) {
	if x.Rank() != 2 && x.Rank() != 3 {
		return "", "", fmt.Errorf("shape %v: want [H W] or [N H W]", x.Shape())
	}
	if x.DType() == tensor.Bool {
		return "", "", fmt.Errorf("a Bool tensor has no values to colour; Cast it first")
	}
	if x.NumElements() == 0 {
		return "", "", fmt.Errorf("shape %v has no elements", x.Shape())
	}
	lo, hi := opts.Min, opts.Max
	var nhwc *tensor.Tensor
	if err := tensor.Catch(func() {
		if lo == 0 && hi == 0 { // the tensor's own range, which the scale shows
			lo, hi = ops.Amin(x).Float(), ops.Amax(x).Float()
		}
		nhwc = ops.Index(x, ops.Ellipsis, ops.NewAxis)
		if x.Rank() == 2 {
			nhwc = ops.Index(nhwc, ops.NewAxis)
		}
	}); err != nil {
		return "", "", err
	}
	opts.Min, opts.Max, opts.Heat, opts.ChannelsFirst = lo, hi, true, false
	if opts.Scale == 0 {
		opts.Scale = max(min(240/max(x.Dim(x.Rank()-1), 1), 480/max(x.Dim(x.Rank()-2), 1)), 1)
	}
	img, err := plot.ToImage(nhwc, opts)
	if err != nil {
		return "", "", err
	}
	var stops []string
	for i := 0; i <= 8; i++ {
		c := plot.Viridis(float64(i) / 8)
		stops = append(stops, fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B))
	}
	var b strings.Builder
	b.WriteString(style)
	fmt.Fprintf(&b, `<div class="ef-box"><div class="ef-head"><b>%s</b><span class="ef-mark">heatmap</span></div>`, html.EscapeString(tensor.Describe(x)))
	b.WriteString(`<div style="display:flex;align-items:stretch;gap:8px">`)
	b.WriteString(imageTag(img))
	fmt.Fprintf(&b, `<div style="display:flex;flex-direction:column;justify-content:space-between;font-size:11px"><span>%s</span>`+
		`<div style="flex:1;width:14px;min-height:60px;background:linear-gradient(to top,%s)"></div><span>%s</span></div>`,
		fmtValue(hi), strings.Join(stops, ","), fmtValue(lo))
	b.WriteString("</div></div>")
	txt := fmt.Sprintf("heatmap of %v, values %s to %s", x, fmtValue(lo), fmtValue(hi))
	return b.String(), txt, nil
}

// fmtValue prints a scale's end compactly.
func fmtValue(v float64) string { return fmt.Sprintf("%.4g", v) }

// imageHTML is img alone as an output.
func imageHTML(img image.Image) string {
	return `<div class="ef-box">` + imageTag(img) + "</div>"
}

// imageTag is img as an <img> with the PNG inline.
func imageTag(img image.Image) string {
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		return errorHTML(err)
	}
	return pngTag(buf.Bytes(), img.Bounds().Dx(), img.Bounds().Dy(), true)
}

// pngTag is an <img> of PNG bytes w x h pixels, drawn with sharp pixels
// when pixelated (a magnified matrix stays a grid of squares); class
// ef-plot marks the package's pictures.
func pngTag(b []byte, w, h int, pixelated bool) string {
	st := ""
	if pixelated {
		st = ` style="image-rendering:pixelated"`
	}
	return fmt.Sprintf(`<img class="ef-plot" width="%d" height="%d"%s src="data:image/png;base64,%s">`,
		w, h, st, base64.StdEncoding.EncodeToString(b))
}

// historyHTML is Fit's curves (plot.History) as an output.
func historyHTML(h nn.History) string {
	var buf bytes.Buffer
	if err := plot.WriteHistory(&buf, "png", h, plot.Options{Height: 3.2}); err != nil {
		return errorHTML(err)
	}
	w, hh := pngSize(buf.Bytes())
	return `<div class="ef-box">` + pngTag(buf.Bytes(), w, hh, false) + "</div>"
}
