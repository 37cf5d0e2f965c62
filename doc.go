// Package eagerflow is the tour of a Go library for numeric work: tensors
// whose ops run the moment they are called, on the CPU or an NVIDIA GPU; a
// gradient tape that differentiates any Go computation, loops and branches
// included; tracing that turns the same Go function into a dataflow graph;
// data pipelines that read what the TensorFlow world writes; and the
// layers, optimizers and training loop that make a model a few lines.
//
// This package holds no code: it is the map. Each step below names the
// package to read next; each of those has runnable examples (go doc
// <package>, or the Examples section on pkg.go.dev).
//
// # Tensors and ops
//
// A tensor.Tensor is an immutable n-dimensional array: a dtype (Float32,
// Float64, Int32, Int64, Uint8, Bool; the half floats BFloat16 and
// Float16, computed in float32 and rounded once, and the FP8 types of
// ops.ScaledMatMul), a shape and a buffer on a device (a tape.Variable's
// value is the one tensor whose elements change, in place, when it is
// assigned; ops.Identity copies it). Make one from a Go slice, a scalar or the seeded RNG, and compute with
// package ops, whose every op runs at once and checks its inputs first:
//
//	x := tensor.FromSlice([]float32{1, 2, 3, 4}, 2, 2)
//	y := ops.Div(ops.MatMul(x, x), tensor.Scalar(2))  // a Go number takes x's dtype
//	row := ops.Index(y, 1, ops.Until(1))                // y[1, :1]
//
// A mistake (shapes that do not broadcast, an index out of range) panics
// with a *tensor.Error naming the op, the inputs and your file:line;
// tensor.Catch turns it into an error. Ops follow XLA's semantics and
// NumPy's broadcasting.
//
// # Gradients
//
// Package tape records the ops run on variables (tape.Variable) or on
// watched tensors, and differentiates them: tp.Gradient(loss, w.Value()).
// Tapes nest (gradients of gradients), and Cond, While and Scan of package
// control are recorded as regions, so a gradient flows through a Go loop.
// tape.CheckGradient compares a gradient with finite differences.
//
// # Tracing
//
// control/trace turns a Go function over tensors into a graph on its first
// call and runs the graph afterwards: control flow becomes TensorFlow's
// frames, elementwise chains are fused, and a While under a tape gets a
// backward frame fed by stacks. Its doc says when tracing pays.
//
// # Data
//
// Package data runs tf.data-style pipelines (FromSlices, Map, Shuffle,
// Batch, Prefetch...) and reads TFRecord files and tf.train.Example
// records; data/idx, data/npy and data/csv read MNIST-style IDX files,
// NumPy arrays and typed CSV tables into tensors or datasets.
//
// # Training
//
// Package nn has the layers (Dense, Conv2D, pooling, normalization,
// Dropout, Embedding, LSTM and GRU cells, Sequential), initializers,
// losses, metrics, optimizers and schedules, safetensors checkpoints and
// TensorBoard summaries, and Fit: the loop with validation, callbacks
// (early stopping, checkpoints, learning-rate plateaus) and a progress
// bar; a Sequential's Policy (nn.MixedBFloat16, or nn.MixedFloat16 with
// a LossScaleOptimizer) trains in half precision on float32 variables.
// Package plot draws the curves Fit returns and images of tensors.
// examples/fashion-mnist is the program to read first.
//
// In Jupyter, through the GoNB kernel, the module notebook (a go.mod of its
// own) shows tensors as tables, images, heatmaps, traced graphs and
// training curves that redraw while Fit runs: examples/notebooks/tour.ipynb,
// after scripts/install-notebook.
//
// When one machine is not enough, package collective and collective/mpi
// train data-parallel over MPI: nn.DistributedTrainStep averages the
// gradients of every process's shard (data.Dataset.Shard), and
// nn.FitConfig.Comm keeps the processes' models, logs and checkpoints in
// step (examples/distributed, started by mpirun).
//
// # Devices
//
// Ops run where their inputs are: the CPU (backend/cpu, linked in by
// packages tape, control, control/trace and nn; a program of tensor and
// ops alone imports it blank, as its first op's error says) or an NVIDIA
// GPU
// through backend/cuda (cuda.Open(0) gives gpu:0; t.To(dev) moves a
// tensor). To train on a GPU, make the model while it is the default
// device (device.SetDefault(gpu) returns the function that restores the
// previous one) and move the batches there with the dataset's To(gpu);
// checkpoints save and restore across devices. Package device is the
// interface a new backend implements; the README's map shows how the
// packages stack.
package eagerflow
