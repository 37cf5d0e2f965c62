package nn

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/eagerflow/eagerflow/tensor"
)

// String prints the model as a tree, each layer with its configuration
// and parameter count, as PyTorch prints a module:
//
//	Sequential: 3 layers, 101,770 parameters
//	├─ Dense dense1: 784 -> 128, relu  100,480
//	├─ Dropout: rate 0.2
//	└─ Dense logits: 128 -> 10           1,290
//
// Summary adds each layer's output shape for a given input.
func (s *Sequential) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Sequential: %d layers, %s parameters", len(s.Layers), thousands(parameters(s.Variables())))
	if st := parameters(s.State()); st > 0 {
		fmt.Fprintf(&b, " (and %s of state)", thousands(st))
	}
	var rows [][2]string
	treeRows(s, "", &rows)
	width, countWidth := 0, 0
	for _, r := range rows {
		width = max(width, utf8.RuneCountInString(r[0]))
		countWidth = max(countWidth, len(r[1]))
	}
	for _, r := range rows {
		line := r[0]
		if r[1] != "" {
			line += strings.Repeat(" ", width-utf8.RuneCountInString(r[0])+2+countWidth-len(r[1])) + r[1]
		}
		b.WriteString("\n" + line)
	}
	return b.String()
}

// treeRows appends s's layers under prefix, recursing into nested
// Sequentials: the branch and description, and the parameter count.
func treeRows(s *Sequential, prefix string, rows *[][2]string) {
	for i, l := range s.Layers {
		branch, next := "├─ ", "│  "
		if i == len(s.Layers)-1 {
			branch, next = "└─ ", "   "
		}
		count := ""
		if n := parameters(l.Variables()); n > 0 {
			count = thousands(n)
		}
		*rows = append(*rows, [2]string{prefix + branch + Describe(l), count})
		if inner, ok := l.(*Sequential); ok {
			treeRows(inner, prefix+next, rows)
		}
	}
}

// thousands writes n with commas: 101,770.
func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// Summary is Summarize's table as text.
//
// Deprecated: use Summarize, whose result prints as this table (its
// String method) and holds the rows as data.
func Summary(m Module, x *tensor.Tensor) (string, error) {
	if err := nilArg("Summary", arg{"the module", m}, arg{"the input", x}); err != nil {
		return "", err
	}
	s, err := Summarize(m, x)
	if err != nil {
		return "", err
	}
	return s.String(), nil
}

// ModelSummary is Summary's table as data, for displays of one's own.
type ModelSummary struct {
	Layers     []LayerSummary
	InputDType tensor.DType
	InputShape tensor.Shape
	Trainable  int // trainable parameters (m.Variables)
	State      int // elements of the other variables (AllVariables): running means...
}

// LayerSummary is one row of a ModelSummary.
type LayerSummary struct {
	Depth  int          // 0 for m's own layers, 1 inside a nested Sequential...
	Layer  string       // the layer as Describe shows it
	Output tensor.Shape // nil on a nested Sequential's own row and a Container's modules
	Params int          // trainable parameters (a Sequential's: all of its layers')
}

// Summarize runs x through m in inference mode (values are not kept) and
// returns each layer (a Sequential's, recursively) with its output shape
// and parameter count, under a Container of one's own (a model's struct
// listing its Modules, a Residual) its modules with their parameter
// counts (their data flow is the container's code: no output shapes),
// and the totals; printed (its String method) it is a
// table as Keras' summary prints. An error in a layer is returned naming
// the layer.
func Summarize(m Module, x *tensor.Tensor) (ModelSummary, error) {
	if err := nilArg("Summarize", arg{"the module", m}, arg{"the input", x}); err != nil {
		return ModelSummary{}, err
	}
	defer inference(m)()
	s := ModelSummary{InputDType: x.DType(), InputShape: x.Shape()}
	if err := tensor.Catch(func() { s.Layers, _ = summarize(nil, m, x, 0) }); err != nil {
		return ModelSummary{}, err
	}
	s.Trainable = parameters(m.Variables())
	s.State = parameters(AllVariables(m)) - s.Trainable
	return s, nil
}

// String is the table Summary returns.
func (s ModelSummary) String() string {
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "layer\toutput shape\tparameters\n")
	for _, l := range s.Layers {
		shape := ""
		if l.Output != nil {
			shape = fmt.Sprint(l.Output)
		}
		fmt.Fprintf(tw, "%s%s\t%s\t%s\n", strings.Repeat("  ", l.Depth), l.Layer, shape, thousands(l.Params))
	}
	tw.Flush()
	fmt.Fprintf(&b, "input %v %v; %s trainable parameters", s.InputDType, s.InputShape, thousands(s.Trainable))
	if s.State > 0 {
		fmt.Fprintf(&b, ", %s of state", thousands(s.State))
	}
	return b.String()
}

// summarize runs x through m, appending a row for each layer, and returns
// the rows and m's output.
func summarize(rows []LayerSummary, m Module, x *tensor.Tensor, depth int) ([]LayerSummary, *tensor.Tensor) {
	if s, ok := m.(*Sequential); ok {
		for i, l := range s.Layers {
			if inner, ok := l.(*Sequential); ok {
				rows = append(rows, LayerSummary{Depth: depth, Layer: Describe(inner), Params: parameters(inner.Variables())})
				rows, x = summarize(rows, inner, x, depth+1)
				continue
			}
			x = forwardNamed(l, i, x)
			rows = append(rows, LayerSummary{Depth: depth, Layer: Describe(l), Output: x.Shape(), Params: parameters(l.Variables())})
			rows = containerRows(rows, l, depth+1)
		}
		return rows, x
	}
	y := m.Forward(x)
	rows = append(rows, LayerSummary{Depth: depth, Layer: Describe(m), Output: y.Shape(), Params: parameters(m.Variables())})
	return containerRows(rows, m, depth+1), y
}

// containerRows appends, for a module of one's own that lists its modules
// (a Container, not a Sequential, whose data flow is its own code), a row
// for each of them, recursively: its description and parameters, no
// output shape.
func containerRows(rows []LayerSummary, m Module, depth int) []LayerSummary {
	c, ok := m.(Container)
	if _, seq := m.(*Sequential); !ok || seq {
		return rows
	}
	for _, inner := range c.Modules() {
		if inner == nil {
			continue
		}
		rows = append(rows, LayerSummary{Depth: depth, Layer: Describe(inner), Params: parameters(inner.Variables())})
		rows = containerRows(rows, inner, depth+1)
	}
	return rows
}

// forwardNamed runs layer i of a Sequential, naming the layer in a
// *tensor.Error raised inside it: "ops: dense1: MatMul: ...". A nested
// Sequential names its own layer.
func forwardNamed(l Module, i int, x *tensor.Tensor) (y *tensor.Tensor) {
	if _, ok := l.(*Sequential); ok {
		return l.Forward(x)
	}
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		err, ok := r.(error)
		var te *tensor.Error
		if !ok || !errors.As(err, &te) {
			panic(r)
		}
		label := layerName(l)
		if label == "" {
			label = fmt.Sprintf("layer %d (%s)", i, strings.SplitN(Describe(l), ":", 2)[0])
		}
		named := *te
		named.Op = label + ": " + te.Op
		panic(&named)
	}()
	return l.Forward(x)
}
