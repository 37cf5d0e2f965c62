package control

import (
	"strings"
	"testing"
)

func TestPrintShowsFrames(t *testing.T) {
	b := graphBuilder{&Graph{}, t}
	n := b.Input("n")
	exits := b.while("outer", []Output{b.i64(0), b.i64(0)}, []Output{n},
		func(v, inv []Output) Output { return b.op("Lt", v[0], inv[0]) },
		func(v, inv []Output) []Output {
			inner := b.while("inner", []Output{b.op("Mul", v[0], b.i64(0)), v[1]}, []Output{v[0]},
				func(w, jinv []Output) Output { return b.op("Lt", w[0], jinv[0]) },
				func(w, jinv []Output) []Output {
					return []Output{b.op("Add", w[0], b.i64(1)), b.op("Add", w[1], b.i64(1))}
				})
			return []Output{b.op("Add", v[0], b.i64(1)), inner[1]}
		})
	b.Result = []Output{exits[1]}
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
