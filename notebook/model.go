package notebook

import (
	"fmt"
	"html"
	"strings"

	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/tensor"
)

// Model displays m's summary for the input x (nn.Summarize: x runs through
// m in inference mode): each layer as nn.Describe names it, nested layers
// indented, with its output shape and trainable parameters, and the
// totals. Outside a notebook it prints the summary's text table (its
// String). An error in a layer is returned naming the layer, and nothing
// is shown.
func Model(m nn.Module, x *tensor.Tensor) error {
	s, err := nn.Summarize(m, x)
	if err != nil {
		return fmt.Errorf("notebook: model: %w", err)
	}
	if !front.notebook() {
		text(s.String())
		return nil
	}
	front.display(ModelHTML(s))
	return nil
}

// ModelHTML is a model summary as an HTML table.
func ModelHTML(s nn.ModelSummary) string {
	var b strings.Builder
	b.WriteString(style)
	fmt.Fprintf(&b, `<div class="ef-box ef-model"><div class="ef-head"><b>model</b><span class="ef-mark">input %v%v</span></div>`, s.InputDType, s.InputShape)
	b.WriteString(`<table class="ef-table"><tr><th style="text-align:left">layer</th><th>output shape</th><th>parameters</th></tr>`)
	for _, l := range s.Layers {
		shape := ""
		if l.Output != nil {
			shape = fmt.Sprint(l.Output)
		}
		fmt.Fprintf(&b, `<tr><td style="text-align:left;padding-left:%dpx">%s</td><td>%s</td><td>%s</td></tr>`,
			6+16*l.Depth, html.EscapeString(l.Layer), shape, thousands(l.Params))
	}
	fmt.Fprintf(&b, `<tr><th style="text-align:left">total</th><th></th><th>%s</th></tr></table>`, thousands(s.Trainable))
	if s.State > 0 {
		fmt.Fprintf(&b, `<div class="ef-sub">and %s elements of state (not trained)</div>`, thousands(s.State))
	}
	b.WriteString("</div>")
	return b.String()
}

// thousands writes n with commas: 101,770.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
