package graph

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
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

// Label is how a node is shown: its kind or op, and what sets it apart.
func (n *Node) Label() string {
	switch n.Kind {
	case OpNode:
		return n.Name
	case Const:
		return fmt.Sprintf("Const %v%v", n.Value.DType(), n.Value.Shape())
	case Enter:
		c := ""
		if n.IsConstant {
			c = ", constant"
		}
		return fmt.Sprintf("Enter %q%s", n.Frame, c)
	case Placeholder:
		return "Placeholder " + n.Name
	}
	return n.Kind.String()
}

// String lists the nodes one per line, in order: id, frame, label, inputs
// (as id:output), control inputs (^id), and the output shapes where known.
func (g *Graph) String() string {
	var b strings.Builder
	frame := g.frames()
	for _, n := range g.Nodes {
		fmt.Fprintf(&b, "%%%d", n.ID)
		if f := frame[n]; f != "" {
			fmt.Fprintf(&b, " [%s]", f)
		}
		fmt.Fprintf(&b, " = %s(", n.Label())
		for i, in := range n.Inputs {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%%%d:%d", in.Node.ID, in.Index)
		}
		for _, c := range n.Control {
			fmt.Fprintf(&b, ", ^%%%d", c.ID)
		}
		for _, c := range n.After {
			fmt.Fprintf(&b, ", after %%%d", c.ID)
		}
		b.WriteString(")")
		for i, s := range n.Specs {
			if i == 0 {
				b.WriteString(" ->")
			}
			fmt.Fprintf(&b, " %v%v", s.DType, s.Shape)
		}
		b.WriteByte('\n')
	}
	b.WriteString("results:")
	for _, r := range g.Result {
		fmt.Fprintf(&b, " %%%d:%d", r.Node.ID, r.Index)
	}
	b.WriteByte('\n')
	return b.String()
}

// WriteDOT writes g in Graphviz's DOT language: nodes as boxes, data edges
// solid, control edges dashed, back edges (into a Merge from a
// NextIteration) drawn against the flow, and each frame a cluster nested
// in its parent's.
func (g *Graph) WriteDOT(w io.Writer) error {
	if w == nil {
		return errors.New("graph: WriteDOT: the writer is nil")
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
	fmt.Fprintln(bw, "  node [shape=box, fontname=\"Helvetica\"];")
	var cluster func(f, indent string)
	cluster = func(f, indent string) {
		for _, n := range members[f] {
			fmt.Fprintf(bw, "%sn%d [label=%q];\n", indent, n.ID, fmt.Sprintf("%%%d %s", n.ID, n.Label()))
		}
		for _, c := range children[f] {
			fmt.Fprintf(bw, "%ssubgraph %q {\n%s  label=%q;\n", indent, "cluster_"+c, indent, "frame "+c)
			cluster(c, indent+"  ")
			fmt.Fprintf(bw, "%s}\n", indent)
		}
	}
	cluster("", "  ")
	for _, n := range g.Nodes {
		for i, in := range n.Inputs {
			attr := ""
			if n.Kind == Merge && in.Node.Kind == NextIteration {
				attr = " [constraint=false, color=blue]"
			}
			fmt.Fprintf(bw, "  n%d -> n%d [taillabel=\"%d\", headlabel=\"%d\"]%s;\n", in.Node.ID, n.ID, in.Index, i, attr)
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
