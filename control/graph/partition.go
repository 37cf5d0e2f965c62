package graph

import (
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Partitioning, as TensorFlow cuts a graph between devices ("Implementation
// of Control Flow in TensorFlow", distributed execution): Partition cuts g
// by Placement into one graph per device, each run by an executor of its
// own at once with the others, so that the devices overlap. Every edge
// between two partitions becomes a send in the producer's and a receive in
// the consumer's, keyed by the edge and tagged with the frame iterations
// of the value (a dead value travels as the dead flag, so a branch not
// taken is not taken on the other side either). A receive is triggered in
// its frame and iteration by its partition's pivot of the frame: the live
// output of a loop's Switch there, or, in a partition that holds none of
// the loop's primitives, a control loop of its own (Enter, Merge, a Switch
// on the loop's predicate received from its partition at every
// iteration, NextIteration, Exit), which runs as many iterations as the
// loop; at the top level, a constant. Placeholders and constants are
// copied into every partition that reads them.

// Partitioned is a graph cut into one graph per device (Partition).
type Partitioned struct {
	// Parts are the partitions, on Devices[i] each, in the order the
	// devices are first used in the graph; Ranks[i] is the process that
	// runs part i (0 for all without PartitionOptions.RankOf).
	Parts   []*Graph
	Devices []device.Device
	Ranks   []int
	// results[i] is where the graph's result i is: a partition and its
	// result index there.
	results []partResult
	edges   int // transfers, for the mailbox's keys
	o       PartitionOptions

	mu   sync.Mutex // one call at a time: the mailbox is the call's
	mail *partMail
}

// Exchange carries the values that cross between the processes of a
// partitioned graph (a collective.Rendezvous is one): Post sends a value
// or the dead flag under a key and does not wait; Await calls done once
// the value under key from rank from has arrived (done must not block).
// Values posted twice under one key are taken in order.
type Exchange interface {
	Post(to int, key string, t *tensor.Tensor, dead bool) error
	Await(from int, key string, done func(t *tensor.Tensor, dead bool, err error))
}

// PartitionOptions spread a graph's partitions over processes: every
// process cuts the same graph (its own trace of the same function) the
// same way, and runs the partitions RankOf gives it.
type PartitionOptions struct {
	// RankOf is the process that runs the partition of device d; nil:
	// this process runs every partition.
	RankOf func(d device.Device) int
	// Rank is this process's rank; Exchange carries what crosses between
	// processes (needed where RankOf gives other ranks).
	Rank     int
	Exchange Exchange
}

type partResult struct{ part, index int }

// Partition cuts g into one graph per device of its Placement. A graph
// on one device gives one part, g itself. A control or ordering edge that
// crosses waits on the receive of its node's output (of a token sent
// once it ran, for a node without outputs); a loop's next iteration that
// waits for another partition's stack pushes has that partition's next
// iteration wait for them too. A stack, its pushes and pops are on one
// device (Placement), values crossing to and from it.
func Partition(g *Graph) (*Partitioned, error) { return PartitionWith(g, PartitionOptions{}) }

// PartitionWith is Partition with the partitions spread over processes
// by o: Execute then runs this process's partitions, values crossing to
// or from another process's through o.Exchange.
func PartitionWith(g *Graph, o PartitionOptions) (*Partitioned, error) {
	if g == nil {
		return nil, errors.New("graph: Partition: the graph is nil")
	}
	if o.RankOf != nil && o.Exchange == nil {
		return nil, errors.New("graph: Partition: ranks without an Exchange to carry values between them")
	}
	placed := g.Placement()
	p := &Partitioned{o: o}
	for _, n := range g.Nodes {
		if d := placed[n]; !slices.Contains(p.Devices, d) && n.Kind != Placeholder && n.Kind != Const {
			p.Devices = append(p.Devices, d)
		}
	}
	if len(p.Devices) == 0 {
		p.Devices = []device.Device{g.device()}
	}
	for _, d := range p.Devices {
		p.Ranks = append(p.Ranks, p.rankOf(d))
	}
	if len(p.Devices) == 1 {
		p.Parts = []*Graph{g}
		for i := range g.Result {
			p.results = append(p.results, partResult{0, i})
		}
		return p, nil
	}
	identity := eager.Lookup("Identity")
	if identity == nil {
		return nil, errors.New("graph: Partition: no Identity op registered (package ops is not linked in)")
	}
	c := &cutter{g: g, p: p, placed: placed, frame: framesOf(g), copies: map[partNode]*Node{},
		recvs: map[partOut]Output{}, triggers: map[partFrame]*Node{}, pivots: map[partFrame]*Node{}, nexts: map[partFrame]*Node{},
		identityOp: identity, recvOp: partRecvOp}
	c.index()
	for _, d := range p.Devices {
		part := &Graph{Device: d}
		for _, in := range g.Inputs {
			c.copies[partNode{part, in}] = part.Input(in.Name).Node
		}
		p.Parts = append(p.Parts, part)
	}
	for _, n := range g.Nodes {
		if n.Kind == Placeholder || n.Kind == Const {
			continue // copied where they are read
		}
		if _, err := c.copyNode(c.partOf(n), n); err != nil {
			return nil, err
		}
	}
	if err := c.orderAfter(); err != nil {
		return nil, err
	}
	for _, r := range g.Result {
		part := 0
		if r.Node.Kind != Placeholder && r.Node.Kind != Const {
			part = slices.Index(p.Devices, placed[r.Node])
		}
		out, err := c.use(p.Parts[part], r)
		if err != nil {
			return nil, err
		}
		p.Parts[part].Result = append(p.Parts[part].Result, out)
		p.results = append(p.results, partResult{part, len(p.Parts[part].Result) - 1})
	}
	for _, part := range p.Parts {
		for _, n := range part.Nodes {
			// Pivots, sends and control loops have no readers.
			if n.Kind == OpNode && (n.Op == partSendOp || n.Op == partRecvOp || n.Op == c.identityOp) || n.Kind == Exit {
				n.Keep = true
			}
		}
	}
	return p, nil
}

// framesOf returns the frame each node of g runs in ("" for the root),
// following TensorFlow's rules: an Enter's output is in the Enter's frame
// (its node too, for drawing), an Exit leaves to the parent of its
// input's frame, and any other node is in the frame of its first input
// from a node before it that is not a constant (back edges from
// NextIteration come later), or failing that of its first control input
// (a constant gated into a loop by a control edge runs in the loop).
func framesOf(g *Graph) map[*Node]string {
	frame, parent := map[*Node]string{}, map[string]string{}
	for _, n := range g.Nodes {
		in, found := "", false
		for _, x := range n.Inputs {
			if x.Node.ID < n.ID && x.Node.Kind != Const {
				in, found = frame[x.Node], true
				break
			}
		}
		if !found && len(n.Control) > 0 {
			in = frame[n.Control[0]]
		}
		switch n.Kind {
		case Enter:
			if _, ok := parent[n.Frame]; !ok && !n.IsConstant {
				parent[n.Frame] = in
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

// cutter builds the partitions of g.
type cutter struct {
	g                  *Graph
	p                  *Partitioned
	placed             map[*Node]device.Device
	frame              map[*Node]string
	parent             map[string]string // a frame's parent frame
	enter              map[string]*Node  // a frame's first (non-constant) Enter, for its settings
	pred               map[string]Output // a frame's loop predicate (a Switch's input 1)
	copies             map[partNode]*Node
	recvs              map[partOut]Output
	later              []pendingAfter      // ordering edges to give their own partition's next iteration
	nexts              map[partFrame]*Node // a partition's NextIteration of a frame (its control loop's)
	triggers           map[partFrame]*Node // a node live at every iteration of a frame, in a part (a loop Merge)
	pivots             map[partFrame]*Node // a node live at the frame's live iterations, in a part
	identityOp, recvOp *eager.Op
}

// pendingAfter is a NextIteration's wait, in frame, on node x of
// another partition.
type pendingAfter struct {
	frame string
	x     *Node
}

type partNode struct {
	part *Graph
	n    *Node
}

type partOut struct {
	part *Graph
	out  Output
}

type partFrame struct {
	part  *Graph
	frame string
}

// index finds each frame's parent, settings and predicate.
func (c *cutter) index() {
	c.parent, c.enter, c.pred = map[string]string{}, map[string]*Node{}, map[string]Output{}
	for _, n := range c.g.Nodes {
		switch n.Kind {
		case Enter:
			if _, ok := c.enter[n.Frame]; !ok && !n.IsConstant {
				c.enter[n.Frame] = n
			}
			if _, ok := c.parent[n.Frame]; !ok && len(n.Inputs) > 0 && !n.IsConstant {
				c.parent[n.Frame] = c.frame[n.Inputs[0].Node]
			}
		case Switch:
			if f := c.frame[n]; f != "" {
				if _, ok := c.pred[f]; !ok && c.isLoopSwitch(n) {
					c.pred[f] = n.Inputs[1]
				}
			}
		}
	}
}

// isLoopSwitch reports whether Switch n is a loop's (its data comes from
// a Merge of its frame), not a conditional's inside the loop.
func (c *cutter) isLoopSwitch(n *Node) bool {
	m := n.Inputs[0].Node
	return m.Kind == Merge && c.frame[m] == c.frame[n]
}

func (c *cutter) partOf(n *Node) *Graph {
	return c.p.Parts[slices.Index(c.p.Devices, c.placed[n])]
}

// copyNode returns n's copy in part, making what it reads first (so that
// a partition lists its nodes in an order the executor can take: inputs
// before their readers, but for loops' back edges).
func (c *cutter) copyNode(part *Graph, n *Node) (*Node, error) {
	if m, ok := c.copies[partNode{part, n}]; ok {
		return m, nil
	}
	m := &Node{Kind: n.Kind, Name: n.Name, Op: n.Op, Attrs: n.Attrs, Frame: n.Frame, IsConstant: n.IsConstant, Cond: n.Cond, Capacity: n.Capacity, Depth: n.Depth,
		ParallelIterations: n.ParallelIterations, Value: n.Value, Outputs: n.Outputs, Specs: n.Specs, Fused: n.Fused, Keep: n.Keep,
		Device: n.Device, fused: n.fused}
	for _, x := range n.Inputs {
		if x.Node.Kind == NextIteration && x.Node.ID > n.ID {
			continue // a back edge: set when its NextIteration is copied
		}
		in, err := c.use(part, x)
		if err != nil {
			return nil, err
		}
		m.Inputs = append(m.Inputs, in)
	}
	for _, x := range n.Control {
		if c.partOf(x) != part {
			// Waiting on a node of another partition: on the receive of
			// its output (or token), which comes after it and is dead
			// with it.
			r, err := c.signal(part, x)
			if err != nil {
				return nil, err
			}
			m.Control = append(m.Control, r)
			continue
		}
		cx, err := c.copyNode(part, x)
		if err != nil {
			return nil, err
		}
		m.Control = append(m.Control, cx)
	}
	for _, x := range n.After {
		if c.partOf(x) != part {
			// n runs after a node of another partition: here after the
			// receive of its output or token (which comes, live or dead,
			// once it ran). For a loop's next iteration waiting for a stack push,
			// that keeps the loop, its count included, from running ahead
			// of the pushes its gradient pops; there, that partition's
			// next iteration waits for the push too (orderAfter), which
			// keeps its pushes in iteration order.
			r, err := c.signal(part, x)
			if err != nil {
				return nil, err
			}
			m.After = append(m.After, r)
			if n.Kind == NextIteration {
				c.later = append(c.later, pendingAfter{c.frame[n], x})
			}
			continue
		}
		cx, err := c.copyNode(part, x)
		if err != nil {
			return nil, err
		}
		m.After = append(m.After, cx)
	}
	if done, ok := c.copies[partNode{part, n}]; ok { // made meanwhile (a loop's pivot needs its Switch)
		return done, nil
	}
	part.add(m)
	c.copies[partNode{part, n}] = m
	if n.Kind == NextIteration { // the Merges it feeds back to
		for _, r := range c.g.Nodes {
			if r.Kind == Merge && c.placed[r] == c.placed[n] && slices.ContainsFunc(r.Inputs, func(x Output) bool { return x.Node == n }) {
				merge, err := c.copyNode(part, r)
				if err != nil {
					return nil, err
				}
				part.SetBackEdge(merge, m.Out(0))
			}
		}
	}
	return m, nil
}

// use returns what out is read as in part: its copy there, or a receive
// of it from its own partition (which sends it).
func (c *cutter) use(part *Graph, out Output) (Output, error) {
	src := out.Node
	if src.Kind == Placeholder || src.Kind == Const || c.partOf(src) == part {
		m, err := c.copyNode(part, src)
		if err != nil {
			return Output{}, err
		}
		return m.Out(out.Index), nil
	}
	if r, ok := c.recvs[partOut{part, out}]; ok {
		return r, nil
	}
	from, err := c.use(c.partOf(src), out)
	if err != nil {
		return Output{}, err
	}
	r, err := c.cross(part, src, from)
	if err != nil {
		return Output{}, err
	}
	if out.Index < len(src.Specs) {
		r.Node.Specs = []eager.Out{src.Specs[out.Index]}
	}
	c.recvs[partOut{part, out}] = r
	return r, nil
}

// cross sends from, a value of src's partition in src's frame, to part
// and returns its receive there. In a loop the send is made to run at
// every iteration of the frame (a loop invariant is read at each), as
// the receive, in the consumer's partition and the value's frame, is:
// each yields what the value is there, live or dead.
func (c *cutter) cross(part *Graph, src *Node, from Output) (Output, error) {
	key := c.p.edges
	c.p.edges++
	home := c.partOf(src)
	fromRank, toRank := c.p.Ranks[slices.Index(c.p.Parts, home)], c.p.Ranks[slices.Index(c.p.Parts, part)]
	send := home.Apply(partSendOp, partSend{p: c.p, key: key, to: toRank}, 0, from)
	if f := c.frame[src]; f != "" {
		every, err := c.every(home, f)
		if err != nil {
			return Output{}, err
		}
		send.Control = append(send.Control, every)
	}
	trigger, err := c.every(part, c.frame[src])
	if err != nil {
		return Output{}, err
	}
	recv := part.Apply(c.recvOp, partRecv{p: c.p, key: key, from: fromRank, dev: c.placed[src]}, 1, trigger.Out(0))
	return recv.Out(0), nil
}

// signal returns a node of part that runs once x, of another partition,
// has run, and is dead when x is: the receive of x's output, or, where x
// has none, of a token: an Identity of a constant in x's partition and
// frame that waits on x (as TensorFlow's control edges across devices send
// a tensor of nothing).
func (c *cutter) signal(part *Graph, x *Node) (*Node, error) {
	if x.Outputs > 0 {
		r, err := c.use(part, x.Out(0))
		return r.Node, err
	}
	if r, ok := c.recvs[partOut{part, Output{x, -1}}]; ok {
		return r.Node, nil
	}
	home := c.partOf(x)
	cx, err := c.copyNode(home, x)
	if err != nil {
		return nil, err
	}
	token := home.Apply(c.identityOp, nil, 1, home.Constant(tensor.Scalar(true)))
	token.Control = []*Node{cx}
	r, err := c.cross(part, x, token.Out(0))
	if err != nil {
		return nil, err
	}
	c.recvs[partOut{part, Output{x, -1}}] = r
	return r.Node, nil
}

// every returns a node of part that runs, live, at every iteration of
// frame f, the last (whose predicate is false) included: a loop Merge of
// f (the partition's own, or its control loop's); at the top level a
// constant.
func (c *cutter) every(part *Graph, f string) (*Node, error) {
	if t, ok := c.triggers[partFrame{part, f}]; ok {
		return t, nil
	}
	if f == "" {
		t := part.Constant(tensor.Scalar(true)).Node
		c.triggers[partFrame{part, ""}] = t
		return t, nil
	}
	if sw := c.loopSwitch(part, f); sw != nil {
		merge, err := c.copyNode(part, sw.Inputs[0].Node)
		if err != nil {
			return nil, err
		}
		c.triggers[partFrame{part, f}] = merge
		return merge, nil
	}
	if err := c.controlLoop(part, f); err != nil {
		return nil, err
	}
	return c.triggers[partFrame{part, f}], nil
}

// loopSwitch is a loop Switch of frame f placed in part, or nil.
func (c *cutter) loopSwitch(part *Graph, f string) *Node {
	for _, n := range c.g.Nodes {
		if n.Kind == Switch && c.frame[n] == f && c.partOf(n) == part && c.isLoopSwitch(n) {
			return n
		}
	}
	return nil
}

// pivot returns a node of part live exactly at frame f's live iterations
// (an Identity of a loop Switch's true output, the partition's own or its
// control loop's): what a loop nested in f enters from.
func (c *cutter) pivot(part *Graph, f string) (*Node, error) {
	if p, ok := c.pivots[partFrame{part, f}]; ok {
		return p, nil
	}
	if sw := c.loopSwitch(part, f); sw != nil {
		m, err := c.copyNode(part, sw)
		if err != nil {
			return nil, err
		}
		p := part.Apply(c.identityOp, nil, 1, m.Out(1))
		c.pivots[partFrame{part, f}] = p
		return p, nil
	}
	if err := c.controlLoop(part, f); err != nil {
		return nil, err
	}
	return c.pivots[partFrame{part, f}], nil
}

// controlLoop gives part, which holds none of frame f's loop primitives,
// a loop of its own driven by f's predicate (received at every
// iteration): Enter (from the parent frame's pivot, so that it enters
// when and as the loop does), Merge, Switch, NextIteration of its live
// output, Exit of the other.
func (c *cutter) controlLoop(part *Graph, f string) error {
	enter, pred := c.enter[f], c.pred[f]
	if enter == nil || pred.Node == nil {
		return fmt.Errorf("graph: Partition: frame %q spans devices but has no loop predicate to drive it", f)
	}
	outer, err := c.every(part, "")
	if parent := c.parent[f]; parent != "" {
		outer, err = c.pivot(part, parent)
	}
	if err != nil {
		return err
	}
	merge := part.Merge(part.Enter(outer.Out(0), f, false, enter.ParallelIterations))
	c.triggers[partFrame{part, f}] = merge // the predicate's receive is triggered by it
	p, err := c.use(part, pred)
	if err != nil {
		return err
	}
	sw := part.Switch(merge.Out(0), p)
	part.Exit(sw.Out(0))
	pivot := part.Apply(c.identityOp, nil, 1, sw.Out(1))
	next := part.NextIteration(pivot.Out(0))
	part.SetBackEdge(merge, next)
	c.pivots[partFrame{part, f}] = pivot
	c.nexts[partFrame{part, f}] = next.Node
	return nil
}

// orderAfter makes each partition's next iteration of a frame wait for
// the stack pushes of that partition its graph's NextIterations waited
// for.
func (c *cutter) orderAfter() error {
	for _, w := range c.later {
		part := c.partOf(w.x)
		x, err := c.copyNode(part, w.x)
		if err != nil {
			return err
		}
		next := c.nexts[partFrame{part, w.frame}]
		if next == nil { // the loop's own NextIteration there
			for _, n := range c.g.Nodes {
				if n.Kind == NextIteration && c.frame[n] == w.frame && c.partOf(n) == part {
					next = c.copies[partNode{part, n}]
					break
				}
			}
		}
		if next == nil {
			if _, err := c.every(part, w.frame); err != nil { // its control loop
				return err
			}
			if next = c.nexts[partFrame{part, w.frame}]; next == nil {
				return fmt.Errorf("graph: Partition: no next iteration of frame %q on %s to order %v after", w.frame, c.placed[w.x].Name(), w.x)
			}
		}
		if !slices.Contains(next.After, x) {
			next.After = append(next.After, x)
		}
	}
	return nil
}
