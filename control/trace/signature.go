package trace

import (
	"bytes"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/eagerflow/eagerflow/backend"

	"github.com/eagerflow/eagerflow/control/graph"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Input signatures with unknown dimensions. A Go function can turn a size
// into a plain int (x.Dim(0) passed to Reshape; a gradient rule's
// BroadcastTo to its input's shape; a mean's divisor), which a trace
// records as an attribute or a constant like any other, so one trace
// cannot tell which numbers follow the sizes. A Function with a signature
// therefore learns it from its traces (generalize.go): the second size
// traced is compared with the first, node by node, and every number that
// differs must follow a size by a simple rule; the third size traced must
// then equal the graph those rules rebuild. From there on, a new size gets
// its graph rebuilt from the first trace, without running fn: three traces
// in all, whatever the number of sizes. A graph whose differences no rule
// explains (a size-dependent loop count baked into Go control flow, a
// constant computed from a size in some other way) traces once per size,
// and says why once through Logf.
//
// The rules reach as far as the three traces showed, no further: a size
// that never varied over them looks like a constant, and sizes that varied
// in proportion (square images) or in inverse proportion look like each
// other, so a new size that breaks such a coincidence is traced (logged
// once), while one that keeps it is built. And the traces see the numbers
// fn makes at their own sizes only: Go code that turns a size into a
// number otherwise than by a multiple or a fraction (min(n, 4), n/2
// rounded down, an if on n) can agree with a multiple at every traced size
// and not at the next. Give such a function no signature: NewFunction
// traces each size it meets.

// InputSpec is one argument of a Function's input signature: its dtype and
// shape, where -1 marks a dimension that may differ from call to call.
type InputSpec struct {
	DType tensor.DType
	Shape []int
}

func (s InputSpec) String() string {
	dims := make([]string, len(s.Shape))
	for i, d := range s.Shape {
		dims[i] = fmt.Sprint(d)
		if d < 0 {
			dims[i] = "?"
		}
	}
	return fmt.Sprintf("%v[%s]", s.DType, strings.Join(dims, " "))
}

// NewFunctionWithSignature wraps fn for arguments that match sig: calls
// with other dtypes, ranks or known dims are errors, and calls that differ
// only in the unknown dims stop tracing after three sizes, the graphs for
// further sizes rebuilt from the rules the traces showed (see the top of
// this file). fn must make its numbers from the unknown sizes by
// multiples and fractions alone (x.Dim(0)*2, 1/n), not min(n, 4), n/2
// rounded or an if on n: the traces cannot see those bend.
func NewFunctionWithSignature(fn func(args []*tensor.Tensor) []*tensor.Tensor, sig ...InputSpec) *Function {
	f := NewFunction(fn)
	f.sig = slices.Clone(sig)
	return f
}

// sizeRules is what a Function with a signature knows of how its graph
// follows the unknown sizes: the first trace and its sizes, then the rules
// from the second, trusted once the third matched them (or given up on,
// with the reason logged once).
type sizeRules struct {
	first    *traced
	firstKey string
	sizes    []int
	learned  [][]int // the sizes of the traces the rules come from, first to third
	gen      *generalization
	trusted  bool
	failed   bool
	outside  bool // a size outside the rules' reach was traced and logged
}

// learn takes the trace tr made at sizes (signature key) and returns a note
// to log when it shows the graph does not follow the sizes.
func (r *sizeRules) learn(tr *traced, sizes []int, key string) string {
	g := tr.g
	switch {
	case r.trusted && !r.outside:
		r.outside = true
		return fmt.Sprintf("trace: Function's sizes at %s are outside what its traces at %v showed of them "+
			"(a size that never varied there, or sizes that varied only in proportion, now do otherwise); "+
			"such sizes are traced", key, r.learned)
	case r.failed || r.trusted:
		return ""
	case r.first == nil:
		r.first, r.firstKey, r.sizes, r.learned = tr, key, sizes, [][]int{sizes}
		return ""
	case r.gen == nil:
		gen, err := generalize(r.first.g, g, r.sizes, sizes)
		if err != nil {
			r.failed = true
			return fmt.Sprintf("trace: Function's graph depends on the sizes its signature leaves unknown "+
				"in a way no rule explains (%s against %s: %v); it traces once per size", r.firstKey, key, err)
		}
		r.gen, r.learned = gen, append(r.learned, sizes)
		return ""
	}
	built, err := r.gen.instantiate(sizes)
	if err == nil {
		err = sameGraph(built, g, nearTensor)
	}
	if err != nil {
		r.failed = true
		return fmt.Sprintf("trace: Function's graph at %s does not follow the rules its traces at two other sizes gave (%v); "+
			"it traces once per size", key, err)
	}
	r.trusted, r.learned = true, append(r.learned, sizes)
	return ""
}

// covers reports whether trusted rules hold at sizes. A rule ties a
// number to one size (k*s or k/s) or to none, and the learning traces tell
// those apart only where they differ: a size that never varied there looks
// like a constant, and two sizes that varied in proportion (or in inverse
// proportion) look like each other. So sizes must keep, from the first
// trace's, every such coincidence the traces could not tell apart.
func (r *sizeRules) covers(sizes []int) bool {
	first := r.learned[0]
	always := func(rel func(t []int) bool) bool {
		for _, t := range r.learned {
			if !rel(t) {
				return false
			}
		}
		return true
	}
	for i := range sizes {
		same := func(t []int) bool { return t[i] == first[i] }
		if always(same) && !same(sizes) {
			return false
		}
		for j := range i {
			ratio := func(t []int) bool { return t[i]*first[j] == t[j]*first[i] }
			product := func(t []int) bool { return t[i]*t[j] == first[i]*first[j] }
			if always(ratio) && !ratio(sizes) || always(product) && !product(sizes) {
				return false
			}
		}
	}
	return true
}

// build returns the graph for sizes from trusted rules.
func (r *sizeRules) build(sizes []int) (*traced, error) {
	g, err := r.gen.instantiate(sizes)
	if err != nil {
		return nil, err
	}
	return &traced{g: g, nilResults: r.first.nilResults, hasGuards: r.first.hasGuards}, nil
}

// checkSignature reports how args differ from sig, if they do.
func checkSignature(sig []InputSpec, args []*tensor.Tensor) error {
	if len(args) != len(sig) {
		return fmt.Errorf("trace: Function takes %d arguments (signature %v), got %d", len(sig), sig, len(args))
	}
	for i, a := range args {
		s := sig[i]
		if a == nil {
			return fmt.Errorf("trace: Function argument %d is nil", i)
		}
		if a.DType() != s.DType || a.Rank() != len(s.Shape) {
			return fmt.Errorf("trace: Function argument %d is %s, the signature says %v", i, tensor.Describe(a), s)
		}
		for d, n := range s.Shape {
			if n >= 0 && a.Dim(d) != n {
				return fmt.Errorf("trace: Function argument %d is %s, the signature says %v (dim %d)", i, tensor.Describe(a), s, d)
			}
		}
	}
	return nil
}

// sameGraph reports whether a and b, traced from one function at different
// sizes (or rebuilt for one), compute alike: node by node the same kind,
// op, attributes, frames and wiring, and constants that consts accepts.
// Output shapes may differ. The error names the first difference.
func sameGraph(a, b *graph.Graph, consts func(x, y *tensor.Tensor) bool) error {
	if len(a.Nodes) != len(b.Nodes) || len(a.Result) != len(b.Result) {
		return fmt.Errorf("%d nodes and %d results against %d and %d", len(a.Nodes), len(a.Result), len(b.Nodes), len(b.Result))
	}
	for i, r := range a.Result {
		if r.Node.ID != b.Result[i].Node.ID || r.Index != b.Result[i].Index {
			return fmt.Errorf("result %d comes from different nodes", i)
		}
	}
	for i, x := range a.Nodes {
		if err := sameNode(x, b.Nodes[i], consts); err != nil {
			return fmt.Errorf("node %v: %v", x, err)
		}
	}
	return nil
}

// sameNode compares two nodes as sameGraph does; a nil consts compares
// neither constants nor attributes (the wiring only).
func sameNode(x, y *graph.Node, consts func(x, y *tensor.Tensor) bool) error {
	switch {
	case x.Kind != y.Kind || x.Name != y.Name || x.Outputs != y.Outputs || (x.Fused == nil) != (y.Fused == nil):
		return fmt.Errorf("%v against %v", x.Label(), y.Label())
	case x.Frame != y.Frame || x.IsConstant != y.IsConstant || x.ParallelIterations != y.ParallelIterations:
		return fmt.Errorf("frames differ")
	case len(x.Inputs) != len(y.Inputs) || len(x.Control) != len(y.Control) || len(x.After) != len(y.After):
		return fmt.Errorf("inputs differ")
	}
	for i, in := range x.Inputs {
		if in.Node.ID != y.Inputs[i].Node.ID || in.Index != y.Inputs[i].Index {
			return fmt.Errorf("input %d differs", i)
		}
	}
	for i, c := range x.Control {
		if c.ID != y.Control[i].ID {
			return fmt.Errorf("control input %d differs", i)
		}
	}
	for i, c := range x.After {
		if c.ID != y.After[i].ID {
			return fmt.Errorf("ordering edge %d differs", i)
		}
	}
	if x.Fused != nil {
		if len(x.Fused) != len(y.Fused) {
			return fmt.Errorf("fused chains of %d and %d steps", len(x.Fused), len(y.Fused))
		}
		for i, m := range x.Fused {
			if m.Op != y.Fused[i].Op || fmt.Sprintf("%#v", m.Attrs) != fmt.Sprintf("%#v", y.Fused[i].Attrs) {
				return fmt.Errorf("fused step %d: %s against %s", i, m.Name, y.Fused[i].Name)
			}
		}
		if !graph.SameFusedOperands(x, y) {
			return fmt.Errorf("a fused input is a single value at one size only")
		}
		return nil
	}
	if x.Op != y.Op {
		return fmt.Errorf("op %v against %v", x.Op.Name, y.Op.Name)
	}
	if consts == nil {
		return nil
	}
	if x.Kind == graph.Const && !consts(x.Value, y.Value) {
		return fmt.Errorf("the constant %s against %s", tensor.Describe(x.Value), tensor.Describe(y.Value))
	}
	if ax, ay := fmt.Sprintf("%#v", x.Attrs), fmt.Sprintf("%#v", y.Attrs); ax != ay {
		return fmt.Errorf("attributes %s against %s", ax, ay)
	}
	return nil
}

// sameTensor reports whether a and b have one dtype, shape and value.
func sameTensor(a, b *tensor.Tensor) bool {
	if a == b {
		return true
	}
	if a.DType() != b.DType() || !a.Shape().Equal(b.Shape()) {
		return false
	}
	if a.Device() != device.Host() || b.Device() != device.Host() { // a constant made on a GPU
		return bytes.Equal(hostCopy(a).HostBytes(), hostCopy(b).HostBytes())
	}
	return slices.Equal(a.Layout(), b.Layout()) && bytes.Equal(a.HostBytes(), b.HostBytes())
}

// hostCopy is t's values on the host, contiguous; a tensor that cannot be
// read (its device failed) panics, as an op's would.
func hostCopy(t *tensor.Tensor) *tensor.Tensor {
	h, err := backend.OnHost(t)
	if err != nil {
		panic(err)
	}
	return h
}

// nearTensor is sameTensor with floating-point values allowed to differ in
// their last bits (a rule's k/s against the traced op's own rounding).
func nearTensor(a, b *tensor.Tensor) bool {
	if sameTensor(a, b) {
		return true
	}
	if a.DType() != b.DType() || !a.Shape().Equal(b.Shape()) || !a.DType().IsFloat() {
		return false
	}
	x, y := tensor.ToSlice[float64](ops.Cast(a, tensor.Float64)), tensor.ToSlice[float64](ops.Cast(b, tensor.Float64))
	for i := range x {
		if math.Abs(x[i]-y[i]) > 1e-6*math.Max(math.Abs(x[i]), math.Abs(y[i])) {
			return false
		}
	}
	return true
}
