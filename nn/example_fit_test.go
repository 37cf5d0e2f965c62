package nn_test

import (
	"context"
	"fmt"

	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// A classifier trained with validation after each epoch, early stopping
// and a learning rate that halves when validation accuracy stalls.
func ExampleFit() {
	rng := tensor.NewRNG(1)
	x := tensor.RandNormal(rng, tensor.Float32, 512, 4)
	y := ops.Cast(ops.Gt(ops.Sum(x, 1), tensor.Scalar(0)), tensor.Int32)
	all, _ := data.FromSlices(x, y)
	train, val := all.Take(384).Shuffle(384, 1, true).Batch(32, false), all.Skip(384).Batch(128, false)

	model := nn.NewSequential(
		nn.NewDense("hidden", rng, 4, 16, nn.DenseOpts{Activation: ops.Relu}),
		nn.NewDense("logits", rng, 16, 2, nn.DenseOpts{}))
	lr := &nn.Plateau{Base: nn.Constant(0.01), Monitor: nn.Monitor{Name: "val_accuracy"}, Factor: 0.5}
	opt := nn.NewAdam(lr.Schedule)
	h, err := nn.Fit(context.Background(), train, nn.AllVariables(model), opt,
		nn.TrainStep(model, nn.SparseSoftmaxCrossEntropy, opt),
		nn.FitConfig{
			Epochs:     20,
			Validation: val,
			Evaluate:   nn.EvalStepOf(model, nn.SparseSoftmaxCrossEntropy, map[string]nn.Metric{"accuracy": nn.Accuracy}),
			Callbacks: []nn.Callback{
				&nn.EarlyStopping{Monitor: nn.Monitor{Name: "val_accuracy"}, Patience: 3, RestoreBest: true}, lr},
			// Progress: os.Stderr shows a bar on a terminal and a line
			// of logs per epoch ("epoch 3/20  12 steps ... val_accuracy
			// 0.9688  val_loss 0.1874").
		})
	if err != nil {
		fmt.Println(err)
		return
	}
	last := h.Epochs[len(h.Epochs)-1]
	fmt.Println(h.Stopped != "", last["val_accuracy"] > 0.9)
	// Output: true true
}

// The custom-step form: any Go code that computes a loss on a tape and
// applies the optimizer (here with gradient clipping) is a Step.
func ExampleStep() {
	rng := tensor.NewRNG(2)
	x := tensor.RandNormal(rng, tensor.Float32, 256, 3)
	y := ops.Sum(x, 1)
	ds, _ := data.FromSlices(x, ops.Reshape(y, 256, 1))
	model := nn.NewDense("linear", rng, 3, 1, nn.DenseOpts{})
	opt := &nn.SGD{LR: nn.Constant(0.1), Momentum: 0.9}
	step := func(b data.Element) (float64, int, error) {
		tp := tape.New()
		loss := nn.MeanSquaredError(model.Forward(b[0]), b[1])
		grads, _ := nn.ClipByGlobalNorm(tp.Gradient(loss, nn.Values(model.Variables())...), 1)
		return loss.Float(), b[0].Dim(0), opt.Apply(model.Variables(), grads)
	}
	h, err := nn.Fit(context.Background(), ds.Batch(32, false), model.Variables(), opt, step, nn.FitConfig{Epochs: 30})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("final loss below 1e-3: %v\n", h.EpochLoss[len(h.EpochLoss)-1] < 1e-3)
	// Output: final loss below 1e-3: true
}

// A History prints an epoch a line, then why the run stopped early.
func ExampleHistory_String() {
	h := nn.History{
		Epochs:     []nn.Logs{{"loss": 0.6931, "val_accuracy": 0.5}, {"loss": 0.4123, "val_accuracy": 0.875}},
		EpochSteps: []int{12, 24},
		Stopped:    "val_accuracy did not improve for 1 epochs",
	}
	fmt.Println(h)
	fmt.Println(nn.History{})
	// Output:
	// epoch 1 (step 12): loss 0.6931  val_accuracy 0.5
	// epoch 2 (step 24): loss 0.4123  val_accuracy 0.875
	// stopped: val_accuracy did not improve for 1 epochs
	// no epochs run
}
