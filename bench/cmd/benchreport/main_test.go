package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const sample = `goos: linux
BenchmarkMatMul1024-2   	      80	  13484025 ns/op	       159.3 GFLOP/s	  151429 B/op	       7 allocs/op
BenchmarkMatMul1024-2   	      88	  13380257 ns/op	       160.5 GFLOP/s	  107870 B/op	       7 allocs/op
BenchmarkMatMul1024-2   	      88	  13380257 ns/op	       170.5 GFLOP/s	  107870 B/op	       7 allocs/op
BenchmarkMLPStep-2   	     752	   1620264 ns/op
BenchmarkTorchMatMul1024-2	64	10000000.0 ns/op	200.00 GFLOP/s
BenchmarkGonumMatMul/float32/1024-2	2	100000000 ns/op	20.0 GFLOP/s
BenchmarkTorchMLPStep-2	100	810132.0 ns/op
BenchmarkGorgoniaMLPStep-2	100	7000000 ns/op
PASS
`

func TestTableFromSamples(t *testing.T) {
	res := results{}
	if err := res.parse(strings.NewReader(sample), "sample"); err != nil {
		t.Fatal(err)
	}
	if m, _ := res.median("MatMul1024", "GFLOP/s"); m != 160.5 {
		t.Errorf("median GFLOP/s %v, want 160.5", m)
	}
	tab := buildTable(res, rows)
	var mm, mlp line
	for _, l := range tab.lines {
		switch l.row.ours {
		case "MatMul1024":
			mm = l
		case "MLPStep":
			mlp = l
		}
	}
	if x, who, ok := mm.ratio(); !ok || who != "PyTorch" || x < 0.80 || x > 0.81 {
		t.Errorf("MatMul1024 ratio %v %s %v, want 0.8025 vs PyTorch", x, who, ok)
	}
	if x, who, ok := mlp.ratio(); !ok || who != "PyTorch" || x < 0.49 || x > 0.51 {
		t.Errorf("MLPStep ratio %v %s %v, want 0.5 vs PyTorch (times: lower is better)", x, who, ok)
	}
	var md bytes.Buffer
	tab.writeMarkdown(&md, "header")
	if !strings.Contains(md.String(), "| MatMul 1024 float32 | 160 GFLOP/s | 200 GFLOP/s |  | 20 GFLOP/s |  |  | 0.80x (PyTorch) |") {
		t.Errorf("markdown row missing:\n%s", md.String())
	}
	png := filepath.Join(t.TempDir(), "r.png")
	if err := tab.plot(png); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(png); err != nil || st.Size() == 0 {
		t.Errorf("no chart: %v", err)
	}
}

func TestParseErrorsNameTheLine(t *testing.T) {
	err := results{}.parse(strings.NewReader("BenchmarkX-2 10 abc ns/op\n"), "f.txt")
	if err == nil || !strings.Contains(err.Error(), "f.txt:1") {
		t.Errorf("error %v, want one naming f.txt:1", err)
	}
}

func TestSpliceSection(t *testing.T) {
	doc := []byte("a\n" + beginMarker + "\nold\n" + endMarker + "\nb\n")
	out, err := spliceSection(doc, []byte("new\n"))
	if err != nil || string(out) != "a\n"+beginMarker+"\nnew\n"+endMarker+"\nb\n" {
		t.Errorf("got %q, %v", out, err)
	}
	if _, err := spliceSection([]byte("no markers"), nil); err == nil {
		t.Error("a file without markers was accepted")
	}
}
