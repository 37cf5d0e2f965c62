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
		"= Placeholder n()", `[outer] = Enter "outer", constant(%0:0)`, `[inner] = Enter "inner"(`,
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
}
