package nn

import (
	"fmt"
	"slices"

	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Data-parallel training: every rank of a collective.Comm holds the whole
// model, reads its own shard of the data (data.Dataset.Shard), computes
// gradients on it, and averages them with the others before the optimizer
// steps, so that the ranks' models stay identical. N ranks with batches of
// B/N compute what one process computes with batches of B, up to the order
// in which floating-point sums are taken (a test bounds the difference).
// FitConfig.Comm makes Fit do the rest: the model broadcast from rank 0 at
// the start, losses and validation metrics averaged over all ranks, and
// checkpoints, summaries and progress from rank 0 alone.

// GradientBucketBytes is how many bytes of gradients AllReduceGradients
// sends in one collective (PyTorch DDP's default bucket is 25 MB): fewer,
// larger messages, without holding every gradient in one buffer.
const GradientBucketBytes = 25 << 20

// AllReduceGradients returns the mean of grads over comm's ranks, each
// result shaped like its gradient, exchanged in buckets of up to
// GradientBucketBytes of consecutive gradients of one dtype. Nil
// gradients stay nil (every rank must have the same ones nil).
func AllReduceGradients(comm collective.Comm, grads []*tensor.Tensor) ([]*tensor.Tensor, error) {
	if err := nilArg("AllReduceGradients", arg{"the communicator", comm}, arg{"grads", grads}); err != nil {
		return nil, err
	}
	out := make([]*tensor.Tensor, len(grads))
	for _, b := range gradientBuckets(grads, GradientBucketBytes) {
		if err := reduceBucket(comm, grads[b.lo:b.hi], out[b.lo:b.hi], b.bytes); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// span is a bucket of consecutive gradients, grads[lo:hi], of bytes in all.
type span struct{ lo, hi, bytes int }

// gradientBuckets groups grads, in order, into runs of one dtype of up to
// max bytes, skipping nil ones; a gradient larger than max, or of
// ownBucketBytes or more, is a bucket alone.
func gradientBuckets(grads []*tensor.Tensor, max int) []span {
	var out []span
	alone := func(g *tensor.Tensor) bool { return g.NumElements()*g.DType().Size() >= ownBucketBytes }
	for lo := 0; lo < len(grads); {
		if grads[lo] == nil {
			lo++
			continue
		}
		dt, bytes, hi := grads[lo].DType(), 0, lo
		for hi < len(grads) && grads[hi] != nil && grads[hi].DType() == dt &&
			(hi == lo || !alone(grads[lo]) && !alone(grads[hi]) && bytes+grads[hi].NumElements()*dt.Size() <= max) {
			bytes += grads[hi].NumElements() * dt.Size()
			hi++
		}
		out = append(out, span{lo, hi, bytes})
		lo = hi
	}
	return out
}

// reduceBucket packs grads into one flat tensor (a bucket of one
// gradient on the host is sent as it is), sums it over the ranks, and
// writes each gradient's share of the sum divided by the size into out:
// the division and the unpacking in one vectorized pass (ops.Mul on a
// view), not a scalar pass and a copy.
func reduceBucket(comm collective.Comm, grads, out []*tensor.Tensor, bytes int) error {
	dt, dev := grads[0].DType(), collective.DeviceOf(comm)
	flat := grads[0]
	if len(grads) > 1 || flat.Device() != dev {
		var err error
		if flat, err = tensor.Empty(dev, dt, tensor.Shape{bytes / dt.Size()}); err != nil {
			return fmt.Errorf("nn: AllReduceGradients: %w", err)
		}
		off := 0
		for _, g := range grads {
			if err := place(flat, off, g); err != nil {
				flat.Release()
				return err
			}
			off += g.NumElements()
		}
	}
	sum, err := comm.AllReduce(flat, collective.Sum)
	if flat != grads[0] {
		flat.Release()
	}
	if err != nil {
		return fmt.Errorf("nn: AllReduceGradients: %w", err)
	}
	defer sum.Release()
	return tensor.Catch(func() {
		scale := tensor.Scalar(1 / float64(comm.Size()))
		for i, off := 0, 0; i < len(grads); i++ {
			g, n := grads[i], grads[i].NumElements()
			part := sum
			if len(grads) > 1 {
				part = ops.Reshape(ops.Slice(sum, []int{off}, []int{off + n}, nil), g.Shape()...)
			}
			mean := ops.Mul(part, scale)
			if part != sum {
				part.Release()
			}
			if g.Device() != mean.Device() {
				moved, err := mean.To(g.Device())
				if err != nil {
					panic(err)
				}
				mean.Release()
				mean = moved
			}
			out[i] = mean
			off += n
		}
	})
}

// DistributedTrainStep is TrainStep for data-parallel training over comm:
// the gradient of this rank's batch, averaged over every rank's, then
// applied by opt. The gradients are grouped in buckets of up to
// opts.BucketBytes (GradientBucketBytes), last layer first (the order the
// backward pass finishes them; a gradient of 1 MB or more has a bucket of
// its own); buckets go out in one fixed order on every rank. The pass is
// seeded with 1/Size, so that the sum over the ranks is the mean; the
// sums are taken in buffers the step keeps from one call to the next, in
// place where comm offers it (collective.InPlace). With opts.Overlap each
// bucket is sent as soon as its gradients are final (tape.GradientEach),
// on another goroutine while the pass computes the earlier layers', as
// PyTorch's DDP does; see DistributedOptions for when that pays. The loss
// and example count it returns are this rank's; Fit with FitConfig.Comm
// averages them. With an AccumulatedOptimizer as opt (eager or traced),
// a micro-batch's gradients stay on its rank, summed there, and the
// round's sums go over the ranks once, at its last micro-batch (DDP's
// no_sync; traced, the graph computes the micro-batch's gradients and the
// round's all-reduce runs after it): one all-reduce of every gradient a
// round where there were Every, the same step but for the sums' order. A
// LossScaleOptimizer around the AccumulatedOptimizer keeps it so, the
// ranks agreeing on each micro-batch's finiteness by the all-reduce of one
// flag (a micro-batch is skipped on every rank where any rank's gradients
// are not finite, as one process with the whole batch skips it).
func DistributedTrainStep(comm collective.Comm, model Module, loss Loss, opt Optimizer, opts ...DistributedOptions) Step {
	mustArgs("DistributedTrainStep", arg{"the communicator", comm}, arg{"the model", model}, arg{"the loss", loss}, arg{"the optimizer", opt})
	var o DistributedOptions
	if len(opts) > 0 {
		o = opts[0]
	}
	if o.BucketBytes <= 0 {
		o.BucketBytes = GradientBucketBytes
	}
	if o.Traced {
		const name = "TracedDistributedTrainStep"
		if apply := noSync(name, comm, opt, o); apply != nil { // the graph's gradients stay on the rank
			return tracedStep(name, model, loss, opt, 1/float64(comm.Size()), nil, false, apply)
		}
		return tracedStep(name, model, loss, opt, 1/float64(comm.Size()), func(grads []*tensor.Tensor) []*tensor.Tensor {
			return sumOfGradients(name, comm, grads, o.BucketBytes)
		}, false, nil)
	}
	if apply := noSync("DistributedTrainStep", comm, opt, o); apply != nil {
		return accumulatedStep(comm, model, loss, opt, apply)
	}
	var r *gradientReduce // kept from step to step, with its buffers
	return func(b data.Element) (l float64, n int, err error) {
		if len(b) < 2 {
			return 0, 0, fmt.Errorf("nn: DistributedTrainStep: a batch of (inputs, labels), got %d components", len(b))
		}
		var grads []*tensor.Tensor
		vars := model.Variables()
		if r == nil || !r.fits(vars) {
			r = newGradientReduce(comm, vars, o)
		}
		r.start()
		err = tensor.Catch(func() {
			tp := tape.New(tape.Options{ReleaseIntermediates: true})
			value := loss(model.Forward(b[0]), b[1])
			n = b[0].Dim(0)
			scale := 1.0
			if s, ok := opt.(lossScaler); ok { // every rank's scale is the same: they step on the same mean
				scale = s.Scale()
			}
			seed := ops.Mul(ops.OnesLike(value), tensor.Scalar(scale/float64(comm.Size())))
			grads = tp.GradientEach(value, seed, Values(vars), r.ready)
			seed.Release()
			l = value.Float() // read once the backward pass is queued
		})
		mean, rerr := r.wait()
		releaseAll(grads)
		if err == nil {
			err = rerr
		}
		if err == nil {
			err = opt.Apply(vars, mean)
		}
		r.release(mean)
		if err != nil {
			return 0, 0, err
		}
		return l, n, nil
	}
}

// accumulatedStep is DistributedTrainStep's eager step for an
// AccumulatedOptimizer: a micro-batch's gradients (each rank's divided by
// the ranks' count) are summed on its rank alone, and the round's sums
// over the ranks once, at its last micro-batch, where the inner step
// takes their mean (PyTorch DDP's no_sync): one all-reduce a round where
// there were Every, the same step but for the sums' order. Every rank
// must give gradients for the same variables in a round.
func accumulatedStep(comm collective.Comm, model Module, loss Loss, opt Optimizer, apply func(vars []*tape.Variable, grads []*tensor.Tensor) error) Step {
	return func(b data.Element) (l float64, n int, err error) {
		if len(b) < 2 {
			return 0, 0, fmt.Errorf("nn: DistributedTrainStep: a batch of (inputs, labels), got %d components", len(b))
		}
		vars := model.Variables()
		var grads []*tensor.Tensor
		err = tensor.Catch(func() {
			tp := tape.New(tape.Options{ReleaseIntermediates: true})
			value := loss(model.Forward(b[0]), b[1])
			n = b[0].Dim(0)
			scale := 1.0
			if s, ok := opt.(lossScaler); ok {
				scale = s.Scale()
			}
			seed := ops.Mul(ops.OnesLike(value), tensor.Scalar(scale/float64(comm.Size())))
			grads = tp.GradientSeeded(value, seed, Values(vars)...)
			seed.Release()
			l = value.Float()
		})
		if err == nil {
			err = apply(vars, grads)
		}
		releaseAll(grads)
		if err != nil {
			return 0, 0, err
		}
		return l, n, nil
	}
}

// noSync is how DistributedTrainStep (named op in errors) applies a
// micro-batch's gradients, this rank's alone, where opt accumulates them:
// an AccumulatedOptimizer sums them on the rank and all-reduces the
// round's sums once, at its last micro-batch; under a LossScaleOptimizer
// every micro-batch's finiteness is agreed over the ranks first (one
// all-reduce of a flag: the micro-batch is skipped on every rank where a
// gradient of any rank is not finite, as one process with the whole batch
// skips it). nil where opt is neither.
func noSync(op string, comm collective.Comm, opt Optimizer, o DistributedOptions) func(vars []*tape.Variable, grads []*tensor.Tensor) error {
	reduce := func(sums []*tensor.Tensor) []*tensor.Tensor { return sumOfGradients(op, comm, sums, o.BucketBytes) }
	switch t := opt.(type) {
	case *AccumulatedOptimizer:
		return func(vars []*tape.Variable, grads []*tensor.Tensor) error { return t.apply(vars, grads, reduce) }
	case *LossScaleOptimizer:
		acc, ok := t.Inner.(*AccumulatedOptimizer)
		if !ok {
			return nil
		}
		agree := func(finite bool) (bool, error) { return everyRankFinite(comm, finite) }
		return func(vars []*tape.Variable, grads []*tensor.Tensor) error {
			return t.apply(vars, grads, agree, func(vars []*tape.Variable, grads []*tensor.Tensor) error {
				return acc.apply(vars, grads, reduce)
			})
		}
	}
	return nil
}

// everyRankFinite is whether every rank of comm found its gradients
// finite (finite: this rank's finding), by one all-reduce of a flag.
func everyRankFinite(comm collective.Comm, finite bool) (bool, error) {
	flag := 0.0
	if !finite {
		flag = 1
	}
	worst, err := comm.AllReduce(tensor.FullOn(collective.DeviceOf(comm), tensor.Float32, flag), collective.Max)
	if err != nil {
		return false, fmt.Errorf("agreeing on the gradients' finiteness over the ranks: %w", err)
	}
	defer worst.Release()
	return worst.Float() == 0, nil
}

// DistributedOptions tune DistributedTrainStep; the zero value sends
// buckets of GradientBucketBytes after the backward pass.
type DistributedOptions struct {
	// BucketBytes caps a bucket of gradients sent in one collective
	// (0: GradientBucketBytes).
	BucketBytes int
	// Overlap sends each bucket while the backward pass still runs. It
	// pays where the exchange waits on something other than the cores
	// the pass computes on (a network, a GPU's NCCL). MPI waits by
	// polling, on the core it shares with the pass when each rank has
	// one core: there it measured slower (bench/README.md, "Data-parallel
	// scaling"), so it is off by default.
	Overlap bool
	// Traced traces the step as TracedTrainStep does: the forward pass,
	// the gradients and their all-reduce are one graph (the buckets
	// packed and unpacked by ops, and all-reduced by the communicator's
	// AllReduce, which the graph calls on every step), the optimizer
	// applied after it (with an AccumulatedOptimizer, the graph's
	// gradients are the micro-batch's and the round's sums are
	// all-reduced after it, once a round). Overlap does not apply. The
	// model must be one TracedTrainStep takes.
	Traced bool
}

// sumOfGradients is the sum of grads over comm's ranks written with ops
// (nil for nil), for a traced step or an accumulated round (whose
// passes are seeded with 1/Size, so that the sum is the mean): each
// bucket of several gradients flattened into one vector, all-reduced and
// split back; a failure panics with a *tensor.Error naming op.
func sumOfGradients(op string, comm collective.Comm, grads []*tensor.Tensor, bucketBytes int) []*tensor.Tensor {
	out := make([]*tensor.Tensor, len(grads))
	sum := func(t *tensor.Tensor) *tensor.Tensor {
		m, err := comm.AllReduce(t, collective.Sum)
		if err != nil {
			panic(tensor.NewError("nn", op, err, []*tensor.Tensor{t}, "", "summing the gradients over the ranks: %v", err))
		}
		return m
	}
	for _, b := range gradientBuckets(grads, bucketBytes) {
		if b.hi-b.lo == 1 {
			out[b.lo] = sum(grads[b.lo])
			continue
		}
		flat, sizes := make([]*tensor.Tensor, 0, b.hi-b.lo), make([]int, 0, b.hi-b.lo)
		for _, g := range grads[b.lo:b.hi] {
			flat = append(flat, ops.Reshape(g, g.NumElements()))
			sizes = append(sizes, g.NumElements())
		}
		for i, part := range ops.Split(sum(ops.Concatenate(0, flat...)), 0, sizes) {
			out[b.lo+i] = ops.Reshape(part, grads[b.lo+i].Shape()...)
		}
	}
	return out
}

// ownBucketBytes is the gradient size from which a gradient is sent alone
// (a message that large is efficient already, and needs no unpacking).
const ownBucketBytes = 1 << 20

// gradientReduce sums a step's gradients over the ranks, in buckets, on
// a goroutine of its own: ready (on the pass's goroutine) collects each
// final gradient, and (under Overlap, else once the pass is over) once
// every gradient of the next bucket in order is in, hands the bucket to
// the goroutine, which sums the buckets one after another into the mean
// buffers. The buckets and buffers serve every step of the same
// variables.
type gradientReduce struct {
	comm    collective.Comm
	overlap bool
	vars    []*tape.Variable
	buckets [][]int          // indices of vars, last layer first
	bucket  []int            // per var: its bucket
	flats   []*tensor.Tensor // per bucket of several gradients: where they are packed
	means   []*tensor.Tensor // per var: its summed gradient, on dev, rewritten every step
	dev     device.Device    // where comm's collectives work (collective.DeviceOf)

	// The step's.
	missing []int // per bucket: gradients not yet final
	grads   []*tensor.Tensor
	next    int // the next bucket to send
	work    chan int
	done    chan error
}

func newGradientReduce(comm collective.Comm, vars []*tape.Variable, o DistributedOptions) *gradientReduce {
	r := &gradientReduce{comm: comm, dev: collective.DeviceOf(comm), overlap: o.Overlap, vars: slices.Clone(vars), bucket: make([]int, len(vars)),
		means: make([]*tensor.Tensor, len(vars)), grads: make([]*tensor.Tensor, len(vars))}
	bytes, alone := 0, false
	for i := len(vars) - 1; i >= 0; i-- {
		v := vars[i].Value()
		size := v.NumElements() * v.DType().Size()
		k := len(r.buckets) - 1
		if k < 0 || alone || size >= ownBucketBytes || vars[r.buckets[k][0]].Value().DType() != v.DType() || bytes+size > o.BucketBytes {
			r.buckets, bytes = append(r.buckets, nil), 0
			k++
		}
		r.buckets[k] = append(r.buckets[k], i)
		r.bucket[i] = k
		bytes += size
		alone = size >= ownBucketBytes
	}
	r.flats = make([]*tensor.Tensor, len(r.buckets))
	r.missing = make([]int, len(r.buckets))
	return r
}

// fits reports whether r was made for vars.
func (r *gradientReduce) fits(vars []*tape.Variable) bool { return slices.Equal(r.vars, vars) }

// start readies r for a step and starts its sending goroutine.
func (r *gradientReduce) start() {
	for k, is := range r.buckets {
		r.missing[k] = len(is)
	}
	clear(r.grads)
	r.next = 0
	r.work, r.done = make(chan int, len(r.buckets)), make(chan error, 1)
	go r.send()
}

// ready takes the final gradient of vars[i] and, under Overlap, sends
// the buckets that are complete.
func (r *gradientReduce) ready(i int, g *tensor.Tensor) {
	r.grads[i] = g
	r.missing[r.bucket[i]]--
	if r.overlap {
		r.sendComplete()
	}
}

// sendComplete hands the complete buckets to the sending goroutine, in
// bucket order.
func (r *gradientReduce) sendComplete() {
	for r.next < len(r.buckets) && r.missing[r.next] == 0 {
		r.work <- r.next
		r.next++
	}
}

// send sums the buckets it is given, in the order given; after an error
// it drains the rest without sending.
func (r *gradientReduce) send() {
	var err error
	for k := range r.work {
		if err == nil {
			err = r.reduce(k)
		}
	}
	r.done <- err
}

// reduce sums bucket k's gradients over the ranks into their mean
// buffers: a gradient alone in place in its buffer, several packed into
// the bucket's flat buffer and copied out.
func (r *gradientReduce) reduce(k int) error {
	var is []int
	for _, i := range r.buckets[k] {
		if r.grads[i] != nil { // every rank has the same nil gradients
			is = append(is, i)
		}
	}
	if len(is) == 0 {
		return nil
	}
	if len(is) == 1 {
		m, err := r.mean(is[0])
		if err != nil {
			return err
		}
		if err := place(m, 0, r.grads[is[0]]); err != nil {
			return err
		}
		return r.sum(m)
	}
	dt, bytes := r.grads[is[0]].DType(), 0
	for _, i := range is {
		bytes += r.grads[i].NumElements() * dt.Size()
	}
	flat := r.flats[k]
	if flat == nil || len(is) < len(r.buckets[k]) { // some nil gradients: a buffer for this step alone
		var err error
		if flat, err = tensor.Empty(r.dev, dt, tensor.Shape{bytes / dt.Size()}); err != nil {
			return fmt.Errorf("nn: DistributedTrainStep: %w", err)
		}
		if len(is) < len(r.buckets[k]) {
			defer flat.Release()
		} else {
			r.flats[k] = flat
		}
	}
	off := 0
	for _, i := range is {
		if err := place(flat, off, r.grads[i]); err != nil {
			return err
		}
		off += r.grads[i].NumElements()
	}
	if err := r.sum(flat); err != nil {
		return err
	}
	off = 0
	for _, i := range is {
		m, err := r.mean(i)
		if err != nil {
			return err
		}
		if err := unpack(m, flat, off); err != nil {
			return err
		}
		off += m.NumElements()
	}
	return nil
}

// sum replaces t's elements by their sum over the ranks.
func (r *gradientReduce) sum(t *tensor.Tensor) error {
	if ip, ok := r.comm.(collective.InPlace); ok {
		if err := ip.AllReduceInPlace(t, collective.Sum); err != nil {
			return fmt.Errorf("nn: DistributedTrainStep: %w", err)
		}
		return nil
	}
	s, err := r.comm.AllReduce(t, collective.Sum)
	if err != nil {
		return fmt.Errorf("nn: DistributedTrainStep: %w", err)
	}
	defer s.Release()
	return place(t, 0, s)
}

// mean returns vars[i]'s mean buffer on dev, made on first use.
func (r *gradientReduce) mean(i int) (*tensor.Tensor, error) {
	if r.means[i] == nil {
		v := r.vars[i].Value()
		m, err := tensor.Empty(r.dev, v.DType(), v.Shape())
		if err != nil {
			return nil, fmt.Errorf("nn: DistributedTrainStep: %w", err)
		}
		r.means[i] = m
	}
	return r.means[i], nil
}

// place copies g's elements, row-major, into dst's buffer (a row-major
// tensor the caller owns, rewritten in place) from element off on:
// one strided copy on dst's device, after moving g there if it is
// elsewhere.
func place(dst *tensor.Tensor, off int, g *tensor.Tensor) error {
	src := g
	if g.Device() != dst.Device() {
		moved, err := g.To(dst.Device())
		if err != nil {
			return fmt.Errorf("nn: gradients to %s: %w", dst.Device().Name(), err)
		}
		defer moved.Release()
		src = moved
	}
	return copyElems(dst, off, tensor.Strides(src.Shape(), nil), src, 0, tensor.Strides(src.Shape(), src.Layout()), src.Shape())
}

// unpack copies dst's elements, row-major, from src's buffer (a flat
// bucket on dst's device) from element off on.
func unpack(dst, src *tensor.Tensor, off int) error {
	return copyElems(dst, 0, tensor.Strides(dst.Shape(), nil), src, off, tensor.Strides(dst.Shape(), nil), dst.Shape())
}

// copyElems is device.Copy between two tensors' buffers on one device.
func copyElems(dst *tensor.Tensor, dOff int, dSt []int, src *tensor.Tensor, sOff int, sSt []int, shape tensor.Shape) error {
	err := dst.Device().Copy(dst.Buffer(), dOff, dSt, src.Buffer(), sOff, sSt, shape, dst.DType().Size())
	if err != nil {
		return fmt.Errorf("nn: gradient buckets: %w", err)
	}
	return nil
}

// wait returns the averaged gradients once every bucket is summed: the
// mean buffers, or copies on the variables' devices (nil where the
// gradient is nil, and where a panic cut the pass short).
func (r *gradientReduce) wait() ([]*tensor.Tensor, error) {
	r.sendComplete()
	close(r.work)
	if err := <-r.done; err != nil {
		return nil, err
	}
	out := make([]*tensor.Tensor, len(r.vars))
	for i, g := range r.grads {
		if g == nil || r.missing[r.bucket[i]] > 0 {
			continue
		}
		out[i] = r.means[i]
		if dev := r.vars[i].Value().Device(); dev != device.Host() {
			moved, err := out[i].To(dev)
			if err != nil {
				r.release(out)
				return nil, fmt.Errorf("nn: DistributedTrainStep: %w", err)
			}
			out[i] = moved
		}
	}
	return out, nil
}

// release releases what wait handed out but the mean buffers.
func (r *gradientReduce) release(out []*tensor.Tensor) {
	for i, t := range out {
		if t != nil && t != r.means[i] {
			t.Release()
		}
	}
}

// BroadcastVariables sets every variable to rank 0's value.
func BroadcastVariables(comm collective.Comm, vars []*tape.Variable) error {
	if err := nilArg("BroadcastVariables", arg{"the communicator", comm}, arg{"vars", vars}); err != nil {
		return err
	}
	for _, v := range vars {
		t, err := comm.Broadcast(v.Value(), 0)
		if err != nil {
			return fmt.Errorf("nn: broadcasting %s: %w", v.Name(), err)
		}
		if t.Device() != v.Value().Device() {
			if t, err = t.To(v.Value().Device()); err != nil {
				return fmt.Errorf("nn: broadcasting %s: %w", v.Name(), err)
			}
		}
		v.Assign(t)
	}
	return nil
}

// globalMeans turns this rank's sums (metric value times examples) and
// example count into means over every rank's examples.
func globalMeans(comm collective.Comm, sums map[string]float64, n float64) (map[string]float64, float64, error) {
	names := sortedKeys(sums)
	vals := make([]float64, len(names)+1)
	for i, k := range names {
		vals[i] = sums[k]
	}
	vals[len(names)] = n
	tot, err := comm.AllReduce(tensor.FromSlice(vals), collective.Sum)
	if err != nil {
		return nil, 0, err
	}
	all := tensor.ToSlice[float64](tot)
	count := all[len(names)]
	out := make(map[string]float64, len(names))
	for i, k := range names {
		if count > 0 {
			out[k] = all[i] / count
		}
	}
	return out, count, nil
}
