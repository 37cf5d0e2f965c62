package notebook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/eagerflow/eagerflow/control/graph"
)

// ErrNoDot is returned by GraphSVG when Graphviz's dot is not installed
// (Debian's package graphviz; scripts/install-notebook installs it).
var ErrNoDot = errors.New("notebook: Graphviz's dot is not installed (apt-get install graphviz)")

// Graph displays g, a traced function's graph (trace.Function.Graph), as
// Graphviz's dot lays it out: ops as boxes, control edges dashed, each
// execution frame of a While a cluster inside its parent's. Without dot
// it shows the DOT text and says how to install dot. Outside a notebook
// it prints g's listing (g.String).
func Graph(g *graph.Graph) {
	if !front.notebook() {
		text(g.String())
		return
	}
	front.display(graphHTML(g))
}

// GraphSVG is g drawn by dot as an SVG document (without the XML
// prolog, ready to put in HTML). Errors: ErrNoDot, or dot's own message.
func GraphSVG(g *graph.Graph) (string, error) {
	var dot bytes.Buffer
	if err := g.WriteDOT(&dot); err != nil {
		return "", fmt.Errorf("notebook: graph: %w", err)
	}
	path, err := exec.LookPath("dot")
	if err != nil {
		return "", ErrNoDot
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, "-Tsvg")
	cmd.Stdin = &dot
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("notebook: graph: dot: %v: %s", err, strings.TrimSpace(stderr.String()))
	}
	svg := out.String()
	i := strings.Index(svg, "<svg")
	if i < 0 {
		return "", fmt.Errorf("notebook: graph: dot wrote no <svg> element")
	}
	return svg[i:], nil
}

// graphHTML is Graph's display: the SVG, or the DOT text with the reason
// there is no drawing.
func graphHTML(g *graph.Graph) string {
	head := fmt.Sprintf(`<div class="ef-head"><b>graph</b><span class="ef-mark">%d nodes</span></div>`, len(g.Nodes))
	svg, err := GraphSVG(g)
	if err == nil {
		return style + `<div class="ef-box ef-graph">` + head + svg + "</div>"
	}
	var dot strings.Builder
	if werr := g.WriteDOT(&dot); werr != nil {
		return errorHTML(werr)
	}
	return style + `<div class="ef-box ef-graph">` + head + `<div class="ef-error">` + pre(err.Error()) + "</div>" + pre(dot.String()) + "</div>"
}
