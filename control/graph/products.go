package graph

import (
	"slices"

	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// mergeProductSums rewrites each sum of three or more matrix products
// that contract over one axis, a tree of Adds read by nothing else whose
// leaves are MatMuls read by nothing else, as one product of the
// operands concatenated along that axis:
//
//	aᵢᵀ·bᵢ summed (MatMul transpose_a)   = [a₁; …; aₖ]ᵀ·[b₁; …; bₖ]
//	aᵢ·bᵢᵀ summed (MatMul transpose_b)   = [a₁ … aₖ]·[b₁ … bₖ]ᵀ
//
// This is the gradient of a weight shared by the steps of an unrolled
// loop (an RNN's recurrent kernel: a product of the state and the step's
// gate gradients a step, each added to the last): two copies and one
// product with k times the contraction, where it was k small products
// and k-1 additions. The sum is mathematically the same; its rounding is
// the one product's (float32 sums within the product, a half type's
// rounded once where each step's product and each addition rounded). The
// nodes must be in one frame, of rank 2, in one dtype; the tree's Adds
// must not broadcast.
func (g *Graph) mergeProductSums() {
	uses := map[*Node]int{}
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			uses[in.Node]++
		}
		for _, c := range n.Control {
			uses[c]++
		}
		for _, c := range n.After {
			uses[c]++
		}
	}
	for _, r := range g.Result {
		uses[r.Node]++
	}
	var frames map[*Node]string
	matmul, concat := eager.Lookup("MatMul"), eager.Lookup("Concatenate")
	merged := map[*Node][2]*Node{} // a rewritten root: the concatenations to place before it
	absorbed := map[*Node]bool{}
	for i := len(g.Nodes) - 1; i >= 0; i-- {
		root := g.Nodes[i]
		if absorbed[root] || !isAdd(root) {
			continue
		}
		var leaves []*Node
		var adds []*Node
		var gather func(n *Node)
		gather = func(n *Node) {
			if isAdd(n) && (n == root || uses[n] == 1) && sameSpec(n, root) {
				adds = append(adds, n)
				gather(n.Inputs[0].Node)
				gather(n.Inputs[1].Node)
				return
			}
			leaves = append(leaves, n)
		}
		gather(root)
		axis, ok := contraction(leaves, root, uses, matmul)
		if !ok {
			continue
		}
		if frames == nil {
			frames = framesOf(g)
		}
		if !sameFrame(frames, frames[root], adds, leaves) {
			continue
		}
		var as, bs []Output
		for _, l := range leaves {
			as, bs = append(as, l.Inputs[0]), append(bs, l.Inputs[1])
		}
		attrs := leaves[0].Attrs
		cats := [2]*Node{concatOf(concat, axis, as, root), concatOf(concat, axis, bs, root)}
		for _, n := range append(adds, leaves...) {
			absorbed[n] = true
		}
		root.Op, root.Name, root.Attrs = matmul, matmul.Name, attrs
		root.Inputs = []Output{cats[0].Out(0), cats[1].Out(0)}
		merged[root] = cats
	}
	if len(merged) == 0 {
		return
	}
	nodes := make([]*Node, 0, len(g.Nodes)+2*len(merged))
	for _, n := range g.Nodes {
		if cats, ok := merged[n]; ok {
			nodes = append(nodes, cats[0], cats[1])
		}
		nodes = append(nodes, n)
	}
	g.Nodes = nodes
	g.nodes.Store(int64(len(nodes)))
	g.Prune()
}

// isAdd reports whether n is an Add op node of two inputs.
func isAdd(n *Node) bool {
	return n.Kind == OpNode && n.Op != nil && n.Op.Name == "Add" && len(n.Inputs) == 2 && len(n.Control) == 0
}

// sameSpec reports whether n's output has root's dtype and shape, and so
// do its two inputs (an Add that broadcasts nothing).
func sameSpec(n, root *Node) bool {
	want, ok := root.Out(0).Spec()
	if !ok {
		return false
	}
	for _, o := range []Output{n.Out(0), n.Inputs[0], n.Inputs[1]} {
		s, ok := o.Spec()
		if !ok || s.DType != want.DType || !s.Shape.Equal(want.Shape) {
			return false
		}
	}
	return true
}

// contraction reports whether leaves are three or more rank-2 MatMuls of
// root's dtype and shape, each read only by the sum, contracting alike,
// and returns the axis their operands concatenate along: 0 where they
// take aᵀ·b, 1 where they take a·bᵀ.
func contraction(leaves []*Node, root *Node, uses map[*Node]int, matmul *eager.Op) (axis int, ok bool) {
	if len(leaves) < 3 || matmul == nil {
		return 0, false
	}
	first, _ := leaves[0].Attrs.(opattr.MatMulAttrs)
	switch first {
	case opattr.MatMulAttrs{TransposeA: true}:
		axis = 0
	case opattr.MatMulAttrs{TransposeB: true}:
		axis = 1
	default:
		return 0, false
	}
	want, _ := root.Out(0).Spec()
	for _, l := range leaves {
		if l.Kind != OpNode || l.Op != matmul || l.Attrs != any(first) || len(l.Inputs) != 2 || uses[l] != 1 || len(l.Control) > 0 {
			return 0, false
		}
		for _, in := range l.Inputs {
			s, ok := in.Spec()
			if !ok || s.DType != want.DType || len(s.Shape) != 2 {
				return 0, false
			}
		}
	}
	return axis, true
}

// sameFrame reports whether every node of the lists runs in frame.
func sameFrame(frames map[*Node]string, frame string, lists ...[]*Node) bool {
	for _, list := range lists {
		if slices.ContainsFunc(list, func(n *Node) bool { return frames[n] != frame }) {
			return false
		}
	}
	return true
}

// concatOf is a Concatenate node of xs along axis, on root's device.
func concatOf(op *eager.Op, axis int, xs []Output, root *Node) *Node {
	s0, _ := xs[0].Spec()
	shape := slices.Clone(s0.Shape)
	shape[axis] = 0
	for _, x := range xs {
		s, _ := x.Spec()
		shape[axis] += s.Shape[axis]
	}
	return &Node{Kind: OpNode, Op: op, Name: op.Name, Attrs: opattr.AxisAttrs{Axis: axis}, Inputs: slices.Clone(xs), Outputs: 1,
		Specs: []eager.Out{{DType: s0.DType, Shape: tensor.Shape(shape)}}, Device: root.Device}
}
