package graph

import (
	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/device"
)

// Placement returns the device each node of g runs on, as the executor
// will find it: a placeholder on the graph's device (its arguments'), a
// constant where its value is, an op node where the trace saw it run
// (Node.Device) or else, a ToDevice node on the device it copies
// to, a stack and its pushes and pops where the values pushed are, a
// NextIteration with the loop Merge it feeds, and every other node
// where its first input is (an op runs on its inputs' device; a
// control-flow primitive passes its data on); a node without inputs on
// the graph's device. The devices split g into the
// parts TensorFlow's partitions would be; WriteDOT draws them. A nil
// graph places nothing.
func (g *Graph) Placement() map[*Node]device.Device {
	if g == nil {
		return nil
	}
	at := make(map[*Node]device.Device, len(g.Nodes))
	push := map[*Node]*Node{} // a stack's first push: its values' device is the stack's
	for _, n := range g.Nodes {
		if n.Kind == StackPush && len(n.Inputs) == 2 {
			if s := stackOf(n); push[s] == nil {
				push[s] = n
			}
		}
	}
	var place func(n *Node) device.Device
	place = func(n *Node) device.Device {
		if d, ok := at[n]; ok {
			return d
		}
		at[n] = g.device() // a back edge met on the way sees this
		d := g.device()
		switch {
		case n.Kind == Const && n.Value != nil:
			d = n.Value.Device()
		case n.Kind == OpNode && isToDevice(n):
			d = n.Attrs.(opattr.DeviceAttrs).Device
		case n.Kind == OpNode && n.Device != nil:
			d = n.Device
		case n.Kind == Stack && push[n] != nil:
			d = place(push[n].Inputs[1].Node)
		case n.Kind == StackPush && len(n.Inputs) == 2 && push[stackOf(n)] == n:
			d = place(n.Inputs[1].Node)
		case n.Kind == StackPush && len(n.Inputs) == 2:
			// Every other push runs where the stack is, its value
			// crossing there, as its pops do: a stack is on one device.
			d = place(stackOf(n))
		case n.Kind != Placeholder && len(n.Inputs) > 0:
			d = place(n.Inputs[0].Node)
		}
		at[n] = d
		return d
	}
	for _, n := range g.Nodes {
		place(n)
	}
	// A NextIteration goes with the Merge it feeds back to, so that a
	// loop's back edges stay within a partition (its value crosses to it).
	for _, n := range g.Nodes {
		if n.Kind == Merge {
			for _, x := range n.Inputs {
				if x.Node.Kind == NextIteration {
					at[x.Node] = at[n]
				}
			}
		}
	}
	return at
}

// isToDevice reports whether op node n copies its input to a device.
func isToDevice(n *Node) bool {
	a, ok := n.Attrs.(opattr.DeviceAttrs)
	return ok && a.Device != nil && n.Op != nil && n.Op.Name == "ToDevice"
}
