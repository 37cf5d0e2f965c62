package trace

import (
	"fmt"
	"math"
	"reflect"
	"slices"

	"github.com/eagerflow/eagerflow/control/graph"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Generalising a trace over the unknown dims of a signature. Two traces of
// one function at different sizes that have the same nodes and wiring may
// still differ in numbers that came from the sizes: a shape attribute
// (Reshape to [B 4], a gradient's BroadcastTo), a constant of a
// size-dependent shape, a scalar such as a mean's divisor B*3 or its
// inverse. Each such number is matched against the sizes: an integer that
// is k times a product of unknown sizes at both traces (k a whole number:
// 2*B, B*T), a constant whose shape is so made and whose elements all hold
// one value that is the same at both, or k times a product of sizes each
// to the power 1 or -1 (1/(B*T*C), k*B/T), of at most maxRuleSizes sizes,
// the simplest rule that fits taken. The rules found rebuild the
// graph for any size without running fn; a third trace, at a third size,
// is compared with the rebuilt graph before the rules are trusted.

// sizeRule makes a number from the sizes: k times a product of sizes,
// each to the power 1 or -1 (exp; 0 leaves a size out): 2*B, B*T, 1/(B*T).
type sizeRule struct {
	k   float64
	exp []int8 // per size
}

func (r sizeRule) eval(sizes []int) float64 {
	v := r.k
	for s, e := range r.exp {
		switch e {
		case 1:
			v *= float64(sizes[s])
		case -1:
			v /= float64(sizes[s])
		}
	}
	return v
}

// maxRuleSizes is the most sizes one rule multiplies: 1/(B*H*W) at most.
const maxRuleSizes = 3

// monomials calls try with each product of sizes a rule may take, as
// exponents per size, fewer sizes first: only sizes that changed between
// a and b (and are not 0) take part, at most maxRuleSizes of them, each
// to the power 1, or with inverse, 1 or -1. It stops where try returns
// true.
func monomials(a, b []int, inverse bool, try func(exp []int8) bool) bool {
	var changed []int
	for s := range a {
		if a[s] != b[s] && a[s] != 0 && b[s] != 0 {
			changed = append(changed, s)
		}
	}
	powers := []int8{1}
	if inverse {
		powers = []int8{1, -1}
	}
	exp := make([]int8, len(a))
	// pick gives left more of the changed sizes, from changed[from] on, a
	// power each.
	var pick func(from, left int) bool
	pick = func(from, left int) bool {
		if left == 0 {
			return try(slices.Clone(exp))
		}
		for i := from; i < len(changed); i++ {
			for _, p := range powers {
				exp[changed[i]] = p
				if pick(i+1, left-1) {
					return true
				}
			}
			exp[changed[i]] = 0
		}
		return false
	}
	for n := 1; n <= min(len(changed), maxRuleSizes); n++ {
		if pick(0, n) {
			return true
		}
	}
	return false
}

// product is the product of the sizes a rule's exponents name, the
// sizes to the power 1 only (as intRule takes them).
func product(exp []int8, sizes []int) int64 {
	p := int64(1)
	for s, e := range exp {
		if e != 0 {
			p *= int64(sizes[s])
		}
	}
	return p
}

// intRule finds the rule making x at sizes a and y at sizes b: a whole
// multiple of a product of sizes that changed.
func intRule(x, y int64, a, b []int) (rule sizeRule, found bool) {
	found = monomials(a, b, false, func(exp []int8) bool {
		pa, pb := product(exp, a), product(exp, b)
		if x%pa == 0 && y%pb == 0 && x/pa == y/pb {
			rule = sizeRule{k: float64(x / pa), exp: exp}
			return true
		}
		return false
	})
	return rule, found
}

// valueRule finds the rule making the float x at sizes a and y at b: k
// times a product of sizes that changed, each to the power 1 or -1, to
// float32 precision.
func valueRule(x, y float64, a, b []int) (rule sizeRule, found bool) {
	near := func(p, q float64) bool { return math.Abs(p-q) <= 1e-6*math.Max(math.Abs(p), math.Abs(q)) }
	found = monomials(a, b, true, func(exp []int8) bool {
		unit := sizeRule{k: 1, exp: exp}
		if ka, kb := x/unit.eval(a), y/unit.eval(b); near(ka, kb) {
			rule = sizeRule{k: ka, exp: exp}
			return true
		}
		return false
	})
	return rule, found
}

// attrPatch sets the integer at path (field and element indices) of a
// node's attributes by rule.
type attrPatch struct {
	path []int
	rule sizeRule
}

// constRule rebuilds a constant: its shape dim by dim (a rule where the
// dim follows a size) filled with one value (fixed or by rule).
type constRule struct {
	dtype tensor.DType
	dims  []int       // the first trace's dims
	rules []*sizeRule // per dim: nil where fixed
	value float64
	vrule *sizeRule
}

// deviceOf is the device g runs on.
func deviceOf(g *graph.Graph) device.Device {
	if g.Device == nil {
		return device.Host()
	}
	return g.Device
}

// generalization is how a graph follows the sizes: the first trace, the
// sizes it was made at, and per node ID what to rebuild.
type generalization struct {
	g      *graph.Graph
	sizes  []int
	attrs  map[int][]attrPatch
	consts map[int]*constRule
}

// unknownSizes lists the values of sig's unknown dims in args.
func unknownSizes(sig []InputSpec, args []*tensor.Tensor) []int {
	var out []int
	for i, s := range sig {
		for d, n := range s.Shape {
			if n < 0 {
				out = append(out, args[i].Dim(d))
			}
		}
	}
	return out
}

// generalize finds the rules that turn a (traced at sizes sa) into b
// (traced at sb), or says what no rule explains.
func generalize(a, b *graph.Graph, sa, sb []int) (*generalization, error) {
	if len(a.Nodes) != len(b.Nodes) || len(a.Result) != len(b.Result) {
		return nil, fmt.Errorf("%d nodes and %d results against %d and %d", len(a.Nodes), len(a.Result), len(b.Nodes), len(b.Result))
	}
	for i, r := range a.Result {
		if r.Node.ID != b.Result[i].Node.ID || r.Index != b.Result[i].Index {
			return nil, fmt.Errorf("result %d comes from different nodes", i)
		}
	}
	gen := &generalization{g: a, sizes: sa, attrs: map[int][]attrPatch{}, consts: map[int]*constRule{}}
	for i, x := range a.Nodes {
		y := b.Nodes[i]
		if err := sameNode(x, y, nil); err != nil {
			return nil, fmt.Errorf("node %v: %v", x, err)
		}
		if x.Kind == graph.Const {
			if !sameTensor(x.Value, y.Value) {
				r, err := constRuleOf(x.Value, y.Value, sa, sb)
				if err != nil {
					return nil, fmt.Errorf("node %v: %v", x, err)
				}
				gen.consts[x.ID] = r
			}
			continue
		}
		var patches []attrPatch
		ok := diffInts(reflect.ValueOf(x.Attrs), reflect.ValueOf(y.Attrs), nil, func(path []int, p, q int64) bool {
			r, found := intRule(p, q, sa, sb)
			patches = append(patches, attrPatch{path: path, rule: r})
			return found
		})
		if !ok {
			return nil, fmt.Errorf("node %v: attributes %#v against %#v", x, x.Attrs, y.Attrs)
		}
		if len(patches) > 0 {
			gen.attrs[x.ID] = patches
			// The rules must rebuild b's attributes exactly.
			rebuilt, err := patchAttrs(x.Attrs, patches, sb)
			if err != nil || fmt.Sprintf("%#v", rebuilt) != fmt.Sprintf("%#v", y.Attrs) {
				return nil, fmt.Errorf("node %v: attributes %#v cannot be rebuilt for other sizes (%v)", x, x.Attrs, err)
			}
		}
	}
	return gen, nil
}

// constRuleOf explains two constants that differ.
func constRuleOf(x, y *tensor.Tensor, sa, sb []int) (*constRule, error) {
	if x.DType() != y.DType() || x.Rank() != y.Rank() {
		return nil, fmt.Errorf("the constant %s against %s", tensor.Describe(x), tensor.Describe(y))
	}
	r := &constRule{dtype: x.DType(), dims: x.Shape(), rules: make([]*sizeRule, x.Rank())}
	for d := range x.Rank() {
		if x.Dim(d) != y.Dim(d) {
			rule, ok := intRule(int64(x.Dim(d)), int64(y.Dim(d)), sa, sb)
			if !ok {
				return nil, fmt.Errorf("the constant %s against %s: dim %d follows no size", tensor.Describe(x), tensor.Describe(y), d)
			}
			r.rules[d] = &rule
		}
	}
	vx, okx := uniform(x)
	vy, oky := uniform(y)
	if !okx || !oky {
		return nil, fmt.Errorf("the constant %s against %s: not one value repeated", tensor.Describe(x), tensor.Describe(y))
	}
	r.value = vx
	if vx != vy {
		if !x.DType().IsFloat() {
			rule, ok := intRule(int64(vx), int64(vy), sa, sb)
			if !ok {
				return nil, fmt.Errorf("the constant %s against %s: its value follows no size", tensor.Describe(x), tensor.Describe(y))
			}
			r.vrule = &rule
		} else {
			rule, ok := valueRule(vx, vy, sa, sb)
			if !ok {
				return nil, fmt.Errorf("the constant %s against %s: its value follows no size", tensor.Describe(x), tensor.Describe(y))
			}
			r.vrule = &rule
		}
	}
	return r, nil
}

// uniform returns the one value every element of x holds (as float64).
func uniform(x *tensor.Tensor) (float64, bool) {
	if x.NumElements() == 0 {
		return 0, true
	}
	v := tensor.ToSlice[float64](ops.Cast(x, tensor.Float64))
	for _, e := range v[1:] {
		if e != v[0] && !(math.IsNaN(e) && math.IsNaN(v[0])) {
			return 0, false
		}
	}
	return v[0], true
}

func (r *constRule) build(sizes []int, dev device.Device) *tensor.Tensor {
	dims := slices.Clone(r.dims)
	for d, rule := range r.rules {
		if rule != nil {
			dims[d] = int(math.Round(rule.eval(sizes)))
		}
	}
	v := r.value
	if r.vrule != nil {
		v = r.vrule.eval(sizes)
	}
	return tensor.FullOn(dev, r.dtype, v, dims...)
}

// diffInts walks a and b, values of one type, calling found with the path
// of each integer that differs; it returns false where they differ in
// anything else (or found does).
func diffInts(a, b reflect.Value, path []int, found func(path []int, x, y int64) bool) bool {
	if a.IsValid() != b.IsValid() {
		return false
	}
	if !a.IsValid() {
		return true
	}
	if a.Type() != b.Type() {
		return false
	}
	switch a.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return a.Int() == b.Int() || found(slices.Clone(path), a.Int(), b.Int())
	case reflect.Struct:
		for i := range a.NumField() {
			if !diffInts(a.Field(i), b.Field(i), append(path, i), found) {
				return false
			}
		}
		return true
	case reflect.Slice, reflect.Array:
		if a.Len() != b.Len() {
			return false
		}
		for i := range a.Len() {
			if !diffInts(a.Index(i), b.Index(i), append(path, i), found) {
				return false
			}
		}
		return true
	case reflect.Interface:
		return diffInts(a.Elem(), b.Elem(), path, found)
	}
	return fmt.Sprintf("%#v", a) == fmt.Sprintf("%#v", b)
}

// patchAttrs returns a copy of attrs with each patch's integer set by its
// rule at sizes.
func patchAttrs(attrs any, patches []attrPatch, sizes []int) (out any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r) // a field reflection cannot set
		}
	}()
	v := reflect.ValueOf(attrs)
	c := reflect.New(v.Type()).Elem()
	deepCopy(c, v)
	for _, p := range patches {
		at := c
		for _, i := range p.path {
			if at.Kind() == reflect.Struct {
				at = at.Field(i)
			} else {
				at = at.Index(i)
			}
		}
		at.SetInt(int64(math.Round(p.rule.eval(sizes))))
	}
	return c.Interface(), nil
}

// deepCopy copies src into dst, slices included (fresh backing arrays).
func deepCopy(dst, src reflect.Value) {
	switch src.Kind() {
	case reflect.Struct:
		for i := range src.NumField() {
			deepCopy(dst.Field(i), src.Field(i))
		}
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		for i := range src.Len() {
			deepCopy(s.Index(i), src.Index(i))
		}
		dst.Set(s)
	case reflect.Array:
		for i := range src.Len() {
			deepCopy(dst.Index(i), src.Index(i))
		}
	default:
		dst.Set(src)
	}
}

// instantiate rebuilds the graph for sizes: fresh nodes, the rules'
// attributes and constants, the rest shared with the first trace.
func (gen *generalization) instantiate(sizes []int) (*graph.Graph, error) {
	g := &graph.Graph{}
	nodes := make([]*graph.Node, len(gen.g.Nodes))
	for i, n := range gen.g.Nodes {
		c := &graph.Node{}
		*c = *n
		nodes[i] = c
		if p, ok := gen.attrs[n.ID]; ok {
			a, err := patchAttrs(n.Attrs, p, sizes)
			if err != nil {
				return nil, err
			}
			c.Attrs = a
		}
		if r, ok := gen.consts[n.ID]; ok {
			c.Value = r.build(sizes, deviceOf(gen.g))
		}
	}
	remap := func(o graph.Output) graph.Output { return graph.Output{Node: nodes[o.Node.ID], Index: o.Index} }
	for _, c := range nodes {
		c.Inputs = slices.Clone(c.Inputs)
		for j, in := range c.Inputs {
			c.Inputs[j] = remap(in)
		}
		c.Control, c.After = slices.Clone(c.Control), slices.Clone(c.After)
		for j, x := range c.Control {
			c.Control[j] = nodes[x.ID]
		}
		for j, x := range c.After {
			c.After[j] = nodes[x.ID]
		}
	}
	g.Nodes = nodes
	for _, p := range gen.g.Inputs {
		g.Inputs = append(g.Inputs, nodes[p.ID])
	}
	for _, r := range gen.g.Result {
		g.Result = append(g.Result, remap(r))
	}
	g.Device = gen.g.Device
	return g, nil
}
