package nn

import (
	"errors"
	"fmt"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/eagerflow/eagerflow/eager"
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

// Summary runs x through m in inference mode (values are not kept) and
// returns a table of each layer (a Sequential's, recursively) with its
// output shape and parameter count, and the totals, as Keras' summary
// does. An error in a layer is returned naming the layer.
func Summary(m Module, x *tensor.Tensor) (string, error) {
	SetTraining(m, false)
	defer SetTraining(m, true)
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "layer\toutput shape\tparameters\n")
	err := eager.Catch(func() { summarize(tw, m, x, "") })
	if err != nil {
		return "", err
	}
	tw.Flush()
	trainable, state := parameters(m.Variables()), parameters(AllVariables(m))-parameters(m.Variables())
	fmt.Fprintf(&b, "input %v %v; %s trainable parameters", x.DType(), x.Shape(), thousands(trainable))
	if state > 0 {
		fmt.Fprintf(&b, ", %s of state", thousands(state))
	}
	return b.String(), nil
}

func summarize(tw *tabwriter.Writer, m Module, x *tensor.Tensor, indent string) *tensor.Tensor {
	if s, ok := m.(*Sequential); ok {
		for i, l := range s.Layers {
			if inner, ok := l.(*Sequential); ok {
				fmt.Fprintf(tw, "%s%s\t\t%s\n", indent, Describe(inner), thousands(parameters(inner.Variables())))
				x = summarize(tw, inner, x, indent+"  ")
				continue
			}
			x = forwardNamed(l, i, x)
			fmt.Fprintf(tw, "%s%s\t%v\t%s\n", indent, Describe(l), x.Shape(), thousands(parameters(l.Variables())))
		}
		return x
	}
	y := m.Forward(x)
	fmt.Fprintf(tw, "%s%s\t%v\t%s\n", indent, Describe(m), y.Shape(), thousands(parameters(m.Variables())))
	return y
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
