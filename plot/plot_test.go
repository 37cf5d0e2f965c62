package plot

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

func decodePNG(t *testing.T, path string) image.Image {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return img
}

func TestLinesFormats(t *testing.T) {
	dir := t.TempDir()
	s := Series{Name: "loss", X: []float64{1, 2, 3}, Y: []float64{3, 2, 1.5}}
	png := filepath.Join(dir, "c.png")
	if err := Lines(png, Options{Title: "t", XLabel: "step", YLabel: "loss", LogY: true}, s); err != nil {
		t.Fatal(err)
	}
	if b := decodePNG(t, png).Bounds(); b.Dx() != 6*96 || b.Dy() != 4*96 {
		t.Errorf("PNG is %dx%d, want 576x384 (6x4 inches at 96 dpi)", b.Dx(), b.Dy())
	}
	svg := filepath.Join(dir, "c.svg")
	if err := Lines(svg, Options{Width: 3, Height: 2}, s); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(svg); !bytes.Contains(b, []byte("<svg")) {
		t.Errorf("c.svg holds no <svg> element: %.80q", b)
	}
	pdf := filepath.Join(dir, "c.pdf")
	if err := Lines(pdf, Options{}, s); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(pdf); !bytes.HasPrefix(b, []byte("%PDF")) {
		t.Errorf("c.pdf does not start with %%PDF: %.20q", b)
	}
}

func TestLinesErrorsLeaveTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.png")
	if err := os.WriteFile(path, []byte("before"), 0o644); err != nil {
		t.Fatal(err)
	}
	good := []float64{1, 2}
	for _, c := range []struct {
		name   string
		path   string
		opts   Options
		series []Series
		want   string
	}{
		{"lengths", path, Options{}, []Series{{Name: "a", X: good, Y: []float64{1}}}, `series "a" has 2 X and 1 Y`},
		{"nan", path, Options{}, []Series{{Name: "a", X: good, Y: []float64{1, math.NaN()}}}, "point 1 is (2, NaN)"},
		{"log", path, Options{LogY: true}, []Series{{Name: "a", X: good, Y: []float64{1, 0}}}, "log scale needs Y > 0"},
		{"empty", path, Options{}, []Series{{Name: "a"}}, "no series has points"},
		{"format", filepath.Join(dir, "c.gif"), Options{}, []Series{{X: good, Y: good}}, `unknown format ".gif"`},
		{"folder", filepath.Join(dir, "absent", "c.png"), Options{}, []Series{{X: good, Y: good}}, "absent"},
	} {
		err := Lines(c.path, c.opts, c.series...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	if b, _ := os.ReadFile(path); string(b) != "before" {
		t.Errorf("a failed plot changed the file: %.20q", b)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("failed plots left files behind: %v", entries)
	}
}

func TestHistoryPanels(t *testing.T) {
	h := nn.History{
		EpochLoss:  []float64{1, 0.5},
		EpochSteps: []int{3, 6},
		StepLoss:   []float64{1.2, 1, 0.8, 0.6, 0.5, 0.4},
		Steps:      6,
		Epochs: []nn.Logs{
			{"loss": 1, "val_loss": 1.1, "val_accuracy": 0.6, "lr": 0.01},
			{"loss": 0.5, "val_loss": 0.7, "val_accuracy": 0.8, "lr": 0.003},
		},
	}
	if got := metricNames(h.Epochs); strings.Join(got, ",") != "loss,accuracy,lr" {
		t.Errorf("panels %v, want loss, accuracy, lr", got)
	}
	dir := t.TempDir()
	for _, opts := range []Options{{Title: "run", LogY: true}, {ByEpoch: true}} {
		path := filepath.Join(dir, "h.png")
		if err := History(path, h, opts); err != nil {
			t.Fatal(err)
		}
		if b := decodePNG(t, path).Bounds(); b.Dx() != 3*6*96 {
			t.Errorf("%+v: %d pixels wide, want three 6-inch panels (1728)", opts, b.Dx())
		}
	}
	steps := nn.History{StepLoss: []float64{2, 1}, Steps: 2}
	if err := History(filepath.Join(dir, "s.png"), steps, Options{}); err != nil {
		t.Errorf("a history of steps alone: %v", err)
	}
	if err := History(filepath.Join(dir, "e.png"), nn.History{}, Options{}); err == nil || !strings.Contains(err.Error(), "no epoch and no step") {
		t.Errorf("an empty history: %v", err)
	}
}

func TestToImageGrey(t *testing.T) {
	img, err := ToImage(tensor.FromSlice([]float32{0, 1, 2, 3}, 2, 2), ImageOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]uint8{{0, 85}, {170, 255}}
	for y := range 2 {
		for x := range 2 {
			if got := color.GrayModel.Convert(img.At(x, y)).(color.Gray).Y; got != want[y][x] {
				t.Errorf("pixel (%d,%d) = %d, want %d", x, y, got, want[y][x])
			}
		}
	}
	clipped, err := ToImage(tensor.FromSlice([]int32{-5, 0, 5, 50}, 2, 2), ImageOptions{Min: 0, Max: 10, Scale: 3})
	if err != nil {
		t.Fatal(err)
	}
	if b := clipped.Bounds(); b.Dx() != 6 || b.Dy() != 6 {
		t.Errorf("Scale 3 gave %v, want 6x6", b)
	}
	// Infinities are clipped; the range the zero options take is the
	// finite values'.
	inf, err := ToImage(tensor.FromSlice([]float64{math.Inf(-1), 1, 3, math.Inf(1)}, 2, 2), ImageOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []uint8{0, 0, 255, 255} {
		if got := color.GrayModel.Convert(inf.At(i%2, i/2)).(color.Gray).Y; got != want {
			t.Errorf("with infinities, pixel %d = %d, want %d", i, got, want)
		}
	}
	for _, c := range []struct {
		x, y int
		want uint8
	}{{0, 0, 0}, {3, 0, 0}, {0, 3, 128}, {5, 5, 255}} {
		if got := color.GrayModel.Convert(clipped.At(c.x, c.y)).(color.Gray).Y; got != c.want {
			t.Errorf("clipped pixel (%d,%d) = %d, want %d", c.x, c.y, got, c.want)
		}
	}
}

func TestToImageGridAndLayouts(t *testing.T) {
	rng := tensor.NewRNG(3)
	nhwc := tensor.RandUniform(rng, tensor.Float32, 0, 1, 5, 4, 3, 3)
	last, err := ToImage(nhwc, ImageOptions{Cols: 2, Min: 0, Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	if b := last.Bounds(); b.Dx() != 2*3+1 || b.Dy() != 3*4+2 {
		t.Errorf("5 images of 4x3 in 2 columns: %v, want 7x14", b)
	}
	first, err := ToImage(ops.Transpose(nhwc, 0, 3, 1, 2).Contiguous(), ImageOptions{Cols: 2, Min: 0, Max: 1, ChannelsFirst: true})
	if err != nil {
		t.Fatal(err)
	}
	if !imagesEqual(last, first) {
		t.Error("the NCHW image differs from the NHWC one")
	}
	values := tensor.ToSlice[float32](nhwc)
	r, g, b, _ := last.At(3+1+1, 4+1+2).RGBA() // image 3 (row 1, col 1), pixel (1, 2)
	e := ((3*4+2)*3 + 1) * 3
	for i, got := range []uint32{r >> 8, g >> 8, b >> 8} {
		if want := uint32(math.Round(255 * float64(values[e+i]))); got != want {
			t.Errorf("channel %d of image 3 pixel (1,2) = %d, want %d", i, got, want)
		}
	}
}

func imagesEqual(a, b image.Image) bool {
	if a.Bounds() != b.Bounds() {
		return false
	}
	for y := a.Bounds().Min.Y; y < a.Bounds().Max.Y; y++ {
		for x := a.Bounds().Min.X; x < a.Bounds().Max.X; x++ {
			if a.At(x, y) != b.At(x, y) {
				return false
			}
		}
	}
	return true
}

func TestToImageErrors(t *testing.T) {
	for _, c := range []struct {
		x    *tensor.Tensor
		opts ImageOptions
		want string
	}{
		{tensor.Zeros(tensor.Float32, 5), ImageOptions{}, "want [H W], [H W C] or [N H W C]"},
		{tensor.Zeros(tensor.Float32, 2, 2, 2), ImageOptions{}, "2 channels"},
		{tensor.Zeros(tensor.Float32, 2, 4, 4), ImageOptions{ChannelsFirst: true}, "want 1, 3 or 4 ([H W], [C H W] or [N C H W])"},
		{tensor.Zeros(tensor.Bool, 2, 2), ImageOptions{}, "Bool"},
		{tensor.Zeros(tensor.Float32, 0, 2), ImageOptions{}, "no elements"},
		{tensor.FromSlice([]float64{1, math.NaN()}, 1, 2), ImageOptions{}, "element 1 is NaN"},
		{tensor.Zeros(tensor.Float32, 2, 2), ImageOptions{Min: 1, Max: 0}, "Min <= Max"},
		// Issue 31: options that drew every pixel black, and a 13 TB image.
		{tensor.Zeros(tensor.Float32, 2, 2), ImageOptions{Min: math.NaN(), Max: 1}, "want finite Min <= Max"},
		{tensor.Zeros(tensor.Float32, 2, 2), ImageOptions{Max: math.Inf(1)}, "want finite Min <= Max"},
		{tensor.Zeros(tensor.Float32, 2, 2), ImageOptions{Min: math.Inf(-1)}, "want finite Min <= Max"},
		{tensor.Zeros(tensor.Float32, 28, 28), ImageOptions{Scale: 1 << 16}, "more than MaxImagePixels"},
		{tensor.Zeros(tensor.Float32, 28, 28), ImageOptions{Scale: math.MaxInt}, "more than MaxImagePixels"},
	} {
		_, err := ToImage(c.x, c.opts)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v %+v: error %v, want one containing %q", c.x.Shape(), c.opts, err, c.want)
		}
	}
	if err := Image(filepath.Join(t.TempDir(), "x.png"), tensor.Zeros(tensor.Float32, 5), ImageOptions{}); err == nil || !strings.Contains(err.Error(), "x.png") {
		t.Errorf("Image's error does not name the file: %v", err)
	}
}

func TestHeatAndViridis(t *testing.T) {
	for _, c := range []struct {
		t    float64
		want color.NRGBA
	}{{-1, color.NRGBA{68, 1, 84, 255}}, {0, color.NRGBA{68, 1, 84, 255}}, {0.5, color.NRGBA{33, 145, 140, 255}},
		{1, color.NRGBA{253, 231, 37, 255}}, {2, color.NRGBA{253, 231, 37, 255}}, {1.0 / 16, color.NRGBA{70, 23, 104, 255}}} {
		if got := Viridis(c.t); got != c.want {
			t.Errorf("Viridis(%v) = %v, want %v", c.t, got, c.want)
		}
	}
	img, err := ToImage(tensor.FromSlice([]float64{0, 2, 4, 4}, 2, 2), ImageOptions{Heat: true})
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []color.NRGBA{Viridis(0), Viridis(0.5), Viridis(1), Viridis(1)} {
		if got := color.NRGBAModel.Convert(img.At(i%2, i/2)); got != want {
			t.Errorf("heat pixel %d = %v, want %v", i, got, want)
		}
	}
	// Heat leaves colour images as they are.
	rgb := tensor.FromSlice([]float32{1, 0, 0}, 1, 1, 3)
	a, _ := ToImage(rgb, ImageOptions{Heat: true, Min: 0, Max: 1})
	b, _ := ToImage(rgb, ImageOptions{Min: 0, Max: 1})
	if !imagesEqual(a, b) {
		t.Error("Heat changed an RGB image")
	}
}

func TestWriteToAWriter(t *testing.T) {
	var png, svg bytes.Buffer
	if err := WriteLines(&png, "png", Options{}, Series{X: []float64{1, 2}, Y: []float64{3, 4}}); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png.Bytes(), []byte("\x89PNG")) {
		t.Errorf("WriteLines png starts %.8q", png.Bytes())
	}
	h := nn.History{Epochs: []nn.Logs{{"loss": 1}, {"loss": 0.5}}, EpochLoss: []float64{1, 0.5}, EpochSteps: []int{2, 4}, StepLoss: []float64{1.2, 0.9, 0.6, 0.4}}
	if err := WriteHistory(&svg, "SVG", h, Options{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(svg.String(), "<svg") {
		t.Errorf("WriteHistory svg: %.40q", svg.String())
	}
	var none bytes.Buffer
	if err := WriteLines(&none, "gif", Options{}, Series{X: []float64{1}, Y: []float64{1}}); err == nil || !strings.Contains(err.Error(), `plot: unknown format "gif"`) {
		t.Errorf("format gif: %v", err)
	}
	if err := WriteHistory(&none, "png", nn.History{}, Options{}); err == nil || !strings.HasPrefix(err.Error(), "plot: the history has no epoch") {
		t.Errorf("an empty history: %v", err)
	}
}
