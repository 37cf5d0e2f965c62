package trace

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"os"
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
// other (and so on for products), so a new size that breaks such a
// coincidence is traced (logged once), while one that keeps it is built.
// And the traces see the numbers fn makes at their own sizes only: Go code
// that turns a size into a number otherwise than by a multiple or a
// fraction (min(n, 4), n/2 rounded down, an if on n) can agree with a
// multiple at every traced size and not at the next. Give such a function
// no signature: NewFunction traces each size it meets.
// EAGERFLOW_DEBUG=sizes makes every Function made with a signature trace
// each new size as well and compare the trace with the graph its rules
// build, saying where they differ (Logf): a check to run a program under
// once.

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
// multiples, products and fractions alone (x.Dim(0)*2, B*T, 1/n), not
// min(n, 4), n/2 rounded or an if on n: the traces cannot see those bend.
func NewFunctionWithSignature(fn func(args []*tensor.Tensor) []*tensor.Tensor, sig ...InputSpec) *Function {
	f := NewFunction(fn)
	f.sig = slices.Clone(sig)
	f.gen.check = strings.Contains(os.Getenv("EAGERFLOW_DEBUG"), "sizes")
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
	learned  [][]int  // the sizes of the traces the rules come from, first to third
	same     [][]int8 // the quotients of sizes the learning traces could not tell apart (covers)
	gen      *generalization
	trusted  bool
	failed   bool
	outside  bool // a size outside the rules' reach was traced and logged
	// check (EAGERFLOW_DEBUG=sizes) traces every size the rules would
	// build too, and compares: a way to see that fn's numbers follow them.
	check bool
}

// learn takes the trace tr made at sizes (signature key) and returns a note
// to log when it shows the graph does not follow the sizes.
func (r *sizeRules) learn(tr *traced, sizes []int, key string) string {
	g := tr.g
	switch {
	case r.trusted && r.check && !r.failed && r.covers(sizes):
		built, err := r.gen.instantiate(sizes)
		if err == nil {
			err = sameGraph(built, g, nearTensor)
		}
		if err == nil {
			return ""
		}
		r.failed = true
		return fmt.Sprintf("trace: EAGERFLOW_DEBUG=sizes: at %s the graph the rules build differs from fn's trace (%v): "+
			"fn makes a number from a size otherwise than its traces at %v showed (see NewFunctionWithSignature); it traces once per size",
			key, err, r.learned)
	case r.trusted && !r.outside && !r.failed:
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
	r.learned = append(r.learned, sizes)
	if slices.Min(slices.Concat(r.learned...)) > 0 {
		var ok bool
		if r.same, ok = coincidences(r.learned); !ok {
			r.failed = true
			return fmt.Sprintf("trace: Function's signature leaves more than %d sizes to tell apart (traces at %v); it traces once per size",
				maxDistinctSizes, r.learned)
		}
	}
	r.trusted = true
	return ""
}

// covers reports whether trusted rules hold at sizes. A rule ties a
// number to a product of sizes (k*B, k*B*T, k/T) or to none, and the
// learning traces tell two products apart only where they differ there:
// a size that never varied looks like a constant, sizes that varied in
// proportion (square images) look like each other, and so on for any
// quotient of two products that the traces all gave the same value
// (r.same). Sizes must keep every such coincidence of the first trace's
// sizes, and be positive (no rule divides by or multiplies a size of 0).
func (r *sizeRules) covers(sizes []int) bool {
	for _, s := range append(slices.Clone(r.learned), sizes) {
		if slices.Min(s) <= 0 {
			return false
		}
	}
	for _, d := range r.same {
		if !sameQuotient(d, sizes, r.learned[0]) {
			return false
		}
	}
	return true
}

// coincidences lists the exponents d (per size, -2 to 2, not all 0) whose
// quotient Π s^d the traces at learned sizes (all positive) all give one
// value, so that two rules whose exponents differ by such a d agree on
// every learning trace: sizes equal at every trace (one batch in two
// arguments) as one d each, then over the sizes left, the d with at most
// 2*maxRuleSizes sizes not 0, the first of those positive. It gives false
// where more than maxDistinctSizes sizes differ somewhere.
func coincidences(learned [][]int) ([][]int8, bool) {
	n := len(learned[0])
	column := func(i int) []int {
		c := make([]int, len(learned))
		for t, s := range learned {
			c[t] = s[i]
		}
		return c
	}
	var out [][]int8
	var distinct []int
	for i := range n {
		j := slices.IndexFunc(distinct, func(j int) bool { return slices.Equal(column(i), column(j)) })
		if j < 0 {
			distinct = append(distinct, i)
			continue
		}
		d := make([]int8, n)
		d[distinct[j]], d[i] = 1, -1
		out = append(out, d)
	}
	if len(distinct) > maxDistinctSizes {
		return nil, false
	}
	d := make([]int8, n)
	var pick func(from, left int, first bool)
	pick = func(from, left int, first bool) {
		if !first {
			kept := true
			for _, t := range learned[1:] {
				kept = kept && sameQuotient(d, t, learned[0])
			}
			if kept {
				out = append(out, slices.Clone(d))
			}
		}
		if left == 0 {
			return
		}
		for k := from; k < len(distinct); k++ {
			i := distinct[k]
			for _, p := range []int8{1, 2, -1, -2} {
				if first && p < 0 {
					continue
				}
				d[i] = p
				pick(k+1, left-1, false)
			}
			d[i] = 0
		}
	}
	pick(0, 2*maxRuleSizes, true)
	return out, true
}

// maxDistinctSizes bounds the sizes a signature's rules tell apart (those
// that differ somewhere in the learning traces, or are not always equal).
const maxDistinctSizes = 8

// sameQuotient reports whether Π a^d equals Π b^d (sizes positive),
// exactly: num(a)·den(b) = num(b)·den(a), the sizes to positive powers in
// num and to negative ones in den.
func sameQuotient(d []int8, a, b []int) bool {
	left, right := big.NewInt(1), big.NewInt(1) // num(a)·den(b), num(b)·den(a)
	var x, y big.Int
	for i, e := range d {
		for range max(e, -e) {
			x.SetInt64(int64(a[i]))
			y.SetInt64(int64(b[i]))
			if e > 0 {
				left.Mul(left, &x)
				right.Mul(right, &y)
			} else {
				left.Mul(left, &y)
				right.Mul(right, &x)
			}
		}
	}
	return left.Cmp(right) == 0
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
