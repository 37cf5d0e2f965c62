package nn

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Pipeline parallelism: the layers of a Sequential cut into stages, one
// per rank of a collective.Rendezvous (a process each under MPI, or
// goroutines of one process over collective.Loopback), each rank holding
// and updating only its stage's variables. A batch is cut into
// micro-batches along its first dimension; each micro-batch's activations
// go forward from stage to stage and its gradients back, as Rendezvous
// posts (which never wait), under keys naming the step, the micro-batch
// and the direction, so a rank that dies or never sends makes its
// neighbours fail after the rendezvous's timeout naming what they waited
// for; a stage that fails posts the dead flag under every key it still
// owed, so that the stages waiting on it fail at once, and theirs in turn. The gradients of a stage's variables are summed over its
// micro-batches, each micro-batch's loss weighted by its share of the
// batch, so that a step computes what TrainStep computes on the whole
// batch, up to the order in which floating-point sums are taken.

// PipelineSchedule is the order in which a stage runs its micro-batches'
// forward and backward passes.
type PipelineSchedule int

const (
	// GPipe runs every micro-batch forward, then every one backward (the
	// GPipe paper's schedule): a stage holds every micro-batch's
	// activations at once.
	GPipe PipelineSchedule = iota
	// OneFOneB runs S-s-1 micro-batches forward on stage s of S (the pipe
	// filling), then alternates one backward and one forward, then the
	// backward passes left (PipeDream's 1F1B): at most S-s micro-batches'
	// activations held, for the same bubble as GPipe.
	OneFOneB
)

func (s PipelineSchedule) String() string {
	if s == OneFOneB {
		return "1F1B"
	}
	return "GPipe"
}

// PipelineOptions tune PipelineTrainStep.
type PipelineOptions struct {
	// Bounds are the first layers of stages 1, 2, ... (Size-1 increasing
	// indices of the model's layers): stage s holds Layers[Bounds[s-1]:
	// Bounds[s]]. Nil: the layers are cut in order so that the stages'
	// variables hold about as many elements each (every stage at least
	// one layer).
	Bounds []int
	// MicroBatches is how many micro-batches a batch is cut into (0: 4);
	// a batch of fewer examples has one per example.
	MicroBatches int
	// Schedule orders each stage's passes (GPipe by default).
	Schedule PipelineSchedule
}

// PipelineStage returns stage s of model cut into size stages by o (its
// layers as a Sequential with model's Policy, sharing model's layers and
// variables): what a rank of a pipeline trains, saves and restores.
func PipelineStage(model *Sequential, size, s int, o PipelineOptions) (*Sequential, error) {
	if model == nil {
		return nil, fmt.Errorf("nn: PipelineStage: the model is nil")
	}
	bounds, err := pipelineBounds(model, size, o.Bounds)
	if err != nil {
		return nil, err
	}
	if s < 0 || s >= size {
		return nil, fmt.Errorf("nn: PipelineStage: stage %d of %d", s, size)
	}
	return &Sequential{Layers: model.Layers[bounds[s]:bounds[s+1]], Policy: model.Policy}, nil
}

// pipelineBounds returns the stages' first layers and the layers' end
// (size+1 indices) for bounds (nil: balanced by variables' elements).
func pipelineBounds(model *Sequential, size int, bounds []int) ([]int, error) {
	n := len(model.Layers)
	if size < 1 || n < size {
		return nil, fmt.Errorf("nn: pipeline of %d stages over %d layers: every stage needs a layer", size, n)
	}
	if bounds != nil {
		if len(bounds) != size-1 {
			return nil, fmt.Errorf("nn: pipeline of %d stages: %d bounds, want %d", size, len(bounds), size-1)
		}
		out := append(append([]int{0}, bounds...), n)
		for s := range size {
			if out[s] >= out[s+1] {
				return nil, fmt.Errorf("nn: pipeline bounds %v over %d layers: stage %d would hold no layer", bounds, n, s)
			}
		}
		return out, nil
	}
	prefix := make([]int, n+1) // the variables' elements of the first i layers
	for i, l := range model.Layers {
		prefix[i+1] = prefix[i]
		for _, v := range l.Variables() {
			prefix[i+1] += v.Value().NumElements()
		}
	}
	out := []int{0}
	for s := 1; s < size; s++ {
		// The cut nearest s/size of the elements, leaving a layer for
		// every stage on either side.
		target, best := float64(s*prefix[n])/float64(size), out[s-1]+1
		for b := best; b <= n-(size-s); b++ {
			if math.Abs(float64(prefix[b])-target) < math.Abs(float64(prefix[best])-target) {
				best = b
			}
		}
		out = append(out, best)
	}
	return append(out, n), nil
}

// PipelineTrainStep returns the training step of rank rdv.Rank()'s stage
// of model, cut into rdv.Size() stages by o, under loss and opt (which
// sees this stage's variables alone). Every rank calls its step with the
// same batches, (inputs, labels): the first stage reads the inputs, the
// last the labels, and every rank returns the batch's loss (the last
// stage's, posted to the others). Ranks must call their steps in step:
// the keys of a step's posts carry its count.
//
// The model must be built the same way on every rank (same layers, same
// initial values: the same seed), as data-parallel training needs; the
// stages' variables may live on different devices (a micro-batch's
// activations move to the device of the stage's first variable). A
// LossScaleOptimizer is refused (dynamic loss scaling would need the
// stages to agree on every skipped step).
//
// A stage's backward pass of a micro-batch computes its input's gradient
// first and posts it; its weights' gradients follow once it has posted
// the next micro-batch's (the zero-bubble schedules' split of B and W;
// tape.Tape.GradientSplit), so the stage before never waits for them.
func PipelineTrainStep(model *Sequential, loss Loss, opt Optimizer, rdv *collective.Rendezvous, o PipelineOptions) (Step, error) {
	if err := nilArg("PipelineTrainStep", arg{"the model", model}, arg{"the loss", loss}, arg{"the optimizer", opt}, arg{"the rendezvous", rdv}); err != nil {
		return nil, err
	}
	if _, scaled := opt.(lossScaler); scaled {
		// Each stage's scale would follow its own gradients' overflows, and
		// the stages would disagree on which steps to skip.
		return nil, fmt.Errorf("nn: PipelineTrainStep: a LossScaleOptimizer is not supported across stages; use bfloat16 (MixedBFloat16) or float32")
	}
	size, rank := rdv.Size(), rdv.Rank()
	stage, err := PipelineStage(model, size, rank, o)
	if err != nil {
		return nil, err
	}
	if o.MicroBatches < 0 {
		return nil, fmt.Errorf("nn: PipelineTrainStep: %d micro-batches", o.MicroBatches)
	}
	p := &pipeline{stage: stage, loss: loss, opt: opt, rdv: rdv, rank: rank, size: size, o: o, vars: stage.Variables()}
	p.dev = device.Host()
	if len(p.vars) > 0 {
		p.dev = p.vars[0].Value().Device()
	}
	return p.step, nil
}

// pipeline is one rank's stage and its step count.
type pipeline struct {
	stage      *Sequential
	loss       Loss
	opt        Optimizer
	rdv        *collective.Rendezvous
	rank, size int
	o          PipelineOptions
	vars       []*tape.Variable
	dev        device.Device
	steps      int
	// sums are the gradients summed over a step's micro-batches, in
	// place (kept from step to step); summed says which have one this
	// step.
	sums   []*tape.Variable
	summed []bool
	// owed are the posts this stage has still to make in the step under
	// way: their keys (one per rank for the loss), to whom.
	owed map[string]int
}

// accumulate adds a micro-batch's gradients g (one per variable, nil
// where unconnected) to the step's sums, in place; first starts them.
func (p *pipeline) accumulate(g []*tensor.Tensor, first bool) {
	if p.sums == nil {
		p.sums, p.summed = make([]*tape.Variable, len(p.vars)), make([]bool, len(p.vars))
	}
	if first {
		clear(p.summed)
	}
	for j, gj := range g {
		switch {
		case gj == nil:
		case p.sums[j] == nil:
			p.sums[j] = tape.NewVariable(p.vars[j].Name()+"/gradient", gj)
		case !p.summed[j]:
			p.sums[j].Assign(gj)
		default:
			p.sums[j].AssignAdd(gj)
		}
		if gj != nil {
			p.summed[j] = true
			gj.Release()
		}
	}
}

// inFlight is a micro-batch between its forward and backward passes.
type inFlight struct {
	tp     *tape.Tape
	x, out *tensor.Tensor // the stage's input (watched, but on stage 0) and output (the weighted loss on the last)
	// made are the tensors of the micro-batch this stage made or
	// received (its rows of the batch, its input, output, their
	// gradients), released once its weights' gradients are summed: left
	// to the collector, a step's worth of them made the heap grow and
	// each step fault in fresh memory.
	made []*tensor.Tensor
}

// release releases f's tensors but for those of the step's batch b.
func (f *inFlight) release(b data.Element) {
	for _, t := range f.made {
		if t != nil && !slices.Contains(b, t) {
			t.Release()
		}
	}
	f.made = nil
}

func (p *pipeline) key(m int, what string) string {
	return fmt.Sprintf("pipeline/step %d/micro-batch %d/%s", p.steps, m, what)
}

func (p *pipeline) step(b data.Element) (loss float64, examples int, err error) {
	if len(b) < 2 {
		return 0, 0, fmt.Errorf("nn: PipelineTrainStep: a batch of (inputs, labels), got %d components", len(b))
	}
	x, labels := b[0], b[1]
	if x == nil || labels == nil || x.Rank() == 0 || labels.Rank() == 0 || x.Dim(0) != labels.Dim(0) {
		return 0, 0, fmt.Errorf("nn: PipelineTrainStep: inputs %s and labels %s must share their first dimension", tensor.Describe(x), tensor.Describe(labels))
	}
	defer func() { p.steps++ }()
	n := x.Dim(0)
	m := p.o.MicroBatches
	if m == 0 {
		m = 4
	}
	m = max(min(m, n), 1)
	bounds := make([]int, m+1) // micro-batch i is rows bounds[i]:bounds[i+1]
	for i := range m {
		bounds[i+1] = bounds[i] + n/m
		if i < n%m {
			bounds[i+1]++
		}
	}
	p.owe(m)
	defer func() {
		if err != nil {
			p.postDead()
		}
	}()
	flying := make([]inFlight, m)
	var pending func() // a micro-batch's weight gradients, not yet computed
	forward := func(i int) {
		var f inFlight
		var in *tensor.Tensor
		if p.rank == 0 {
			r := rows(x, bounds[i], bounds[i+1])
			in = p.onStage(r)
			f.made = append(f.made, r)
		} else {
			in = p.receive(p.rank-1, p.key(i, "activations"))
		}
		tp := tape.New(tape.Options{ReleaseIntermediates: true})
		if p.rank > 0 {
			tp.Watch(in)
		}
		out := p.stage.Forward(in)
		if p.rank == p.size-1 {
			r := rows(labels, bounds[i], bounds[i+1])
			l := p.onStage(r)
			share := float64(bounds[i+1]-bounds[i]) / float64(n)
			value := p.loss(out, l)
			out = ops.Mul(value, ops.ScalarLike(value, share))
			f.made = append(f.made, r, l)
		} else {
			p.post(p.rank+1, p.key(i, "activations"), out)
		}
		// The tape stops here: other micro-batches' passes, which run
		// while this one waits for its backward pass, are not on it.
		tp.Stop()
		f.tp, f.x, f.out = tp, in, out
		f.made = append(f.made, in, out)
		flying[i] = f
	}
	backward := func(i int) {
		f := flying[i]
		flying[i] = inFlight{}
		var seed *tensor.Tensor // the last stage's loss: ones
		if p.rank < p.size-1 {
			seed = p.receive(p.rank+1, p.key(i, "gradients"))
			f.made = append(f.made, seed)
		} else {
			loss += f.out.Float()
		}
		done := func(g []*tensor.Tensor) {
			p.accumulate(g, i == 0)
			f.release(b)
		}
		if p.rank == 0 {
			done(f.tp.GradientSeeded(f.out, seed, Values(p.vars)...))
			return
		}
		// The input's gradient first, posted before the weights' are
		// computed, and those once the next micro-batch's input
		// gradient is posted: the stage before starts its backward
		// pass while this one finishes (the zero-bubble schedules' B
		// and W, W deferred by one micro-batch).
		sources := append([]*tensor.Tensor{f.x}, Values(p.vars)...)
		gx, weights := f.tp.GradientSplit(f.out, seed, sources, 1)
		p.post(p.rank-1, p.key(i, "gradients"), gx[0])
		f.made = append(f.made, gx[0])
		if pending != nil {
			pending()
		}
		pending = func() { done(weights()) }
	}
	err = tensor.Catch(func() {
		p.run(m, forward, backward)
		if pending != nil {
			pending()
		}
	})
	if err == nil {
		grads := make([]*tensor.Tensor, len(p.sums))
		for j, v := range p.sums {
			if v != nil && p.summed[j] {
				grads[j] = v.Value()
			}
		}
		err = p.opt.Apply(p.vars, grads)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("nn: PipelineTrainStep: stage %d of %d, step %d: %w", p.rank, p.size, p.steps, err)
	}
	// The batch's loss, from the last stage to the others.
	key := p.key(0, "loss")
	err = tensor.Catch(func() {
		if p.rank == p.size-1 {
			for r := range p.size - 1 {
				delete(p.owed, fmt.Sprintf("%s (to rank %d)", key, r))
				if err := p.rdv.Post(r, key, tensor.Scalar(loss), false); err != nil {
					panic(tensor.NewError("nn", "PipelineTrainStep", err, nil, "", "%v", err))
				}
			}
			return
		}
		loss = p.receive(p.size-1, key).Float()
	})
	return loss, n, err
}

// rows is t's rows [a, b) along its first dimension.
func rows(t *tensor.Tensor, a, b int) *tensor.Tensor {
	start, limit := make([]int, t.Rank()), t.Shape().Clone()
	start[0], limit[0] = a, b
	return ops.Slice(t, start, limit, nil)
}

// run calls forward and backward for micro-batches 0..m-1 in the order of
// the schedule.
func (p *pipeline) run(m int, forward, backward func(i int)) {
	if p.o.Schedule == OneFOneB {
		warm := min(p.size-p.rank-1, m)
		for i := range warm {
			forward(i)
		}
		for i := warm; i < m; i++ {
			forward(i)
			backward(i - warm)
		}
		for i := m - warm; i < m; i++ {
			backward(i)
		}
		return
	}
	for i := range m {
		forward(i)
	}
	for i := range m {
		backward(i)
	}
}

// onStage is t on the stage's device (a batch's rows on another device
// copied there).
func (p *pipeline) onStage(t *tensor.Tensor) *tensor.Tensor {
	if t.Device() == p.dev {
		return t
	}
	moved, err := t.To(p.dev)
	if err != nil {
		panic(tensor.NewError("nn", "PipelineTrainStep", err, []*tensor.Tensor{t}, "", "moving the batch to %s: %v", p.dev.Name(), err))
	}
	return moved
}

// post sends t to rank to under key, panicking with a *tensor.Error on
// failure.
func (p *pipeline) post(to int, key string, t *tensor.Tensor) {
	delete(p.owed, key)
	if err := p.rdv.Post(to, key, t, false); err != nil {
		panic(tensor.NewError("nn", "PipelineTrainStep", err, []*tensor.Tensor{t}, "", "%v", err))
	}
}

// owe lists the posts this stage makes in a step of m micro-batches: its
// output of each to the next stage, its input's gradient of each to the
// previous one, and from the last stage the loss to every other.
func (p *pipeline) owe(m int) {
	p.owed = map[string]int{}
	for i := range m {
		if p.rank < p.size-1 {
			p.owed[p.key(i, "activations")] = p.rank + 1
		}
		if p.rank > 0 {
			p.owed[p.key(i, "gradients")] = p.rank - 1
		}
	}
	if p.rank == p.size-1 {
		for r := range p.size - 1 {
			p.owed[fmt.Sprintf("%s (to rank %d)", p.key(0, "loss"), r)] = r
		}
	}
}

// postDead posts the dead flag under every key this stage still owes in
// the step that failed, so that the stages waiting for them fail at once
// (naming the key and this rank) instead of after the rendezvous's
// timeout, and theirs in turn.
func (p *pipeline) postDead() {
	for key, to := range p.owed {
		key, _, _ = strings.Cut(key, " (to rank")
		_ = p.rdv.Post(to, key, nil, true) // a transport that failed fails everyone anyway
	}
	p.owed = nil
}

// receive waits for the value rank from posts under key and returns it on
// the stage's device, panicking with a *tensor.Error on failure.
func (p *pipeline) receive(from int, key string) *tensor.Tensor {
	t, dead, err := p.rdv.Receive(from, key)
	if err == nil && dead {
		err = fmt.Errorf("%q from rank %d came dead: that stage failed", key, from)
	}
	if err != nil {
		panic(tensor.NewError("nn", "PipelineTrainStep", err, nil, "", "%v", err))
	}
	if t.Device() != p.dev {
		moved, err := t.To(p.dev)
		if err != nil {
			panic(tensor.NewError("nn", "PipelineTrainStep", err, []*tensor.Tensor{t}, "", "moving %q to %s: %v", key, p.dev.Name(), err))
		}
		t = moved
	}
	return t
}
