package notebook

import (
	"fmt"
	"html"
	"image"
	"strings"

	"github.com/eagerflow/eagerflow/control/graph"
	"github.com/eagerflow/eagerflow/internal/plumb"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Show displays each value as an output of its own: a *tensor.Tensor or a
// *tape.Variable as a table (TensorHTML), a *graph.Graph as Graph draws
// it, an nn.History as its curves, an image.Image as a picture, an error
// in red, anything else as the text fmt prints. Outside a notebook each
// value is printed to Output as fmt.Println prints it (a graph as its
// listing).
func Show(values ...any) {
	for _, v := range values {
		if !front.notebook() {
			if g, ok := v.(*graph.Graph); ok {
				text(g.String())
			} else {
				text(fmt.Sprint(v))
			}
			continue
		}
		front.display(toHTML(v))
	}
}

// toHTML renders one value of Show.
func toHTML(v any) string {
	switch x := v.(type) {
	case *tensor.Tensor:
		return TensorHTML(x)
	case *tape.Variable:
		return tensorHTML(x.Value(), x.Name())
	case *graph.Graph:
		return graphHTML(x)
	case nn.History:
		return historyHTML(x)
	case image.Image:
		return imageHTML(x)
	case error:
		return errorHTML(x)
	}
	return style + `<div class="ef-box">` + pre(fmt.Sprint(v)) + "</div>"
}

// errorHTML shows err in red.
func errorHTML(err error) string {
	return style + `<div class="ef-box ef-error">` + pre(err.Error()) + "</div>"
}

// TensorHTML is t as an HTML table, headed by its dtype and shape and by
// marks for what it is: a variable, a value recorded on a gradient tape
// (its gradient can be taken), a traced value, a weak scalar, a tensor on
// a device other than the CPU. Matrices are tables with their indices;
// a tensor of rank 3 or more is a table for each leading index
// ("[0, :, :]"); one of rank 1 a single row. Like the text printer, a
// tensor of more than 1000 elements shows 3 items at each end of every
// dimension with an elision mark between. NaN and infinities are
// coloured. A released tensor shows its header alone.
func TensorHTML(t *tensor.Tensor) string { return tensorHTML(t, "") }

func tensorHTML(t *tensor.Tensor, name string) string {
	var b strings.Builder
	b.WriteString(style)
	b.WriteString(`<div class="ef-box ef-tensor"><div class="ef-head">`)
	if t == nil {
		b.WriteString("<b>nil tensor</b></div></div>")
		return b.String()
	}
	fmt.Fprintf(&b, "<b>%s</b>", html.EscapeString(tensor.Describe(t)))
	elems, shown := plumb.Tensor.Print(t)
	for _, m := range marks(t, name, elems != nil) {
		fmt.Fprintf(&b, `<span class="ef-mark">%s</span>`, html.EscapeString(m))
	}
	b.WriteString("</div>")
	if elems != nil {
		writeBlocks(&b, t.Shape(), elems, shown)
	}
	b.WriteString("</div>")
	return b.String()
}

// marks names what sets t apart, for the header of its table; hasValues
// is false for a released tensor or a tape's stand-in.
func marks(t *tensor.Tensor, name string, hasValues bool) []string {
	var m []string
	switch {
	case name != "":
		m = append(m, fmt.Sprintf("variable %q", name))
	case t.IsVariable():
		m = append(m, "variable")
	}
	if t.Autodiff() != nil {
		m = append(m, "on a tape")
	}
	if t.Traced() != nil {
		m = append(m, "traced")
	}
	if t.IsWeak() {
		m = append(m, "weak scalar")
	}
	switch {
	case t.ValuesDropped():
		m = append(m, "values dropped by the tape")
	case !hasValues:
		m = append(m, "released")
	case t.Device().Name() != "cpu:0":
		m = append(m, t.Device().Name())
	}
	return m
}

// writeBlocks writes a tensor's tables: one for a scalar, a row, or a
// matrix; one per leading index beyond that.
func writeBlocks(b *strings.Builder, shape tensor.Shape, elems []string, shown func(int) []int) {
	switch len(shape) {
	case 0:
		b.WriteString(`<table class="ef-table"><tr>`)
		cell(b, elems[0])
		b.WriteString("</tr></table>")
		return
	case 1:
		writeMatrix(b, elems, shown, 0, 1, shape[0], false)
		return
	}
	rows, cols := shape[len(shape)-2], shape[len(shape)-1]
	var lead func(dim, base int, index []string)
	lead = func(dim, base int, index []string) {
		if dim == len(shape)-2 {
			if len(shape) > 2 {
				fmt.Fprintf(b, `<div class="ef-sub">[%s, :, :]</div>`, strings.Join(index, ", "))
			}
			writeMatrix(b, elems, shown, base, rows, cols, true)
			return
		}
		stride := 1
		for _, d := range shape[dim+1:] {
			stride *= d
		}
		for _, i := range shown(shape[dim]) {
			if i < 0 {
				b.WriteString(`<div class="ef-sub">⋮</div>`)
				continue
			}
			lead(dim+1, base+i*stride, append(index, fmt.Sprint(i)))
		}
	}
	lead(0, 0, nil)
}

// writeMatrix writes rows x cols elements from base (row-major) as a
// table with column indices above and, when rowIndex, row indices beside.
func writeMatrix(b *strings.Builder, elems []string, shown func(int) []int, base, rows, cols int, rowIndex bool) {
	b.WriteString(`<table class="ef-table"><tr>`)
	if rowIndex {
		b.WriteString("<th></th>")
	}
	colIdx := shown(cols)
	for _, j := range colIdx {
		if j < 0 {
			b.WriteString(`<th class="ef-gap">…</th>`)
		} else {
			fmt.Fprintf(b, "<th>%d</th>", j)
		}
	}
	b.WriteString("</tr>")
	for _, i := range shown(rows) {
		b.WriteString("<tr>")
		if i < 0 {
			if rowIndex {
				b.WriteString(`<th class="ef-gap">⋮</th>`)
			}
			for range colIdx {
				b.WriteString(`<td class="ef-gap">⋮</td>`)
			}
			b.WriteString("</tr>")
			continue
		}
		if rowIndex {
			fmt.Fprintf(b, "<th>%d</th>", i)
		}
		for _, j := range colIdx {
			if j < 0 {
				b.WriteString(`<td class="ef-gap">…</td>`)
			} else {
				cell(b, elems[base+i*cols+j])
			}
		}
		b.WriteString("</tr>")
	}
	b.WriteString("</table>")
}

// cell writes one element, NaN and infinities marked.
func cell(b *strings.Builder, e string) {
	switch e {
	case "nan":
		b.WriteString(`<td class="ef-nan">nan</td>`)
	case "inf", "-inf":
		fmt.Fprintf(b, `<td class="ef-inf">%s</td>`, e)
	default:
		fmt.Fprintf(b, "<td>%s</td>", html.EscapeString(e))
	}
}
