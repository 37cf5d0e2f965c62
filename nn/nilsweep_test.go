package nn

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/internal/nilsweep"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Every exported function of nn, called with nil arguments one at a time
// beside valid ones, reports what was nil instead of crashing (issue 31).
func TestNilArgumentsAreReported(t *testing.T) {
	m, opt, step, train, val := fitFixture(t)
	vars := AllVariables(m)
	x := tensor.Zeros(tensor.Float32, 2, 3)
	labels := tensor.FromSlice([]int32{0, 1})
	rng := tensor.NewRNG(1)
	dir := t.TempDir()
	ckpt := filepath.Join(dir, "c.safetensors")
	if err := SaveCheckpoint(ckpt, vars, opt, nil); err != nil {
		t.Fatal(err)
	}
	comm := collective.Single()
	rdv, err := collective.NewRendezvous(collective.Loopback(1)[0])
	if err != nil {
		t.Fatal(err)
	}
	defer rdv.Close()
	if err := SavePipelineCheckpoint(ckpt, 0, 1, vars, opt, nil); err != nil {
		t.Fatal(err)
	}
	cfg := FitConfig{Epochs: 1, Validation: val, Evaluate: EvalStepOf(m, SparseSoftmaxCrossEntropy, map[string]Metric{"accuracy": Accuracy})}
	fns := []nilsweep.Func{
		{Name: "Fit", Fn: Fit, Valid: []any{context.Background(), train, vars, opt, step, cfg}},
		{Name: "Evaluate", Fn: Evaluate, Valid: []any{context.Background(), val, cfg.Evaluate}},
		{Name: "SaveCheckpoint", Fn: SaveCheckpoint, Valid: []any{filepath.Join(dir, "s.safetensors"), vars, opt, map[string]string{"a": "b"}}},
		{Name: "LoadCheckpoint", Fn: LoadCheckpoint},
		{Name: "RestoreCheckpoint", Fn: RestoreCheckpoint, Valid: []any{ckpt, vars, opt}},
		{Name: "NewConv2D", Fn: NewConv2D, Valid: []any{"c", rng, 3, 3, 1, 2, Conv2DOpts{}}},
		{Name: "NewConv1D", Fn: NewConv1D, Valid: []any{"c", rng, 3, 1, 2, Conv1DOpts{}}},
		{Name: "NewConv2DTranspose", Fn: NewConv2DTranspose, Valid: []any{"c", rng, 3, 3, 1, 2, Conv2DTransposeOpts{}}},
		{Name: "NewDepthwiseConv2D", Fn: NewDepthwiseConv2D, Valid: []any{"c", rng, 3, 3, 1, 2, Conv2DOpts{}}},
		{Name: "NewDense", Fn: NewDense, Valid: []any{"d", rng, 3, 2, DenseOpts{}}},
		{Name: "Describe", Fn: Describe},
		{Name: "AllReduceGradients", Fn: AllReduceGradients, Valid: []any{comm, []*tensor.Tensor{x}}},
		{Name: "DistributedTrainStep", Fn: DistributedTrainStep, Valid: []any{comm, m, Loss(SparseSoftmaxCrossEntropy), opt, []DistributedOptions{}}},
		{Name: "BroadcastVariables", Fn: BroadcastVariables, Valid: []any{comm, vars}},
		{Name: "PipelineStage", Fn: PipelineStage, Valid: []any{m, 1, 0, PipelineOptions{}}},
		{Name: "PipelineTrainStep", Fn: PipelineTrainStep, Valid: []any{m, Loss(SparseSoftmaxCrossEntropy), opt, rdv, PipelineOptions{}}},
		{Name: "PipelineCheckpointPath", Fn: PipelineCheckpointPath, Valid: []any{ckpt, 0, 1}},
		{Name: "NewLocalPipeline", Fn: func(model *Sequential, loss Loss, newOpt func() Optimizer) error {
			p, err := NewLocalPipeline(model, loss, newOpt, 1, PipelineOptions{})
			if err == nil {
				p.Close()
			}
			return err
		}, Valid: []any{m, Loss(SparseSoftmaxCrossEntropy), func() Optimizer { return NewAdam(Constant(0.1)) }}},
		{Name: "SavePipelineCheckpoint", Fn: SavePipelineCheckpoint, Valid: []any{ckpt, 0, 1, vars, opt, map[string]string{}}},
		{Name: "RestorePipelineCheckpoint", Fn: RestorePipelineCheckpoint, Valid: []any{ckpt, vars, opt}},
		{Name: "GlorotUniform", Fn: GlorotUniform, Valid: []any{rng, tensor.Float32, []int{2, 3}}},
		{Name: "GlorotNormal", Fn: GlorotNormal, Valid: []any{rng, tensor.Float32, []int{2, 3}}},
		{Name: "HeNormal", Fn: HeNormal, Valid: []any{rng, tensor.Float32, []int{2, 3}}},
		{Name: "HeUniform", Fn: HeUniform, Valid: []any{rng, tensor.Float32, []int{2, 3}}},
		{Name: "RandomNormal", Fn: func(rng *tensor.RNG) *tensor.Tensor { return RandomNormal(0, 1)(rng, tensor.Float32, 2, 3) }, Valid: []any{rng}},
		{Name: "TruncatedNormal", Fn: func(rng *tensor.RNG) *tensor.Tensor { return TruncatedNormal(0, 1)(rng, tensor.Float32, 2, 3) }, Valid: []any{rng}},
		{Name: "Zeros", Fn: Zeros, Valid: []any{rng, tensor.Float32, []int{2, 3}}},
		{Name: "ZerosInit", Fn: ZerosInit, Valid: []any{rng, tensor.Float32, []int{2, 3}}},
		{Name: "Orthogonal", Fn: Orthogonal, Valid: []any{rng, tensor.Float32, []int{3, 3}}},
		{Name: "MeanSquaredError", Fn: MeanSquaredError, Valid: []any{x, x}},
		{Name: "SoftmaxCrossEntropy", Fn: SoftmaxCrossEntropy, Valid: []any{x, x}},
		{Name: "SparseSoftmaxCrossEntropy", Fn: SparseSoftmaxCrossEntropy, Valid: []any{x, labels}},
		{Name: "SparseSoftmaxCrossEntropyWith", Fn: func(logits, labels *tensor.Tensor) *tensor.Tensor {
			return SparseSoftmaxCrossEntropyWith(CrossEntropyOpts{LabelSmoothing: 0.1, Ignore: []int{0}})(logits, labels)
		}, Valid: []any{x, labels}},
		{Name: "SoftmaxCrossEntropyWith", Fn: func(logits, labels *tensor.Tensor) *tensor.Tensor {
			return SoftmaxCrossEntropyWith(CrossEntropyOpts{LabelSmoothing: 0.1})(logits, labels)
		}, Valid: []any{x, x}},
		{Name: "BinaryCrossEntropyWithLogits", Fn: BinaryCrossEntropyWithLogits, Valid: []any{x, x}},
		{Name: "Accuracy", Fn: Accuracy, Valid: []any{x, labels}},
		{Name: "SetTraining", Fn: SetTraining},
		{Name: "AllVariables", Fn: AllVariables},
		{Name: "Values", Fn: Values, Valid: []any{vars}},
		{Name: "NewSequential", Fn: NewSequential},
		{Name: "NewBatchNorm", Fn: NewBatchNorm},
		{Name: "NewLayerNorm", Fn: NewLayerNorm},
		{Name: "NewPReLU", Fn: NewPReLU, Valid: []any{"p", 2, 0.25, ops.NHWC, tensor.Float32}},
		{Name: "NewRMSNorm", Fn: NewRMSNorm},
		{Name: "NewTransformerBlock", Fn: NewTransformerBlock, Valid: []any{"b", rng, 8, 2, MultiHeadAttentionOpts{}}},
		{Name: "NewMultiHeadAttention", Fn: NewMultiHeadAttention, Valid: []any{"a", rng, 8, 2, MultiHeadAttentionOpts{}}},
		{Name: "NewDropout", Fn: NewDropout, Valid: []any{0.5, rng}},
		{Name: "NewEmbedding", Fn: NewEmbedding, Valid: []any{"e", rng, 4, 2, tensor.Float32}},
		{Name: "Constant", Fn: Constant},
		{Name: "StepDecay", Fn: StepDecay},
		{Name: "Cosine", Fn: Cosine},
		{Name: "DecayMatrices", Fn: DecayMatrices},
		{Name: "Warmup", Fn: Warmup},
		{Name: "ClipByGlobalNorm", Fn: ClipByGlobalNorm, Valid: []any{[]*tensor.Tensor{x, x}, 1.0}},
		{Name: "ClipByGlobalNormTensor", Fn: ClipByGlobalNormTensor, Valid: []any{[]*tensor.Tensor{x, x}, 1.0}},
		{Name: "NewAdam", Fn: NewAdam},
		{Name: "NewLossScaleOptimizer", Fn: NewLossScaleOptimizer},
		{Name: "NewClippedOptimizer", Fn: NewClippedOptimizer, Valid: []any{NewAdam(Constant(0.1)), 1.0}},
		{Name: "NewAccumulatedOptimizer", Fn: NewAccumulatedOptimizer, Valid: []any{NewAdam(Constant(0.1)), 2}},
		{Name: "NewAdamW", Fn: NewAdamW},
		{Name: "NewRMSProp", Fn: NewRMSProp},
		{Name: "NewSGD", Fn: NewSGD},
		{Name: "Predict", Fn: Predict, Valid: []any{m, x}},
		{Name: "NewLSTMCell", Fn: NewLSTMCell, Valid: []any{"l", rng, 3, 2, tensor.Float32}},
		{Name: "NewGRUCell", Fn: NewGRUCell, Valid: []any{"g", rng, 3, 2, tensor.Float32}},
		{Name: "TrainStep", Fn: TrainStep, Valid: []any{m, Loss(SparseSoftmaxCrossEntropy), opt}},
		{Name: "EvalStepOf", Fn: EvalStepOf, Valid: []any{m, Loss(SparseSoftmaxCrossEntropy), map[string]Metric{"accuracy": Accuracy}}},
		{Name: "TracedTrainStep", Fn: TracedTrainStep, Valid: []any{m, Loss(SparseSoftmaxCrossEntropy), opt}},
		{Name: "RecordedTrainStep", Fn: RecordedTrainStep, Valid: []any{m, Loss(SparseSoftmaxCrossEntropy), opt}},
		{Name: "NewSummaryWriter", Fn: NewSummaryWriter},
		{Name: "Summary", Fn: Summary, Valid: []any{m, x}},
		{Name: "Summarize", Fn: Summarize, Valid: []any{m, x}},
	}
	nilsweep.Covered(t, ".", fns, nil)
	nilsweep.Sweep(t, fns)
	_ = tape.New
}
