package notebook

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"image"
	"image/color"
	"image/png"
	"math"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	_ "github.com/eagerflow/eagerflow/backend/cpu"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/plot"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// recorder is a front end that keeps what it is sent.
type recorder struct {
	outputs []string          // display's, in order
	blocks  map[string]string // update's, by id
	updates int
	ids     int
}

func (r *recorder) notebook() bool      { return true }
func (r *recorder) display(html string) { r.outputs = append(r.outputs, html) }
func (r *recorder) update(id, html string) {
	if r.blocks == nil {
		r.blocks = map[string]string{}
	}
	r.blocks[id] = html
	r.updates++
}
func (r *recorder) newID() string { r.ids++; return "id" + string(rune('0'+r.ids)) }

// inNotebook makes the package display to a recorder for the test.
func inNotebook(t *testing.T) *recorder {
	r := &recorder{}
	old := front
	front = r
	t.Cleanup(func() { front = old })
	return r
}

// inText makes the package write its text to a buffer for the test.
func inText(t *testing.T) *bytes.Buffer {
	var b bytes.Buffer
	old, oldFront := Output, front
	Output, front = &b, textOnly{}
	t.Cleanup(func() { Output, front = old, oldFront })
	return &b
}

type textOnly struct{ gonb }

func (textOnly) notebook() bool { return false }

var cellRE = regexp.MustCompile(`<td[^>]*>([^<]*)</td>`)

// cells lists the table cells of h in order.
func cells(h string) []string {
	var out []string
	for _, m := range cellRE.FindAllStringSubmatch(h, -1) {
		out = append(out, m[1])
	}
	return out
}

func TestTensorTables(t *testing.T) {
	m := TensorHTML(tensor.FromSlice([]float32{1, 2.5, 3, 4, 5, 6}, 2, 3))
	for _, want := range []string{"<b>float32[2 3]</b>", "<th>2</th>", "<th>1</th>"} {
		if !strings.Contains(m, want) {
			t.Errorf("matrix table lacks %q", want)
		}
	}
	if got := strings.Join(cells(m), " "); got != "1. 2.5 3. 4. 5. 6." {
		t.Errorf("matrix cells %q", got)
	}
	// Rank 3: a table per leading index.
	cube := TensorHTML(ops.Reshape(tensor.Arange(int32(0), 8, 1), 2, 2, 2))
	if strings.Count(cube, "<table") != 2 || !strings.Contains(cube, "[1, :, :]") || strings.Join(cells(cube), ",") != "0,1,2,3,4,5,6,7" {
		t.Errorf("rank-3 table %q", cells(cube))
	}
	// Scalars and vectors.
	if c := cells(TensorHTML(tensor.Scalar(int64(7)))); len(c) != 1 || c[0] != "7" {
		t.Errorf("scalar cells %q", c)
	}
	if c := cells(TensorHTML(tensor.FromSlice([]bool{true, false}, 2))); strings.Join(c, " ") != "True False" {
		t.Errorf("vector cells %q", c)
	}
	// NaN and infinities are marked.
	special := TensorHTML(tensor.FromSlice([]float64{math.NaN(), math.Inf(1), math.Inf(-1), 1}, 4))
	for _, want := range []string{`<td class="ef-nan">nan</td>`, `<td class="ef-inf">inf</td>`, `<td class="ef-inf">-inf</td>`} {
		if !strings.Contains(special, want) {
			t.Errorf("special values lack %q", want)
		}
	}
}

func TestTensorTablesElideAsTheTextPrinter(t *testing.T) {
	big := tensor.Arange(float32(0), 2000, 1) // 2000 > 1000: 3 at each end
	m := TensorHTML(ops.Reshape(big, 40, 50))
	c := cells(m)
	// 7 rows shown (3, the gap, 3) of 7 cells each.
	if len(c) != 49 {
		t.Fatalf("%d cells, want 49", len(c))
	}
	// NumPy's notation for the values shown: 1999/1 > 1000 takes
	// scientific notation.
	if c[0] != "0.000e+00" || c[2] != "2.000e+00" || c[3] != "…" || c[4] != "4.700e+01" || c[7*3] != "⋮" || c[48] != "1.999e+03" {
		t.Errorf("elided cells %q", c)
	}
	if !strings.Contains(m, "<th>49</th>") || !strings.Contains(m, "<th>39</th>") || strings.Contains(m, "<th>20</th>") {
		t.Error("elided indices wrong")
	}
	// The same positions as the text printer.
	txt := ops.Reshape(big, 40, 50).String()
	if !strings.Contains(txt, "[[0.000e+00 1.000e+00 2.000e+00 ... 4.700e+01 4.800e+01 4.900e+01]") {
		t.Errorf("text printer changed: %q", txt[:80])
	}
	// Leading dims elide too: 4 blocks of the 8 (3, the mark, 3... of 2x? no: 10 of [10 10 20]).
	cube := TensorHTML(ops.Reshape(tensor.Arange(float32(0), 2000, 1), 10, 10, 20))
	if n := strings.Count(cube, "<table"); n != 6 || strings.Count(cube, `<div class="ef-sub">⋮</div>`) != 1 {
		t.Errorf("%d blocks of [10 10 20], want 6 and one elision", n)
	}
}

func TestTensorMarks(t *testing.T) {
	w := tape.NewVariable("w", tensor.FromSlice([]float32{1, 2}, 2))
	r := inNotebook(t)
	Show(w)
	if len(r.outputs) != 1 || !strings.Contains(r.outputs[0], `variable &#34;w&#34;`) {
		t.Errorf("variable output %q", r.outputs)
	}
	tp := tape.New()
	y := ops.Mul(w.Value(), tensor.Scalar(2))
	if !strings.Contains(TensorHTML(y), ">on a tape<") {
		t.Error("a recorded value is not marked")
	}
	tp.Gradient(ops.Sum(y), w.Value())
	if !strings.Contains(TensorHTML(tensor.Scalar(1.5)), ">weak scalar<") {
		t.Error("a weak scalar is not marked")
	}
	plain := TensorHTML(tensor.FromSlice([]float32{1}, 1))
	if strings.Contains(plain, `class="ef-mark"`) {
		t.Error("a plain tensor has marks")
	}
	x := tensor.FromSlice([]float32{1, 2}, 2)
	x.Release()
	rel := TensorHTML(x)
	if !strings.Contains(rel, ">released<") || strings.Contains(rel, "<table") {
		t.Errorf("released tensor %q", rel)
	}
	if !strings.Contains(TensorHTML(nil), "nil tensor") {
		t.Error("nil tensor")
	}
}

func TestShowOutsideANotebookPrintsText(t *testing.T) {
	out := inText(t)
	x := tensor.FromSlice([]float32{1, 2}, 2)
	Show(x, errors.New("boom"), 3)
	if got := out.String(); got != x.String()+"\nboom\n3\n" {
		t.Errorf("text %q", got)
	}
	out.Reset()
	if err := Image(tensor.Zeros(tensor.Float32, 4, 5), plot.ImageOptions{}); err != nil || out.String() != "image of float32[4 5]: 5x4 pixels\n" {
		t.Errorf("image text %q, %v", out, err)
	}
	out.Reset()
	if err := Heatmap(tensor.FromSlice([]float32{1, 3}, 1, 2), plot.ImageOptions{}); err != nil || !strings.Contains(out.String(), "values 1 to 3") {
		t.Errorf("heatmap text %q, %v", out, err)
	}
}

func TestShowDispatches(t *testing.T) {
	r := inNotebook(t)
	Show(errors.New("bad <thing>"), struct{ A int }{4})
	if len(r.outputs) != 2 || !strings.Contains(r.outputs[0], "bad &lt;thing&gt;") || !strings.Contains(r.outputs[0], "ef-error") || !strings.Contains(r.outputs[1], "{4}") {
		t.Errorf("outputs %q", r.outputs)
	}
}

// decodeImg decodes the first inline PNG of h.
func decodeImg(t *testing.T, h string) (w, hh int) {
	t.Helper()
	i := strings.Index(h, "base64,")
	if i < 0 {
		t.Fatalf("no inline PNG in %.200q", h)
	}
	data := h[i+7:]
	data = data[:strings.IndexByte(data, '"')]
	b, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return img.Bounds().Dx(), img.Bounds().Dy()
}

func TestImagesAndHeatmaps(t *testing.T) {
	r := inNotebook(t)
	batch := tensor.RandUniform(tensor.NewRNG(1), tensor.Float32, 0, 1, 4, 6, 5, 1)
	if err := Image(batch, plot.ImageOptions{Cols: 2, Scale: 2}); err != nil {
		t.Fatal(err)
	}
	if w, h := decodeImg(t, r.outputs[0]); w != 2*(2*5+1) || h != 2*(2*6+1) {
		t.Errorf("grid %dx%d", w, h)
	}
	if err := Heatmap(tensor.FromSlice([]float32{0, 1, 2, 3, 4, 5}, 2, 3), plot.ImageOptions{}); err != nil {
		t.Fatal(err)
	}
	hm := r.outputs[1]
	if w, h := decodeImg(t, hm); w != 240 || h != 160 {
		t.Errorf("heatmap %dx%d, want 240x160 (scale 80)", w, h)
	}
	if !strings.Contains(hm, "<span>5</span>") || !strings.Contains(hm, "<span>0</span>") || !strings.Contains(hm, "#440154") || !strings.Contains(hm, "#fde725") {
		t.Error("heatmap scale missing")
	}
	// A batch of matrices as a grid; errors name the tensor and add nothing.
	if err := Heatmap(tensor.Zeros(tensor.Float32, 3, 2, 2), plot.ImageOptions{Scale: 1}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []*tensor.Tensor{tensor.Zeros(tensor.Float32, 5), tensor.FromSlice([]bool{true}, 1, 1), tensor.FromSlice([]float32{float32(math.NaN())}, 1, 1)} {
		if err := Heatmap(bad, plot.ImageOptions{}); err == nil || !strings.Contains(err.Error(), "notebook: heatmap of "+tensor.Describe(bad)) {
			t.Errorf("Heatmap(%v): %v", bad, err)
		}
	}
	if err := Image(tensor.Zeros(tensor.Float32, 2, 2, 2), plot.ImageOptions{}); err == nil || !strings.Contains(err.Error(), "2 channels") {
		t.Errorf("Image of 2 channels: %v", err)
	}
	if len(r.outputs) != 3 {
		t.Errorf("%d outputs, want 3 (failures add none)", len(r.outputs))
	}
}

func loopGraph(t *testing.T) *trace.Function {
	f := trace.NewFunction(func(args []*tensor.Tensor) []*tensor.Tensor {
		x := args[0]
		for range 2 {
			x = ops.Tanh(ops.Mul(x, x))
		}
		return []*tensor.Tensor{ops.Sum(x)}
	})
	if _, err := f.Call(tensor.FromSlice([]float32{1, 2}, 2)); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestGraphs(t *testing.T) {
	f := loopGraph(t)
	g := f.Graph(tensor.FromSlice([]float32{1, 2}, 2))
	r := inNotebook(t)
	Graph(g)
	out := r.outputs[0]
	if _, err := exec.LookPath("dot"); err != nil {
		if !strings.Contains(out, "digraph") || !strings.Contains(out, "apt-get install graphviz") {
			t.Errorf("without dot: %.300q", out)
		}
		t.Skip("dot is not installed (apt-get install graphviz): the SVG is not checked")
	}
	if !strings.Contains(out, "<svg") || strings.Contains(out, "<?xml") || !strings.Contains(out, "Tanh") {
		t.Errorf("graph output %.300q", out)
	}
	txt := inText(t)
	Graph(g)
	if txt.String() != g.String()+"\n" {
		t.Errorf("graph text %q", txt)
	}
}

func TestModel(t *testing.T) {
	m := nn.NewSequential(nn.NewDense("d1", tensor.NewRNG(1), 4, 8, nn.DenseOpts{Activation: ops.Relu}),
		nn.NewSequential(nn.NewDense("d2", tensor.NewRNG(2), 8, 3, nn.DenseOpts{})))
	r := inNotebook(t)
	if err := Model(m, tensor.Zeros(tensor.Float32, 5, 4)); err != nil {
		t.Fatal(err)
	}
	out := r.outputs[0]
	for _, want := range []string{"Dense d1: 4 -&gt; 8, relu", "[5 8]", "<td>40</td>", "padding-left:22px", "<th>67</th>", "input float32[5 4]"} {
		if !strings.Contains(out, want) {
			t.Errorf("model table lacks %q", want)
		}
	}
	if err := Model(m, tensor.Zeros(tensor.Float32, 5, 3)); err == nil || !strings.Contains(err.Error(), "d1") || len(r.outputs) != 1 {
		t.Errorf("a wrong input: %v, %d outputs", err, len(r.outputs))
	}
	txt := inText(t)
	if err := Model(m, tensor.Zeros(tensor.Float32, 5, 4)); err != nil || !strings.Contains(txt.String(), "67 trainable parameters") {
		t.Errorf("model text %q, %v", txt, err)
	}
	if thousands(1234567) != "1,234,567" || thousands(-1000) != "-1,000" || thousands(12) != "12" {
		t.Error("thousands")
	}
}

// clock is a settable time.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestLiveOwnLoop(t *testing.T) {
	r := inNotebook(t)
	c := &clock{t: time.Unix(1000, 0)}
	l := NewLive(LiveOptions{Title: "toy", Steps: 10})
	l.now = c.now
	for i := range 10 {
		c.t = c.t.Add(300 * time.Millisecond)
		l.Step(1 / float64(i+1))
		if i == 4 {
			l.Epoch(nn.Logs{"val_loss": 0.5})
		}
	}
	l.Epoch(nil)
	l.Done()
	if len(r.blocks) != 1 || len(r.outputs) != 0 {
		t.Fatalf("%d blocks and %d outputs, want one block updated in place", len(r.blocks), len(r.outputs))
	}
	// A draw on the first step, then at most one a second: steps at 0.3 s
	// apart draw every fourth step (the clock starts before the first), plus the
	// two epochs and Done.
	if r.updates < 5 || r.updates > 7 {
		t.Errorf("%d updates", r.updates)
	}
	final := r.blocks["id1"]
	for _, want := range []string{"<b>toy</b>", ">done<", "width:100.0%", "step 10/10", "loss 0.1 ", "epoch 2: loss 0.1", "base64,"} {
		if !strings.Contains(final, want) {
			t.Errorf("final display lacks %q:\n%.600s", want, final)
		}
	}
	h := l.History()
	if len(h.Epochs) != 2 || h.EpochSteps[1] != 10 || math.Abs(h.Epochs[0]["loss"]-(1+1.0/2+1.0/3+1.0/4+1.0/5)/5) > 1e-12 || h.Epochs[0]["val_loss"] != 0.5 {
		t.Errorf("history %+v", h)
	}
	if w, _ := decodeImg(t, final); w < 500 {
		t.Errorf("curves %d pixels wide", w)
	}
}

func TestLiveUnderFit(t *testing.T) {
	x := tensor.RandNormal(tensor.NewRNG(4), tensor.Float32, 32, 3)
	y := ops.Cast(ops.Gt(ops.Sum(x, 1), tensor.Scalar(0)), tensor.Int32)
	ds, err := data.FromSlices(x, y)
	if err != nil {
		t.Fatal(err)
	}
	m := nn.NewSequential(nn.NewDense("d", tensor.NewRNG(1), 3, 2, nn.DenseOpts{}))
	opt := nn.NewAdam(nn.Constant(0.05))
	step := func(b data.Element) (float64, int, error) {
		tp := tape.New()
		loss := nn.SparseSoftmaxCrossEntropy(m.Forward(b[0]), b[1])
		vars := m.Variables()
		return loss.Float(), b[0].Dim(0), opt.Apply(vars, tp.Gradient(loss, nn.Values(vars)...))
	}
	r := inNotebook(t)
	live := NewLive(LiveOptions{Title: "fit"})
	h, err := nn.Fit(context.Background(), ds.Batch(8, false), nn.AllVariables(m), opt, step,
		nn.FitConfig{Epochs: 3, StepsPerEpoch: 4, Callbacks: []nn.Callback{live}})
	if err != nil {
		t.Fatal(err)
	}
	got := live.History()
	if !slices.Equal(got.StepLoss, h.StepLoss) || !slices.Equal(got.EpochSteps, h.EpochSteps) || !slices.Equal(got.EpochLoss, h.EpochLoss) {
		t.Errorf("live history %+v, Fit's %+v", got, h)
	}
	final := r.blocks["id1"]
	for _, want := range []string{">done<", "width:100.0%", "epoch 3/3 · step 12/12", "epoch 3/3: loss", "base64,"} {
		if !strings.Contains(final, want) {
			t.Errorf("final display lacks %q:\n%.600s", want, final)
		}
	}
	if strings.Contains(final, "epoch 4/3") { // issue 31: "epoch 16/15" after 15
		t.Errorf("the display counts an epoch past the last:\n%.600s", final)
	}
	// Outside a notebook: a line per epoch and one at the end.
	out := inText(t)
	live = NewLive(LiveOptions{})
	if _, err := nn.Fit(context.Background(), ds.Batch(8, false), nn.AllVariables(m), opt, step,
		nn.FitConfig{Epochs: 2, Callbacks: []nn.Callback{live}}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "epoch 1/2: loss ") || !strings.HasPrefix(lines[2], "done: 8 steps in ") {
		t.Errorf("text %q", lines)
	}
}

// The tour's browser check must fail on a blank picture.
func TestNotBlankCatchesBlankPictures(t *testing.T) {
	white := image.NewRGBA(image.Rect(0, 0, 100, 80))
	for i := range white.Pix {
		white.Pix[i] = 255
	}
	if notBlank(white) == nil {
		t.Error("a white picture passed")
	}
	white.Set(3, 4, color.Black) // a speck is not a drawing
	if notBlank(white) == nil {
		t.Error("a white picture with a speck passed")
	}
	if notBlank(image.NewRGBA(image.Rect(0, 0, 20, 20))) == nil {
		t.Error("a 20x20 picture passed")
	}
	img, err := plot.ToImage(tensor.RandUniform(tensor.NewRNG(1), tensor.Float32, 0, 1, 60, 60), plot.ImageOptions{Heat: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := notBlank(img); err != nil {
		t.Errorf("a heatmap: %v", err)
	}
}
