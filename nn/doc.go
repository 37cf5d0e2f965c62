// Package nn is what a training loop needs: layers, initializers, losses,
// metrics, optimizers, learning-rate schedules, checkpoints and TensorBoard
// summaries, all built on ops, tape and control.
//
// # Layers
//
// Layers are plain structs made by New functions and used through Module
// (Forward, Variables): Dense, Conv2D, Conv1D (causal padding too),
// Conv2DTranspose (an upsampling decoder's: Conv2D's input gradient),
// DepthwiseConv2D, MaxPool2D, AvgPool2D, GlobalAvgPool2D, GlobalMaxPool2D,
// UpSampling2D, Residual (a skip connection around a block), BatchNorm
// (training and inference, running statistics as State), LayerNorm,
// Dropout, Embedding, Flatten, Activation (any elementwise function: ops.Relu,
// ops.Silu, ...), PReLU (its slopes learned), the recurrent cells LSTMCell and
// GRUCell with RNN running a cell over a sequence through control.Scan (so
// it differentiates through the loop as one region; on a GPU an LSTM's or
// a GRU's steps are one launch each way, ops.LSTMSequence and
// ops.GRUSequence) and Bidirectional
// running two cells, from the sequence's start and from its end, and
// Sequential.
// Transformers: MultiHeadAttention (ops.Attention over heads of one joint
// projection, causal or not, dropout of the weights), RMSNorm and
// TransformerBlock (pre-norm, GELU MLP, residual dropout); padded
// sequences leave their padding out of the attention (ForwardMasked, a
// bool [N, T] of the positions kept); a decoder attends to an encoder's
// output with ForwardCross; generation keeps keys and values in
// a KVCache (ForwardCached) or, for a traced loop, in fixed-size caches
// (ForwardStep). SetTraining switches Dropout,
// BatchNorm and the attention's dropout between modes, inside any
// Container (a module listing its Modules, as Sequential does); layers
// start in training mode, and Predict runs a model in inference mode and
// puts each layer back. Variables are tape.Variables named
// "<layer>/<variable>", watched by every tape.
//
// # Training
//
// Initializers (GlorotUniform, GlorotNormal, HeNormal, HeUniform,
// Orthogonal, Zeros) draw from a seeded tensor.RNG. Losses (MeanSquaredError,
// SoftmaxCrossEntropy, SparseSoftmaxCrossEntropy, BinaryCrossEntropyWithLogits)
// return the batch mean, the cross-entropies with label smoothing and
// ignored labels (padding) through SparseSoftmaxCrossEntropyWith and
// SoftmaxCrossEntropyWith; Accuracy and Mean are metrics. Optimizers (SGD with
// momentum and Nesterov, Adam, AdamW with its decay limited to some
// variables by Adam.Decays, RMSProp) update variables in place from
// a Schedule (Constant, StepDecay, Cosine, Warmup, or Plateau's, which
// lowers the rate when a validation metric stalls); ClipByGlobalNorm bounds
// gradients, and ClippedOptimizer bounds an optimizer's, for the train
// steps and Fit (inside nn's optimizers' own step: recorded with it,
// half gradients taken as they are); AccumulatedOptimizer steps with the
// mean gradient of several micro-batches (gradient accumulation).
//
// Fit runs the loop: a Step per batch (TrainStep makes the usual one,
// TracedTrainStep the same traced into a graph, RecordedTrainStep that graph
// replayed as one CUDA graph on a GPU; any Go function computing
// a loss on a tape is one), validation through an
// EvalStep after each epoch (EvalStepOf), callbacks (EarlyStopping,
// CheckpointBest, Plateau, CallbackFunc), checkpoints and resumption,
// TensorBoard summaries, and progress: a bar on a terminal, plain lines
// elsewhere. History keeps each step's loss and each epoch's Logs;
// package plot draws them. With no tape recording (evaluation, inference),
// Sequential, Dense and Conv2D hand each intermediate's buffer back as soon
// as the next op has read it. A Conv2D with a bias and no activation or
// ops.Relu runs as one op, ops.FusedConv2D; a Dense so, ops.FusedMatMul.
//
// # Mixed precision
//
// A Sequential's Policy (MixedBFloat16, MixedFloat16: Keras' policies)
// makes its layers compute in a half type while their variables stay
// float32: each layer casts its float input, and its variables, to the
// compute dtype, the norms compute their statistics in float32, the
// model's output is float32, and the losses compute in float32; the
// gradients reach the float32 variables through the casts, so the
// optimizers update float32 master weights. The casts launch nothing
// from step to step: the half copies are kept, and a GPU's optimizer
// step takes the half gradients and writes the copies (policy.go). For float16, wrap the
// optimizer in a LossScaleOptimizer (dynamic loss scaling: steps with
// non-finite gradients are skipped, the scale shrinks and grows, and is
// saved in checkpoints); the train steps scale the loss by it.
//
// # Beyond one process
//
// DistributedTrainStep trains a copy of the model on every rank of a
// collective.Comm, each on its shard of the data, averaging the gradients
// (data parallelism; FitConfig.Comm does the rest). PipelineTrainStep cuts
// a Sequential into stages, one per rank of a collective.Rendezvous, and
// trains each stage on its rank with micro-batches (GPipe or 1F1B), the
// activations and gradients passing between neighbours (pipeline
// parallelism); NewLocalPipeline runs such stages in one process, on the
// devices their layers live on; SavePipelineCheckpoint and
// RestorePipelineCheckpoint keep a stage file each and read them back on
// any layout.
//
// # Seeing a model
//
// A Sequential prints as a tree of its layers with their configuration and
// parameter counts (fmt.Println(model)); Summary adds each layer's output
// shape for an input; Describe is one layer in a line. An error inside a
// Sequential names the layer it happened in ("ops: conv1: FusedConv2D: ...").
//
// # Checkpoints and summaries
//
// SaveCheckpoint and RestoreCheckpoint use the safetensors format (weights
// open in PyTorch and JAX tools), save atomically (a crash mid-save leaves
// the previous checkpoint intact) and restore optimizer state; a variable
// missing or of another shape or dtype is an error naming it, and nothing is
// changed then. SummaryWriter writes TensorBoard event files of scalars and
// histograms.
//
// # Errors and concurrency
//
// Shape mistakes panic with *tensor.Error from the ops underneath;
// checkpoint and summary I/O return errors (ErrCheckpoint). A model is
// trained by one goroutine at a time; separate models train in parallel.
package nn
