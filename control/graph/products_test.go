package graph

import (
	"fmt"
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// productSum builds a graph summing k products of inputs aᵢ and bᵢ by a
// left-deep chain of Adds, as a tape sums a shared weight's gradients,
// with the products' attributes; extra, where not nil, changes the graph
// after (a second reader of a product, a broadcast).
func productSum(k int, attrs opattr.MatMulAttrs, as, bs []*tensor.Tensor, extra func(g *Graph, leaves []*Node, sum *Node)) *Graph {
	g := &Graph{}
	apply := func(name string, attrs any, spec eager.Out, in ...Output) *Node {
		n := g.Apply(eager.Lookup(name), attrs, 1, in...)
		n.Specs = []eager.Out{spec}
		return n
	}
	input := func(name string, x *tensor.Tensor) Output {
		p := g.Input(name)
		p.Node.Specs = []eager.Out{{DType: x.DType(), Shape: x.Shape()}}
		return p
	}
	var sum *Node
	var leaves []*Node
	for i := range k {
		a, b := input(fmt.Sprint("a", i), as[i]), input(fmt.Sprint("b", i), bs[i])
		p := ops.MatMulT(as[i], bs[i], attrs.TransposeA, attrs.TransposeB)
		spec := eager.Out{DType: p.DType(), Shape: p.Shape()}
		leaf := apply("MatMul", attrs, spec, a, b)
		leaves = append(leaves, leaf)
		if sum == nil {
			sum = leaf
			continue
		}
		sum = apply("Add", nil, spec, sum.Out(0), leaf.Out(0))
	}
	g.Result = []Output{sum.Out(0)}
	if extra != nil {
		extra(g, leaves, sum)
	}
	return g
}

// count is how many op nodes of g run the op named name.
func count(g *Graph, name string) int {
	n := 0
	for _, x := range g.Nodes {
		if x.Kind == OpNode && x.Op.Name == name {
			n++
		}
	}
	return n
}

// A sum of three or more products contracting over one axis (aᵀ·b, or
// a·bᵀ) becomes one product of the operands concatenated, which computes
// the sum to float32's rounding; a sum of two, a product read elsewhere
// too, products of other transposes and an Add that broadcasts are left
// as they are.
func TestMergeProductSums(t *testing.T) {
	r := tensor.NewRNG(5)
	operands := func(k int, shape func(i int) ([]int, []int)) (as, bs []*tensor.Tensor) {
		for i := range k {
			sa, sb := shape(i)
			as, bs = append(as, tensor.RandNormal(r, tensor.Float32, sa...)), append(bs, tensor.RandNormal(r, tensor.Float32, sb...))
		}
		return as, bs
	}
	rows := func(i int) ([]int, []int) { return []int{3 + i, 4}, []int{3 + i, 5} } // aᵀ·b: [4 5], rows of each step's own count
	cols := func(i int) ([]int, []int) { return []int{4, 2 + i}, []int{5, 2 + i} } // a·bᵀ
	for _, c := range []struct {
		name   string
		k      int
		attrs  opattr.MatMulAttrs
		shape  func(i int) ([]int, []int)
		extra  func(g *Graph, leaves []*Node, sum *Node)
		merged bool
	}{
		{"aᵀ·b, 6 steps", 6, opattr.MatMulAttrs{TransposeA: true}, rows, nil, true},
		{"a·bᵀ, 4 steps", 4, opattr.MatMulAttrs{TransposeB: true}, cols, nil, true},
		{"aᵀ·b, 2 steps", 2, opattr.MatMulAttrs{TransposeA: true}, rows, nil, false},
		{"a·b", 4, opattr.MatMulAttrs{}, func(i int) ([]int, []int) { return []int{4, 3}, []int{3, 5} }, nil, false},
		{"a sum that broadcasts", 4, opattr.MatMulAttrs{TransposeA: true}, func(i int) ([]int, []int) {
			if i == 0 {
				return []int{3, 1}, []int{3, 5} // [1 5], broadcast over [4 5]
			}
			return rows(i)
		}, nil, false},
		{"a product read twice", 4, opattr.MatMulAttrs{TransposeA: true}, rows, func(g *Graph, leaves []*Node, _ *Node) {
			g.Result = append(g.Result, leaves[1].Out(0))
		}, false},
		{"an inner sum read twice", 4, opattr.MatMulAttrs{TransposeA: true}, rows, func(g *Graph, _ []*Node, sum *Node) {
			g.Result = append(g.Result, sum.Inputs[0])
		}, false},
	} {
		as, bs := operands(c.k, c.shape)
		g := productSum(c.k, c.attrs, as, bs, c.extra)
		args := append(append([]*tensor.Tensor{}, as...), bs...)
		var in []*tensor.Tensor
		for i := range c.k { // the placeholders' order: a0, b0, a1, b1, ...
			in = append(in, args[i], args[c.k+i])
		}
		want, err := Execute(g, in...)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		g.mergeProductSums()
		products, adds := count(g, "MatMul"), count(g, "Add")
		if merged := products == 1 && adds == 0 && count(g, "Concatenate") == 2; merged != c.merged {
			t.Errorf("%s: %d products, %d sums and %d concatenations after the pass; merged %v, want %v", c.name, products, adds, count(g, "Concatenate"), merged, c.merged)
		}
		got, err := Execute(g, in...)
		if err != nil {
			t.Fatalf("%s, after the pass: %v", c.name, err)
		}
		for i := range want {
			w, h := tensor.ToSlice[float32](want[i]), tensor.ToSlice[float32](got[i])
			for j := range w {
				if math.Abs(float64(w[j]-h[j])) > 1e-5*(1+math.Abs(float64(w[j]))) {
					t.Fatalf("%s: result %d element %d: %g after the pass, %g before", c.name, i, j, h[j], w[j])
				}
			}
		}
	}
}
