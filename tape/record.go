package tape

import (
	"sync/atomic"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/plumb"
	"github.com/eagerflow/eagerflow/tensor"
)

// node is one recorded op: its call (inputs and attributes) and outputs, or
// a custom gradient function in place of the op's rule.
type node struct {
	seq    uint64
	call   *eager.Call
	outs   []*tensor.Tensor
	custom func(dys []*tensor.Tensor) []*tensor.Tensor
	// release, on a region's node, releases what the region made inside
	// (internal/regions.RecordRegion).
	release func(keep func(*tensor.Tensor) bool)
	// ownsGrads, on a library region's node (a loop's, a Cond's: not a
	// user's custom gradient), says the gradients its backward returns
	// are its own, new tensors the backward pass may release once used.
	ownsGrads bool
	// versions holds, for each input that is a variable, how many times
	// it had been assigned when the op ran (checkVersions).
	versions []inputVersion
}

// inputVersion is a variable input's version when its op was recorded.
type inputVersion struct {
	input   int
	version uint64
}

// seq orders every recorded node in the process; backprop walks nodes in
// decreasing seq, which is the order they ran in on any one goroutine.
var seq atomic.Uint64

type recorder struct{}

func init() { eager.AddObserver(recorder{}) }

// tracked reports whether ops on x must be recorded: x was produced by a
// recorded op, is watched by a tape, or is a variable.
func tracked(x *tensor.Tensor) bool { return x.Autodiff() != nil || x.IsVariable() }

// Observe records c when an input is tracked. It runs only while some tape
// is recording; its state lives in the new node and the fresh outputs.
func (recorder) Observe(c *eager.Call, outs []*tensor.Tensor) {
	if c.Op.NonDifferentiable {
		return
	}
	for _, x := range c.Inputs {
		if tracked(x) {
			n := &node{call: c, outs: outs}
			for i, x := range c.Inputs {
				if x.IsVariable() {
					n.versions = append(n.versions, inputVersion{i, plumb.Tensor.Version(x)})
				}
			}
			record(n)
			return
		}
	}
}

// checkVersions panics when a variable that n's op read was assigned
// since and n's rule reads that input's values: the gradient would be
// computed from the new values, not the ones the op used.
func (n *node) checkVersions() {
	for _, iv := range n.versions {
		x := n.call.Inputs[iv.input]
		if plumb.Tensor.Version(x) != iv.version && n.call.Op.GradReadsInput(iv.input) {
			panic(tensor.NewError("tape", "Gradient", tensor.ErrValue, []*tensor.Tensor{x}, "",
				"variable %q, input %d of %s, was assigned after the op ran, and the op's gradient reads its values: the gradient would use the new ones; take the gradient before assigning (an optimizer's step), or run the forward pass again",
				variableName(x), iv.input, n.call.Op.Name))
		}
	}
}

func record(n *node) {
	n.seq = seq.Add(1)
	for i, o := range n.outs {
		prev := o.Autodiff()
		a := &tensor.Autodiff{Node: n, Index: i}
		if prev != nil {
			a.Watch = prev.Watch
		}
		plumb.Tensor.SetAutodiff(o, a)
	}
}

func producer(x *tensor.Tensor) *node {
	if a := x.Autodiff(); a != nil {
		if n, ok := a.Node.(*node); ok {
			return n
		}
	}
	return nil
}

// opName names the op n recorded, for errors: its op's name, or "a custom
// gradient function".
func (n *node) opName() string {
	if n.call != nil {
		return n.call.Op.Name
	}
	return "a custom gradient function"
}
