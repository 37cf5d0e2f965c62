package nn

import (
	"fmt"
	"reflect"
	"runtime"
	"strings"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Describe is m in one line: its kind, its name (the prefix of its
// variables' names) and its configuration, as the tree printing of a
// Sequential and Summary show it: "Dense dense1: 784 -> 128, relu". A
// module of your own that implements fmt.Stringer describes itself;
// another is shown by its type.
func Describe(m Module) string {
	switch l := m.(type) {
	case *Dense:
		in, out := l.Kernel.Value().Dim(0), l.Kernel.Value().Dim(1)
		return joinParts("Dense", layerName(l), fmt.Sprintf("%d -> %d", in, out), activationName(l.act), noBias(l.Bias))
	case *Conv2D:
		f := l.Filter.Value().Shape()
		o := l.opts.Conv2DOpts
		return joinParts("Conv2D", layerName(l), fmt.Sprintf("%dx%d, %d -> %d", f[0], f[1], f[2], f[3]),
			strideText(o.Strides), paddingText(o.Padding), formatText(o.Format), activationName(l.opts.Activation), noBias(l.Bias))
	case *Conv1D:
		f := l.Filter.Value().Shape()
		o := l.opts
		pad, stride := paddingText(o.Padding), ""
		if o.Causal {
			pad = "causal"
		}
		if o.Stride > 1 {
			stride = fmt.Sprintf("stride %d", o.Stride)
		}
		return joinParts("Conv1D", layerName(l), fmt.Sprintf("%d, %d -> %d", f[0], f[1], f[2]),
			stride, pad, formatText(o.Format), activationName(o.Activation), noBias(l.Bias))
	case *Conv2DTranspose:
		f := l.Filter.Value().Shape()
		o := l.opts.Conv2DOpts
		return joinParts("Conv2DTranspose", layerName(l), fmt.Sprintf("%dx%d, %d -> %d", f[0], f[1], f[3], f[2]),
			strideText(o.Strides), paddingText(o.Padding), formatText(o.Format), activationName(o.Activation), noBias(l.Bias))
	case *DepthwiseConv2D:
		f := l.Filter.Value().Shape()
		o := l.opts
		return joinParts("DepthwiseConv2D", layerName(l), fmt.Sprintf("%dx%d, %d -> %d", f[0], f[1], f[2], f[2]*f[3]),
			strideText(o.Strides), paddingText(o.Padding), formatText(o.Format), activationName(o.Activation), noBias(l.Bias))
	case MaxPool2D:
		return joinParts("MaxPool2D", "", poolText(l.PoolOpts), strideText(l.Strides), paddingText(l.Padding), formatText(l.Format))
	case AvgPool2D:
		return joinParts("AvgPool2D", "", poolText(l.PoolOpts), strideText(l.Strides), paddingText(l.Padding), formatText(l.Format))
	case *BatchNorm:
		return joinParts("BatchNorm", layerName(l), fmt.Sprintf("%d features, axis %d", l.Gamma.Value().Dim(0), l.Axis))
	case *LayerNorm:
		return joinParts("LayerNorm", layerName(l), fmt.Sprintf("%d features", l.Gamma.Value().Dim(0)))
	case *Dropout:
		return fmt.Sprintf("Dropout: rate %g", l.Rate)
	case *Embedding:
		t := l.Table.Value()
		return joinParts("Embedding", layerName(l), fmt.Sprintf("%d x %d", t.Dim(0), t.Dim(1)))
	case Flatten:
		return "Flatten"
	case Activation:
		return "Activation: " + activationName(l)
	case *RNN:
		seq := "last output"
		if l.ReturnSequences {
			seq = "sequences"
		}
		return fmt.Sprintf("RNN: %s, %s", describeCell(l.Cell), seq)
	case *Sequential:
		return fmt.Sprintf("Sequential: %d layers", len(l.Layers))
	case fmt.Stringer:
		return l.String()
	}
	return fmt.Sprintf("%T", m)
}

// describeCell is an RNN's cell in a few words: "LSTMCell lstm: 64 -> 128".
func describeCell(c Cell) string {
	prefix := func(v *tape.Variable) string { name, _, _ := strings.Cut(v.Name(), "/"); return name }
	switch c := c.(type) {
	case *LSTMCell:
		return joinParts("LSTMCell", prefix(c.Kernel), fmt.Sprintf("%d -> %d", c.Kernel.Value().Dim(0), c.hidden))
	case *GRUCell:
		return joinParts("GRUCell", prefix(c.Kernel), fmt.Sprintf("%d -> %d", c.Kernel.Value().Dim(0), c.hidden))
	case fmt.Stringer:
		return c.String()
	}
	return fmt.Sprintf("%T", c)
}

// joinParts is "Kind name: a, b" (name and empty parts left out).
func joinParts(kind, name string, parts ...string) string {
	var kept []string
	for _, p := range parts {
		if p != "" {
			kept = append(kept, p)
		}
	}
	head := kind
	if name != "" {
		head += " " + name
	}
	if len(kept) == 0 {
		return head
	}
	return head + ": " + strings.Join(kept, ", ")
}

// layerName is the common prefix of a module's variable names ("dense1"
// of "dense1/kernel"), "" when it has none.
func layerName(m Module) string {
	vars := m.Variables()
	if len(vars) == 0 {
		return ""
	}
	name, _, _ := strings.Cut(vars[0].Name(), "/")
	return name
}

// activationName is the function's name in lower case ("relu" for
// ops.Relu), "" for none, "activation" for an unnamed function.
func activationName(f func(*tensor.Tensor) *tensor.Tensor) string {
	if f == nil {
		return ""
	}
	full := runtime.FuncForPC(reflect.ValueOf(f).Pointer()).Name()
	name := full[strings.LastIndex(full, ".")+1:]
	if strings.HasPrefix(name, "func") || name == "" {
		return "activation"
	}
	return strings.ToLower(name)
}

func noBias(b *tape.Variable) string {
	if b == nil {
		return "no bias"
	}
	return ""
}

func strideText(s [2]int) string {
	if s == [2]int{} || s == [2]int{1, 1} {
		return ""
	}
	return fmt.Sprintf("stride %dx%d", s[0], s[1])
}

func paddingText(p ops.PaddingMode) string {
	if p == ops.Valid {
		return ""
	}
	return strings.ToLower(p.String())
}

func formatText(f ops.DataFormat) string {
	if f == ops.NHWC {
		return ""
	}
	return f.String()
}

func poolText(o ops.PoolOpts) string {
	o = poolDefaults(o)
	return fmt.Sprintf("%dx%d", o.Size[0], o.Size[1])
}

// parameters counts the elements of vars.
func parameters(vars []*tape.Variable) int {
	n := 0
	for _, v := range vars {
		n += v.Value().NumElements()
	}
	return n
}

// The layers print as Describe shows them.

func (d *Dense) String() string           { return Describe(d) }
func (c *Conv2D) String() string          { return Describe(c) }
func (c *Conv1D) String() string          { return Describe(c) }
func (c *Conv2DTranspose) String() string { return Describe(c) }
func (c *DepthwiseConv2D) String() string { return Describe(c) }
func (p MaxPool2D) String() string        { return Describe(p) }
func (p AvgPool2D) String() string        { return Describe(p) }
func (b *BatchNorm) String() string       { return Describe(b) }
func (l *LayerNorm) String() string       { return Describe(l) }
func (d *Dropout) String() string         { return Describe(d) }
func (e *Embedding) String() string       { return Describe(e) }
func (Flatten) String() string            { return "Flatten" }
func (a Activation) String() string       { return Describe(a) }
func (r *RNN) String() string             { return Describe(r) }
