package graph

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Printing graphs: a text listing (String) and Graphviz DOT (WriteDOT) with
// each execution frame drawn as a cluster, so a user can see what a trace
// made of their function.

// frames returns the frame each node runs in ("" for the root): framesOf.
func (g *Graph) frames() map[*Node]string { return framesOf(g) }

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
// deviceColours fill the nodes of a graph's devices, in order.
var deviceColours = []string{"#cfe2f3", "#fce5cd", "#d9ead3", "#ead1dc", "#fff2cc", "#d0e0e3"}

// deviceStyle is n's style on a device drawn in colour: filled, the
// control-flow primitives with a bold border.
func deviceStyle(n *Node, colour string) string {
	switch n.Kind {
	case OpNode:
		return fmt.Sprintf(", style=\"rounded,filled\", fillcolor=%q", colour)
	case Placeholder, Const:
		return fmt.Sprintf(", shape=ellipse, style=filled, fillcolor=%q", colour)
	}
	return fmt.Sprintf(", style=\"rounded,filled,bold\", fillcolor=%q", colour)
}

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
// in its parent's. Where g spans devices (Placement), each node is filled
// with its device's colour and each device's nodes are a cluster of their
// own (its partition), holding its share of every frame.
func (g *Graph) WriteDOT(w io.Writer) error {
	if w == nil {
		return errors.New("graph: WriteDOT: the writer is nil")
	}
	if g == nil {
		return errors.New("graph: WriteDOT: the graph is nil")
	}
	bw := bufio.NewWriter(w)
	frame := g.frames()
	placed := g.Placement()
	var devices []device.Device // in order of first use
	children := map[string][]string{}
	type where struct {
		dev   device.Device
		frame string
	}
	members := map[where][]*Node{}
	seen := map[string]bool{"": true}
	for _, n := range g.Nodes {
		f, d := frame[n], placed[n]
		if !slices.Contains(devices, d) {
			devices = append(devices, d)
		}
		members[where{d, f}] = append(members[where{d, f}], n)
		if n.Kind == Enter && !seen[f] {
			seen[f] = true
			p := ""
			for _, x := range n.Inputs {
				p = frame[x.Node]
			}
			children[p] = append(children[p], f)
		}
	}
	split := len(devices) > 1
	fmt.Fprintln(bw, "digraph eagerflow {")
	fmt.Fprintln(bw, "  graph [fontname=\"Helvetica\", fontsize=11];")
	fmt.Fprintln(bw, "  node [shape=box, style=rounded, fontname=\"Helvetica\", fontsize=11];")
	fmt.Fprintln(bw, "  edge [fontname=\"Helvetica\", fontsize=9, color=\"#555555\"];")
	// has reports whether frame f or a frame inside it has nodes on d.
	var has func(d device.Device, f string) bool
	has = func(d device.Device, f string) bool {
		return len(members[where{d, f}]) > 0 || slices.ContainsFunc(children[f], func(c string) bool { return has(d, c) })
	}
	var cluster func(d device.Device, colour, f, indent string)
	cluster = func(d device.Device, colour, f, indent string) {
		for _, n := range members[where{d, f}] {
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
			style := nodeStyle(n)
			if split {
				style = deviceStyle(n, colour)
			}
			fmt.Fprintf(bw, "%sn%d [label=%q%s];\n", indent, n.ID, label, style)
		}
		for _, c := range children[f] {
			if !has(d, c) {
				continue
			}
			name := "cluster_" + c
			if split {
				name = "cluster_" + d.Name() + "_" + c
			}
			fmt.Fprintf(bw, "%ssubgraph %q {\n%s  label=%q; labeljust=l; style=rounded; color=\"#999999\";\n",
				indent, name, indent, "frame "+c)
			cluster(d, colour, c, indent+"  ")
			fmt.Fprintf(bw, "%s}\n", indent)
		}
	}
	if !split {
		cluster(devices[0], "", "", "  ")
	}
	for i, d := range devices {
		if !split {
			break
		}
		colour := deviceColours[i%len(deviceColours)]
		fmt.Fprintf(bw, "  subgraph %q {\n    label=%q; labeljust=l; style=\"rounded,dashed\"; color=%q;\n",
			"cluster_partition_"+d.Name(), "partition "+d.Name(), colour)
		cluster(d, colour, "", "    ")
		fmt.Fprintln(bw, "  }")
	}
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
