package notebook

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-rod/rod"
	"github.com/go-rod/rod/lib/launcher"
	"github.com/go-rod/rod/lib/proto"
)

// The tour notebook, executed headless with the GoNB kernel as a user
// would run it, then rendered by a real browser.

const tourPath = "../examples/notebooks/tour.ipynb"

// requireTools finds jupyter, the GoNB kernel and Chromium, or skips
// (fails when EAGERFLOW_REQUIRE_NOTEBOOK is set: scripts/test sets it once
// scripts/install-notebook has run).
func requireTools(t *testing.T) (env []string, chromium string) {
	t.Helper()
	missing := func(what string) {
		msg := what + " is missing: scripts/install-notebook installs Jupyter, GoNB and Graphviz (and scripts/install-test-deps Chromium)"
		if os.Getenv("EAGERFLOW_REQUIRE_NOTEBOOK") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	// GoNB runs goimports and gopls from the PATH; they are installed in
	// Go's bin folder.
	gobin, err := exec.Command("go", "env", "GOPATH").Output()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(strings.TrimSpace(string(gobin)), "bin") + string(os.PathListSeparator) + os.Getenv("PATH")
	env = append(os.Environ(), "PATH="+path)
	if _, err := exec.LookPath("jupyter"); err != nil {
		missing("jupyter")
	}
	specs, err := exec.Command("jupyter", "kernelspec", "list", "--json").Output()
	if err != nil || !bytes.Contains(specs, []byte(`"gonb"`)) {
		missing("the GoNB kernel")
	}
	for _, c := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(c); err == nil {
			return env, p
		}
	}
	missing("chromium")
	return nil, ""
}

// nbOutput is one output of an executed cell.
type nbOutput struct {
	OutputType string          `json:"output_type"`
	Name       string          `json:"name"`
	Text       json.RawMessage `json:"text"`
	Data       map[string]json.RawMessage
}

// joined is a notebook string field: a string or a list of lines.
func joined(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var lines []string
	json.Unmarshal(raw, &lines)
	return strings.Join(lines, "")
}

func TestTour(t *testing.T) {
	if testing.Short() {
		t.Skip("the tour takes about a minute")
	}
	env, chromium := requireTools(t)
	// The executed notebook, its HTML and the screenshots stay behind
	// when the test fails (or EAGERFLOW_KEEP_TOUR is set), for a look.
	dir, err := os.MkdirTemp("", "eagerflow-tour-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the executed tour, its HTML and the screenshots are in %s", dir)
			return
		}
		if os.Getenv("EAGERFLOW_KEEP_TOUR") == "" {
			os.RemoveAll(dir)
		}
	})
	executed := filepath.Join(dir, "tour.ipynb")
	run := func(args ...string) {
		t.Helper()
		cmd := exec.Command("jupyter", args...)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("jupyter %s: %v\n%s", strings.Join(args, " "), err, tail(out, 6000))
		}
	}
	// The kernel starts in the notebook's folder, which the setup cell
	// finds the checkout from.
	run("nbconvert", "--to", "notebook", "--execute", "--ExecutePreprocessor.timeout=600",
		"--output-dir", dir, "--output", "tour.ipynb", tourPath)
	cells := readCells(t, executed)
	checkCells(t, cells)
	run("nbconvert", "--to", "html", "--output-dir", dir, "--output", "tour.html", executed)
	checkRendered(t, chromium, filepath.Join(dir, "tour.html"), dir)
}

// tail is the end of a long output.
func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// readCells returns the executed code cells' outputs by their tag.
func readCells(t *testing.T, path string) map[string][]nbOutput {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var nb struct {
		Cells []struct {
			CellType string `json:"cell_type"`
			Metadata struct {
				Tags []string
			}
			Outputs []nbOutput
		}
	}
	if err := json.Unmarshal(b, &nb); err != nil {
		t.Fatal(err)
	}
	cells := map[string][]nbOutput{}
	for i, c := range nb.Cells {
		if c.CellType != "code" {
			continue
		}
		if len(c.Metadata.Tags) != 1 {
			t.Fatalf("code cell %d has tags %v: each needs one, for this test", i, c.Metadata.Tags)
		}
		cells[c.Metadata.Tags[0]] = c.Outputs
	}
	return cells
}

// checkCells checks what each cell of the tour shows.
func checkCells(t *testing.T, cells map[string][]nbOutput) {
	html := func(tag string) []string {
		var out []string
		for _, o := range cells[tag] {
			if h, ok := o.Data["text/html"]; ok {
				out = append(out, joined(h))
			}
		}
		return out
	}
	stdout := func(tag string) string {
		var b strings.Builder
		for _, o := range cells[tag] {
			if o.OutputType == "stream" && o.Name == "stdout" {
				b.WriteString(joined(o.Text))
			}
		}
		return b.String()
	}
	for tag, outs := range cells {
		for _, o := range outs {
			if o.OutputType == "error" || (o.OutputType == "stream" && o.Name == "stderr") {
				t.Errorf("cell %q: %s output %s", tag, o.OutputType, joined(o.Text))
			}
		}
	}
	// contains checks that the cell's i-th HTML output holds every want.
	contains := func(tag string, i int, wants ...string) {
		t.Helper()
		outs := html(tag)
		if i >= len(outs) {
			t.Errorf("cell %q has %d HTML outputs, want more than %d", tag, len(outs), i)
			return
		}
		for _, w := range wants {
			if !strings.Contains(outs[i], w) {
				t.Errorf("cell %q output %d lacks %q:\n%.400s", tag, i, w, outs[i])
			}
		}
	}
	contains("tensors", 0, `class="ef-table"`, "<b>float32[2 3]</b>", "<td>6.</td>")
	contains("tensors", 1, "<td>36.</td>")
	contains("tensors", 2, `class="ef-nan"`, `class="ef-inf"`)
	contains("tensors", 3, "float32[3 20 50]", "[2, :, :]", "…", "<td>2.999e+03</td>")
	contains("autodiff", 0, `variable &#34;w&#34;`)
	contains("autodiff", 1, ">on a tape<", "<td>5.25</td>")
	contains("autodiff", 2, "<td>-2.</td>")
	if got := stdout("while"); got != "halve(10) = 0.625, dy/dx = 0.0625\n" {
		t.Errorf("while cell printed %q", got)
	}
	contains("trace", 0, ">traced<", "<td>0.625</td>")
	contains("trace", 1, "<svg", "NextIteration", "cluster")
	contains("tfrecord", 0, "<b>int64[3]</b>", "<td>0</td><td>1</td><td>0</td>")
	contains("tfrecord", 1, "<b>float32[3 2]</b>", "<td>4.</td>")
	contains("images", 0, ">heatmap<", "data:image/png;base64,")
	contains("images", 1, "data:image/png;base64,")
	contains("train", 0, `class="ef-box ef-model"`, "Dense hidden: 2 -&gt; 32, tanh", "<th>162</th>")
	contains("train", 1, `class="ef-box ef-live"`, ">done<", "step 360/360", "epoch 15/15: loss ", "val_accuracy ", "data:image/png;base64,")
	m := regexp.MustCompile(`validation accuracy after 15 epochs: ([0-9.]+)`).FindStringSubmatch(stdout("train"))
	if m == nil {
		t.Errorf("train cell printed %q", stdout("train"))
	} else if acc, _ := strconv.ParseFloat(m[1], 64); acc < 0.85 {
		t.Errorf("validation accuracy %v: the network did not learn the quadrants", acc)
	}
	for _, o := range html("images") {
		checkInlinePNG(t, o)
	}
}

// checkInlinePNG decodes the first inline PNG of an output.
func checkInlinePNG(t *testing.T, h string) {
	t.Helper()
	i := strings.Index(h, "base64,")
	if i < 0 {
		return
	}
	data := h[i+len("base64,"):]
	data = data[:strings.IndexByte(data, '"')]
	if _, err := png.Decode(base64Reader(data)); err != nil {
		t.Errorf("an inline PNG does not decode: %v", err)
	}
}

// checkRendered opens the HTML export in headless Chromium and checks
// that the pictures are drawn where the page puts them: the heatmap, the
// graph, the live curves.
func checkRendered(t *testing.T, chromium, page, dir string) {
	l := launcher.New().Bin(chromium).Headless(true).NoSandbox(true).Leakless(false).
		UserDataDir(filepath.Join(dir, "chromium")).
		Set("disable-gpu").Set("disable-quic").Set("no-first-run").Set("disable-background-networking").
		Set("disable-component-update").Set("disable-sync")
	defer l.Cleanup()
	u, err := l.Launch()
	if err != nil {
		t.Fatalf("starting %s: %v", chromium, err)
	}
	b := rod.New().ControlURL(u)
	if err := b.Connect(); err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	p, err := b.Page(proto.TargetCreateTarget{URL: "file://" + page})
	if err != nil {
		t.Fatal(err)
	}
	p = p.Timeout(time.Minute)
	if err := p.SetViewport(&proto.EmulationSetDeviceMetricsOverride{Width: 1200, Height: 900, DeviceScaleFactor: 1}); err != nil {
		t.Fatal(err)
	}
	if err := p.WaitLoad(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, selector string }{
		{"heatmap", ".ef-box img.ef-plot"},
		{"graph", ".ef-graph svg"},
		{"live curves", ".ef-live img.ef-plot"},
	} {
		el, err := p.Element(c.selector)
		if err != nil {
			t.Errorf("%s: no element %q in the page: %v", c.name, c.selector, err)
			continue
		}
		if err := el.ScrollIntoView(); err != nil {
			t.Fatal(err)
		}
		shot, err := el.Screenshot(proto.PageCaptureScreenshotFormatPng, 0)
		if err != nil {
			t.Fatalf("%s: screenshot: %v", c.name, err)
		}
		name := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".png")
		os.WriteFile(name, shot, 0o644)
		img, err := png.Decode(bytes.NewReader(shot))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if err := notBlank(img); err != nil {
			t.Errorf("%s as Chromium draws it (%s): %v", c.name, name, err)
		}
	}
}

// notBlank says why img looks blank: too small, nearly all one colour, or
// too few colours to be a drawing.
func notBlank(img image.Image) error {
	r := img.Bounds()
	if r.Dx() < 50 || r.Dy() < 50 {
		return fmt.Errorf("%dx%d pixels", r.Dx(), r.Dy())
	}
	counts := map[color.RGBA]int{}
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			c := color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)
			counts[c]++
		}
	}
	most := 0
	for _, n := range counts {
		most = max(most, n)
	}
	total := r.Dx() * r.Dy()
	if len(counts) < 3 || most > total*99/100 {
		return fmt.Errorf("%d colours, the commonest on %d of %d pixels", len(counts), most, total)
	}
	return nil
}

// base64Reader decodes standard base64 text as it is read.
func base64Reader(s string) *bytes.Reader {
	b, _ := base64.StdEncoding.DecodeString(s)
	return bytes.NewReader(b)
}
