package graph

import (
	"strings"
	"testing"
)

func TestPrintShowsFrames(t *testing.T) {
	b := graphBuilder{&Graph{}, t}
	n := b.Input("n")
	b.Result = []Output{b.nestedLoops(n)[1]}
	text := b.Graph.String()
	for _, want := range []string{
		"= Placeholder n", `[outer] = Enter(%0) {"outer", constant}`, `[inner] = Enter(%14) {"inner"}`,
		"[inner] = Add(", "[outer] = Exit(", "results: %",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("listing lacks %q:\n%s", want, text)
		}
	}
	// The final Exit is at the root: its line has no frame.
	last := b.Result[0].Node
	if frame := b.Graph.frames()[last]; frame != "" {
		t.Errorf("the outer loop's Exit is in frame %q", frame)
	}
	var dot strings.Builder
	if err := b.Graph.WriteDOT(&dot); err != nil {
		t.Fatal(err)
	}
	d := dot.String()
	outer, inner := strings.Index(d, `subgraph "cluster_outer"`), strings.Index(d, `subgraph "cluster_inner"`)
	if outer < 0 || inner < outer || !strings.Contains(d, "constraint=false") || !strings.HasSuffix(d, "}\n") {
		t.Errorf("DOT lacks nested frame clusters or back edges:\n%s", d)
	}
	if strings.Count(d, "{") != strings.Count(d, "}") {
		t.Errorf("unbalanced braces:\n%s", d)
	}
	// Ports only where a node has several outputs (issue 31: every edge
	// carried two numbers); a Switch's outputs are named.
	if strings.Contains(d, "headlabel") || strings.Contains(d, "taillabel") || !strings.Contains(d, `[label="1"]`) {
		t.Errorf("edge labels:\n%s", d)
	}
	for _, want := range []string{`label="Placeholder\nn"`, `label="Const\n0 int64[]"`, `label="Enter\n\"outer\", constant"`} {
		if !strings.Contains(d, want) {
			t.Errorf("DOT lacks %s:\n%s", want, d)
		}
	}
}
