package nn

import (
	"fmt"

	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Loss is a loss function of a model's output and the labels, returning a
// scalar (SparseSoftmaxCrossEntropy, MeanSquaredError...).
type Loss func(pred, labels *tensor.Tensor) *tensor.Tensor

// Metric measures a model's output against the labels as the mean over
// the batch's examples (Accuracy).
type Metric func(pred, labels *tensor.Tensor) float64

// TrainStep is the usual supervised Step for batches (inputs, labels):
// loss(model(inputs), labels) differentiated with a one-shot tape that
// releases the activations as soon as the gradient is done, and opt
// applied to model's variables. A shape error inside the step comes back
// as its error, naming the op.
func TrainStep(model Module, loss Loss, opt Optimizer) Step {
	return func(b data.Element) (l float64, n int, err error) {
		if len(b) < 2 {
			return 0, 0, fmt.Errorf("nn: TrainStep: a batch of (inputs, labels), got %d components", len(b))
		}
		var applied error
		err = eager.Catch(func() {
			tp := tape.New(tape.Options{ReleaseIntermediates: true})
			value := loss(model.Forward(b[0]), b[1])
			vars := model.Variables()
			l, n = value.Float(), b[0].Dim(0)
			applied = opt.Apply(vars, tp.Gradient(value, Values(vars)...))
		})
		if err == nil {
			err = applied
		}
		return l, n, err
	}
}

// EvalStepOf measures model on batches (inputs, labels) in inference mode
// (SetTraining false while it runs, true again after): "loss" and each
// named metric.
func EvalStepOf(model Module, loss Loss, metrics map[string]Metric) EvalStep {
	return func(b data.Element) (out map[string]float64, n int, err error) {
		if len(b) < 2 {
			return nil, 0, fmt.Errorf("nn: EvalStepOf: a batch of (inputs, labels), got %d components", len(b))
		}
		SetTraining(model, false)
		defer SetTraining(model, true)
		err = eager.Catch(func() {
			pred := model.Forward(b[0])
			out = map[string]float64{"loss": loss(pred, b[1]).Float()}
			for name, m := range metrics {
				out[name] = m(pred, b[1])
			}
			n = b[0].Dim(0)
		})
		return out, n, err
	}
}
