// Package difftest is eagerflow's differential suite against PyTorch: it
// has no code of its own outside its tests.
//
// The tests generate seeded random programs over the op library (the
// steps of an op program: elementwise functions, broadcasting, layouts,
// reductions, structure ops, products, convolutions with every padding,
// stride and dilation mix, pooling, gathers, sorts, masked selects and
// scatters, and XLA's general window ops: ReduceWindow, ExtractPatches,
// SelectAndScatter and Conv of one to three spatial dimensions with
// dilations, negative padding, feature groups and shuffled dimension
// numbers) and control-flow
// programs (data-dependent while loops, scans, conds in loops, nested
// loops), run them eagerly, traced (a tape inside the traced function and
// around its calls, several calls, a retrace) and in PyTorch
// (torch_eval.py, float64, through Debian's python3-torch), and compare
// values, gradients of every input and Hessian-vector products.
//
// Those programs are small and in float64, which reaches the kernels'
// scalar paths. TestOpsFloat32AtSize runs programs at size, up to 2^15
// elements with long rows, in float32, eagerly, traced, and through the
// traced loss under a tape (a graph's fused chains run op by op), against
// PyTorch's float64 on the same rounded inputs, to 2e-4 of each tensor's
// largest magnitude (or, where a result is ill-conditioned, ten times
// PyTorch's own float32 error): the vector kernels, blocked products, sharded loops,
// their blocks and tails, and a graph's fused elementwise kernels
// (-difftest.sizeseeds, -difftest.sizecases). Their ops have no jumps
// (kinks, ties, rounding) that float32 could move, but for the ones that
// pick elements by comparing them (extrema, sorts, max pooling), drawn
// over fresh inputs, which are the same numbers in both runs.
// TestOpsFloat32AtSizeOnGPU runs them on the GPU against the CPU's
// float64: the GPU kernels' tiled paths (-difftest.gpusizecases).
//
// Where two rules are both right but pick another subgradient at a tie,
// torch_eval.py spells eagerflow's documented rule out in PyTorch ops
// (Max and Min give a tie to their first operand, the max pool to its
// window's first maximum), so gradients are compared at ties too; the
// rules that agree (reductions share a tied extremum, both sorts are
// stable) use PyTorch's own functions.
//
// nn's layers and optimizers meet PyTorch's own modules too (nn_test.go,
// nn_torch.py): LSTM and GRU against torch.nn.LSTM and torch.nn.GRU from
// the same weights, BatchNorm in training against F.batch_norm (its
// running statistics as Keras moves them), the losses against
// F.mse_loss, F.cross_entropy and F.binary_cross_entropy_with_logits,
// and SGD, Adam, AdamW and
// RMSProp against torch.optim, step by step; the transformer block
// against nanoGPT's (transformer_test.go); and a small CNN's training
// in float32 (cnn_test.go, cnn_torch.py: two convolutions with max
// pooling and optionally BatchNorm, two dense layers, NHWC and NCHW, four
// SGD steps with nn.TrainStep and nn.TracedTrainStep and on the GPU)
// against PyTorch's in float64 from the same variables and batch.
//
// Run it with go test ./internal/difftest (it skips, naming the install
// command, when /usr/bin/python3 cannot import torch); -difftest.cases and
// -difftest.seeds make the long runs:
//
//	go test ./internal/difftest -difftest.cases=5000 -difftest.seeds=1,2,3,4,5
package difftest
