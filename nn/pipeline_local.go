package nn

import (
	"errors"
	"fmt"
	"sync"

	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/data"
)

// LocalPipeline trains a Sequential cut into stages that run in this
// process, a goroutine each, on the devices their variables live on
// (build a stage's layers inside device.With(d, ...) to put them on d):
// pipeline parallelism over the GPUs (or CPU devices) of one machine.
// The stages meet through collective.Loopback rendezvous (a value that
// crosses goes through host memory); each has an optimizer of its own.
// Step is its training step, as PipelineTrainStep's; Close ends it.
type LocalPipeline struct {
	steps []Step
	rdvs  []*collective.Rendezvous
}

// NewLocalPipeline cuts model into stages as PipelineTrainStep does, each
// with the optimizer newOpt makes for it.
func NewLocalPipeline(model *Sequential, loss Loss, newOpt func() Optimizer, stages int, o PipelineOptions) (*LocalPipeline, error) {
	if err := nilArg("NewLocalPipeline", arg{"the model", model}, arg{"the loss", loss}, arg{"newOpt", newOpt}); err != nil {
		return nil, err
	}
	if _, err := pipelineBounds(model, stages, o.Bounds); err != nil {
		return nil, err
	}
	p := &LocalPipeline{}
	for _, tr := range collective.Loopback(stages) {
		rdv, err := collective.NewRendezvous(tr)
		if err != nil {
			p.Close()
			return nil, err
		}
		p.rdvs = append(p.rdvs, rdv)
		opt := newOpt()
		if opt == nil {
			p.Close()
			return nil, fmt.Errorf("nn: NewLocalPipeline: newOpt returned nil")
		}
		step, err := PipelineTrainStep(model, loss, opt, rdv, o)
		if err != nil {
			p.Close()
			return nil, err
		}
		p.steps = append(p.steps, step)
	}
	return p, nil
}

// Step runs every stage's step on b at once and returns the batch's loss.
func (p *LocalPipeline) Step(b data.Element) (float64, int, error) {
	losses, ns, errs := make([]float64, len(p.steps)), make([]int, len(p.steps)), make([]error, len(p.steps))
	var wg sync.WaitGroup
	for i, step := range p.steps {
		wg.Go(func() { losses[i], ns[i], errs[i] = step(b) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return 0, 0, err
	}
	last := len(p.steps) - 1
	return losses[last], ns[last], nil
}

// Close ends the stages' rendezvous.
func (p *LocalPipeline) Close() error {
	var errs []error
	for _, r := range p.rdvs {
		errs = append(errs, r.Close())
	}
	p.rdvs = nil
	return errors.Join(errs...)
}
