package nn

import (
	"fmt"

	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/eager"
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
	out := make([]*tensor.Tensor, len(grads))
	for lo := 0; lo < len(grads); {
		if grads[lo] == nil {
			lo++
			continue
		}
		dt, bytes, hi := grads[lo].DType(), 0, lo
		for hi < len(grads) && grads[hi] != nil && grads[hi].DType() == dt &&
			(hi == lo || bytes+grads[hi].NumElements()*dt.Size() <= GradientBucketBytes) {
			bytes += grads[hi].NumElements() * dt.Size()
			hi++
		}
		if err := reduceBucket(comm, grads[lo:hi], out[lo:hi], bytes); err != nil {
			return nil, err
		}
		lo = hi
	}
	return out, nil
}

// reduceBucket packs grads into one flat tensor, averages it over the
// ranks, and unpacks the result into out.
func reduceBucket(comm collective.Comm, grads, out []*tensor.Tensor, bytes int) error {
	dt := grads[0].DType()
	flat := tensor.MustEmpty(dt, tensor.Shape{bytes / dt.Size()})
	buf, off := flat.HostBytes(), 0
	for _, g := range grads {
		host, err := g.To(flat.Device())
		if err != nil {
			return fmt.Errorf("nn: AllReduceGradients: %w", err)
		}
		off += copy(buf[off:], host.Contiguous().HostBytes())
	}
	mean, err := comm.AllReduce(flat, collective.Mean)
	flat.Release()
	if err != nil {
		return fmt.Errorf("nn: AllReduceGradients: %w", err)
	}
	res, off := mean.HostBytes(), 0
	for i, g := range grads {
		t := tensor.MustEmpty(dt, g.Shape())
		off += copy(t.HostBytes(), res[off:off+g.NumElements()*dt.Size()])
		if g.Device() != t.Device() {
			moved, err := t.To(g.Device())
			if err != nil {
				return fmt.Errorf("nn: AllReduceGradients: %w", err)
			}
			t = moved
		}
		out[i] = t
	}
	mean.Release()
	return nil
}

// DistributedTrainStep is TrainStep for data-parallel training over comm:
// the gradient of this rank's batch, averaged over every rank's
// (AllReduceGradients), then applied by opt. The loss and example count it
// returns are this rank's; Fit with FitConfig.Comm averages them.
func DistributedTrainStep(comm collective.Comm, model Module, loss Loss, opt Optimizer) Step {
	return func(b data.Element) (l float64, n int, err error) {
		if len(b) < 2 {
			return 0, 0, fmt.Errorf("nn: DistributedTrainStep: a batch of (inputs, labels), got %d components", len(b))
		}
		var grads []*tensor.Tensor
		vars := model.Variables()
		err = eager.Catch(func() {
			tp := tape.New(tape.Options{ReleaseIntermediates: true})
			value := loss(model.Forward(b[0]), b[1])
			l, n = value.Float(), b[0].Dim(0)
			grads = tp.Gradient(value, Values(vars)...)
		})
		if err != nil {
			return 0, 0, err
		}
		mean, err := AllReduceGradients(comm, grads)
		releaseAll(grads)
		if err != nil {
			return 0, 0, err
		}
		err = opt.Apply(vars, mean)
		releaseAll(mean)
		return l, n, err
	}
}

// BroadcastVariables sets every variable to rank 0's value.
func BroadcastVariables(comm collective.Comm, vars []*tape.Variable) error {
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
