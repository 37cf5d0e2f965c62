package graph

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Printing graphs: a text listing (String) and Graphviz DOT (WriteDOT) with
// each execution frame drawn as a cluster, so a user can see what a trace
// made of their function.

// frames returns the frame each node runs in ("" for the root), following
// TensorFlow's rules: an Enter's output is in the Enter's frame (its node
// too, for drawing), an Exit leaves to the parent of its input's frame, and
// any other node is in the frame of its first input from a node before it
// (back edges from NextIteration come later).
func (g *Graph) frames() map[*Node]string {
	frame := map[*Node]string{}
	parent := map[string]string{}
	for _, n := range g.Nodes {
		in := ""
		for _, x := range n.Inputs {
			if x.Node.ID < n.ID && x.Node.Kind != Const {
				in = frame[x.Node]
				break
			}
		}
		switch n.Kind {
		case Enter:
			if p, ok := parent[n.Frame]; !ok || p == "" {
				parent[n.Frame] = in // an Enter of a constant does not tell
			}
			frame[n] = n.Frame
		case Exit:
			frame[n] = parent[in]
		default:
			frame[n] = in
		}
	}
	return frame
}

// Label is how a node is shown: its op with its attributes ("Reduce sum
// dims=[1] keepdims=false"), a constant's value when it is small ("Const
// 0.5 float64[]", else its dtype and shape), a placeholder's name, an Enter's
// frame; other control-flow nodes by their kind.
func (n *Node) Label() string {
	name, attrs := n.parts()
	if attrs == "" {
		return name
	}
	return name + " " + attrs
}

// parts is a node's name (its op's, or its kind) and what sets it apart
// (its attributes, a constant's value, a placeholder's name, a frame).
func (n *Node) parts() (name, attrs string) {
	switch n.Kind {
	case OpNode:
		return n.Name, eager.AttrString(n.Attrs)
	case Const:
		if n.Value.NumElements() <= maxConstShown && !n.Value.ValuesDropped() {
			return "Const", fmt.Sprint(n.Value) // with its dtype and shape
		}
		return "Const", tensor.Describe(n.Value)
	case Enter:
		if n.IsConstant {
			return "Enter", fmt.Sprintf("%q, constant", n.Frame)
		}
		return "Enter", fmt.Sprintf("%q", n.Frame)
	case Placeholder:
		return "Placeholder", n.Name
	}
	return n.Kind.String(), ""
}

// maxConstShown is the most elements a constant may have to show its
// values in a label.
const maxConstShown = 8

// outputRef is an output as a listing names it: "%3", with the output's index
// only where the node has several ("%3:1").
func outputRef(o Output) string {
	if o.Node.Outputs > 1 || o.Index > 0 {
		return fmt.Sprintf("%%%d:%d", o.Node.ID, o.Index)
	}
	return fmt.Sprintf("%%%d", o.Node.ID)
}

// specs is a node's outputs' dtypes and shapes: "float32[2 3]", several
// joined by ", "; "" where unknown.
func specs(n *Node) string {
	var parts []string
	for _, s := range n.Specs {
		parts = append(parts, fmt.Sprintf("%v%v", s.DType, s.Shape))
	}
	return strings.Join(parts, ", ")
}

// String lists the nodes one per line, in order: id, frame, the op or kind,
// its inputs (%id, with :output where the node has several outputs),
// control inputs (^id), its attributes in braces, and the outputs' dtypes
// and shapes where known:
//
//	%3 [while1] = Reduce(%2) {sum dims=[0] keepdims=false} -> float32[]
//	%4 = Const 0.5 float64[]
func (g *Graph) String() string {
	if g == nil {
		return "<nil graph>"
	}
	var b strings.Builder
	frame := g.frames()
	for _, n := range g.Nodes {
		fmt.Fprintf(&b, "%%%d", n.ID)
		if f := frame[n]; f != "" {
			fmt.Fprintf(&b, " [%s]", f)
		}
		name, attrs := n.parts()
		fmt.Fprintf(&b, " = %s", name)
		var args []string
		for _, in := range n.Inputs {
			args = append(args, outputRef(in))
		}
		for _, c := range n.Control {
			args = append(args, fmt.Sprintf("^%%%d", c.ID))
		}
		for _, c := range n.After {
			args = append(args, fmt.Sprintf("after %%%d", c.ID))
		}
		switch {
		case len(args) > 0:
			fmt.Fprintf(&b, "(%s)", strings.Join(args, ", "))
			if attrs != "" {
				fmt.Fprintf(&b, " {%s}", attrs)
			}
		case attrs != "": // a constant, a placeholder: no inputs
			b.WriteString(" " + attrs)
		}
		if s := specs(n); s != "" && n.Kind != Const { // a constant says its own
			b.WriteString(" -> " + s)
		}
		b.WriteByte('\n')
	}
	b.WriteString("results:")
	for _, r := range g.Result {
		b.WriteString(" " + outputRef(r))
	}
	b.WriteByte('\n')
	return b.String()
}

// nodeStyle sets apart what is not an op: inputs and constants as
// ellipses, control-flow primitives filled in grey.
func nodeStyle(n *Node) string {
	switch n.Kind {
	case OpNode:
		return ""
	case Placeholder, Const:
		return ", shape=ellipse, style=\"\""
	}
	return ", style=\"rounded,filled\", fillcolor=\"#eeeeee\""
}

// WriteDOT writes g in Graphviz's DOT language: nodes as boxes, data edges
// solid, control edges dashed, back edges (into a Merge from a
// NextIteration) drawn against the flow, and each frame a cluster nested
// in its parent's.
func (g *Graph) WriteDOT(w io.Writer) error {
	if w == nil {
		return errors.New("graph: WriteDOT: the writer is nil")
	}
	if g == nil {
		return errors.New("graph: WriteDOT: the graph is nil")
	}
	bw := bufio.NewWriter(w)
	frame := g.frames()
	children := map[string][]string{}
	members := map[string][]*Node{}
	seen := map[string]bool{"": true}
	for _, n := range g.Nodes {
		f := frame[n]
		members[f] = append(members[f], n)
		if n.Kind == Enter && !seen[f] {
			seen[f] = true
			p := ""
			for _, x := range n.Inputs {
				p = frame[x.Node]
			}
			children[p] = append(children[p], f)
		}
	}
	fmt.Fprintln(bw, "digraph eagerflow {")
	fmt.Fprintln(bw, "  graph [fontname=\"Helvetica\", fontsize=11];")
	fmt.Fprintln(bw, "  node [shape=box, style=rounded, fontname=\"Helvetica\", fontsize=11];")
	fmt.Fprintln(bw, "  edge [fontname=\"Helvetica\", fontsize=9, color=\"#555555\"];")
	var cluster func(f, indent string)
	cluster = func(f, indent string) {
		for _, n := range members[f] {
			// The op and its attributes, then its outputs' dtypes and
			// shapes, as TensorBoard's and Netron's graph views show them.
			name, attrs := n.parts()
			label := name
			if attrs != "" {
				label += "\n" + attrs
			}
			if s := specs(n); s != "" && n.Kind != Const {
				label += "\n" + s
			}
			fmt.Fprintf(bw, "%sn%d [label=%q%s];\n", indent, n.ID, label, nodeStyle(n))
		}
		for _, c := range children[f] {
			fmt.Fprintf(bw, "%ssubgraph %q {\n%s  label=%q; labeljust=l; style=rounded; color=\"#999999\";\n",
				indent, "cluster_"+c, indent, "frame "+c)
			cluster(c, indent+"  ")
			fmt.Fprintf(bw, "%s}\n", indent)
		}
	}
	cluster("", "  ")
	for _, n := range g.Nodes {
		for _, in := range n.Inputs {
			var attrs []string
			if in.Node.Outputs > 1 { // which output, only where there are several
				attrs = append(attrs, fmt.Sprintf("label=\"%d\"", in.Index))
			}
			if n.Kind == Merge && in.Node.Kind == NextIteration {
				attrs = append(attrs, "constraint=false", "color=blue")
			}
			attr := ""
			if len(attrs) > 0 {
				attr = " [" + strings.Join(attrs, ", ") + "]"
			}
			fmt.Fprintf(bw, "  n%d -> n%d%s;\n", in.Node.ID, n.ID, attr)
		}
		for _, c := range n.Control {
			fmt.Fprintf(bw, "  n%d -> n%d [style=dashed];\n", c.ID, n.ID)
		}
		for _, c := range n.After {
			fmt.Fprintf(bw, "  n%d -> n%d [style=dotted];\n", c.ID, n.ID)
		}
	}
	for i, r := range g.Result {
		fmt.Fprintf(bw, "  result%d [shape=plaintext, label=\"result %d\"];\n  n%d -> result%d;\n", i, i, r.Node.ID, i)
	}
	fmt.Fprintln(bw, "}")
	return bw.Flush()
}
