package graph

import (
	"fmt"
	"slices"
)

// Lifted Switches. A Cond's gradient is a Cond on the same predicate
// whose branches read the forward branches' values: a Switch of the
// gradient Cond reading a value made inside a forward branch on its own
// predicate lies where the forward Cond does (the value is alive exactly
// where that side is read, the two Conds deciding alike), and may be read
// on that side only. Where the value was made deeper, inside Conds nested
// in that branch (a Case's branches), it is alive only where those Conds
// took their sides too: the Switch owes their decisions, outermost first,
// and each of its readers must be a Switch of a Cond deciding the first
// (its predicate that Cond's, or a Switch's routing of it: the gradient's
// own nested Cond) read on that side only, owing the rest in turn.

// decision is a Cond's predicate and the side it takes.
type decision struct {
	pred Output
	side int
}

// switchPlace is where a Cond's Switch n lies: where its inputs do,
// except that a value from a branch of another Cond on the same
// predicate, or from Conds nested in such a branch, is read from that
// Cond's place, on the side of the branch it came from only (lifted: -1
// where no value is), owing the nested Conds' decisions.
func (lw *lowering) switchPlace(n *Node) (r *region, lifted int, owed []decision, why string) {
	lifted = -1
	r, why = lw.deepestOf(n, func(in Output) *region {
		q := lw.outRegion(in)
		if in != n.Inputs[0] {
			return q
		}
		var inner []decision
		for a := q; a != nil && a.kind == branchRegion; a = a.parent {
			if a.of.pred == n.Inputs[1] {
				lifted, owed = a.side, inner
				return a.parent
			}
			inner = append([]decision{{a.of.pred, a.side}}, inner...)
		}
		return q
	})
	return r, lifted, owed, why
}

// liftedOther reports whether side is the dead side of a lifted Switch.
func (lw *lowering) liftedOther(sw *Node, side int) bool {
	b, ok := lw.lifted[sw]
	return ok && b != side
}

// settleOwed checks that the readers of each lifted Switch that owes
// decisions make them (lifting each such reader in turn), or says why
// not.
func (lw *lowering) settleOwed() string {
	readers := map[Output][]*Node{}
	for _, m := range lw.g.Nodes {
		for _, in := range m.Inputs {
			readers[in] = append(readers[in], m)
		}
	}
	queue := make([]*Node, 0, len(lw.owed))
	for n := range lw.owed {
		queue = append(queue, n)
	}
	slices.SortFunc(queue, func(a, b *Node) int { return a.ID - b.ID })
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		owed, out := lw.owed[n], n.Out(lw.lifted[n])
		for _, m := range readers[out] {
			if m.Kind != Switch || m.Cond == 0 || m.Inputs[0] != out || !routes(m.Inputs[1], owed[0].pred) {
				return fmt.Sprintf("%v reads %v, a value alive only where a Cond inside another decides as it did", m, n)
			}
			if side, ok := lw.lifted[m]; ok && side != owed[0].side {
				return fmt.Sprintf("%v is read on two sides", m)
			}
			lw.lifted[m] = owed[0].side
			if len(owed) > 1 {
				lw.owed[m] = owed[1:]
				queue = append(queue, m)
			}
		}
	}
	return ""
}

// routes reports whether p is the value want, or a Cond Switch's routing
// of it (alive only where it is).
func routes(p, want Output) bool {
	for p != want {
		if p.Node.Kind != Switch || p.Node.Cond == 0 {
			return false
		}
		p = p.Node.Inputs[0]
	}
	return true
}
