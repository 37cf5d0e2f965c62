package graph

import (
	"errors"
	"fmt"
	"slices"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Checks in a recording. A check node (Node.Keep whose Attrs is a Check:
// a trace's guard that a decision goes as it went at the trace) reads its
// bool scalar on the host when it runs, which a recording cannot do. A
// recording runs its checks on the device instead: each check's node is
// replaced by the negation of its input, and after the graph's work the
// failures are joined by LogicalOrs into one flag, a result of the
// recording (with each failure, where there are several). Run reads the
// flag after each replay (a wait for the device, as stacks of guessed
// depth make one): where it is clear the results are the graph's, and
// the tail, recorded on its own, is replayed; where it is set, the run
// fails with the first failed check's error (Check.Failure) and the tail
// is not run, as Execute stops at the check. A straight-line graph's
// checks are recorded so; a graph with loops and checks is not recorded:
// a replay runs every node whatever a check finds, and a loop that a
// decision gone another way would never have reached might not end on
// the values it is given then.

// Check is the Attrs of a check node (Node.Keep): an op of one input, a
// bool scalar, that fails where the scalar differs from Expected.
type Check interface {
	// Expected is the value the input must hold.
	Expected() bool
	// Failure is the error the check's op raises where its input is got
	// (Expected's negation).
	Failure(got bool) error
}

// checkOf returns n's Check, or nil where n is no check node.
func checkOf(n *Node) Check {
	if n.Kind != OpNode || !n.Keep || len(n.Inputs) != 1 {
		return nil
	}
	c, _ := n.Attrs.(Check)
	return c
}

// hasChecks reports whether g has a check node.
func (g *Graph) hasChecks() bool {
	return slices.ContainsFunc(g.Nodes, func(n *Node) bool { return checkOf(n) != nil })
}

// deviceChecks returns g with its checks done on the device (the
// comment above), for a recording, and the checks in the order of their
// failures among the results past g's: the flag first, then, where there
// are several checks, each one's failure. g is not changed; the copy
// shares its nodes but the checks'.
func deviceChecks(g *Graph) (*Graph, []Check) {
	not, or := eager.Lookup("LogicalNot"), eager.Lookup("LogicalOr")
	h := &Graph{Nodes: slices.Clone(g.Nodes), Inputs: g.Inputs, Result: slices.Clone(g.Result), Device: g.Device}
	var checks []Check
	var failed []Output
	negated := func(x Output, like *Node) Output {
		return h.add(&Node{Kind: OpNode, Op: not, Name: not.Name, Inputs: []Output{x}, Outputs: 1, Specs: like.Specs, Device: like.Device}).Out(0)
	}
	for i, n := range g.Nodes {
		c := checkOf(n)
		if c == nil {
			continue
		}
		// The check's place holds its input's negation: where Expected is
		// true, that is its failure; where false, the failure is its
		// negation again, made after the graph's work.
		h.Nodes[i] = &Node{ID: i, Kind: OpNode, Op: not, Name: not.Name, Inputs: n.Inputs, Outputs: 1, Specs: n.Specs, Device: n.Device}
		checks = append(checks, c)
		failed = append(failed, h.Nodes[i].Out(0))
	}
	h.nodes.Store(int64(len(h.Nodes)))
	for i, c := range checks {
		if !c.Expected() {
			failed[i] = negated(failed[i], failed[i].Node)
		}
	}
	flag := failed[0]
	for _, f := range failed[1:] {
		flag = h.add(&Node{Kind: OpNode, Op: or, Name: or.Name, Inputs: []Output{flag, f}, Outputs: 1, Specs: f.Node.Specs, Device: f.Node.Device}).Out(0)
	}
	h.Result = append(h.Result, flag)
	if len(failed) > 1 {
		h.Result = append(h.Result, failed...)
	}
	return h, checks
}

// checkDecisions reads the flag of the run just replayed (a wait for the
// device) and returns the first failed check's error where one failed.
// A value error the device reports at that read (an index out of range,
// checked on the device) where a check failed is that check's doing, as
// Execute would have stopped at it: the check's error is returned.
func (r *Recorded) checkDecisions() error {
	flags := r.checkOut
	var failed []bool
	read := func() error {
		return tensor.Catch(func() {
			failed = failed[:0]
			if !flags[0].Item().(bool) {
				return
			}
			if len(flags) == 1 {
				failed = append(failed, true)
				return
			}
			for _, f := range flags[1:] {
				failed = append(failed, f.Item().(bool))
			}
		})
	}
	err := read()
	if err != nil {
		var te *tensor.Error
		if !errors.As(err, &te) || read() != nil {
			return fmt.Errorf("reading whether the graph's checks held: %w", err)
		}
		if len(failed) == 0 {
			return err
		}
	}
	for i, f := range failed {
		if f {
			return r.checks[i].Failure(!r.checks[i].Expected())
		}
	}
	return nil
}
