// Package ops declares eagerflow's operations. Each op is declared once, in
// the file of its family: name, dtype rule, shape rule (Infer), gradient
// rule and CPU kernels. The functions here run an op eagerly through
// package eager; when a tape is recording, the op is recorded.
//
// Shapes below read "a: [m k], b: [k n] -> [m n]". Unless stated, inputs of
// one op share a dtype and outputs have it. Gradients flow to float inputs
// only; integer and bool inputs get none.
//
// # Elementwise binary (binary.go), NumPy broadcasting
//
//	Add, Sub, Mul, Div, Rem, Max, Min, Pow   numeric; Div/Rem by integer zero give -1 / the dividend (XLA)
//	BroadcastDims(op, lhs, rhs, dims...)     XLA's explicit broadcast_dimensions form of any of them
//
// # Elementwise unary (unary.go)
//
//	Neg, Abs, Sign, Square, Relu             numeric
//	Exp, Log, Sqrt, Rsqrt, Tanh, Sigmoid     float
//	Identity, StopGradient                   any dtype; StopGradient blocks gradients
//
// # Comparison and selection (compare.go, cast.go)
//
//	Eq, Ne                                   any dtype -> bool (IEEE: NaN is unequal to all)
//	Lt, Le, Gt, Ge                           numeric -> bool
//	Select(pred, onTrue, onFalse)            pred bool; all three broadcast
//	Cast(x, dtype)                           XLA's ConvertElementType
//
// # Shape and data movement (shape.go, slice.go), any dtype
//
//	Reshape(x, sizes...)                     a view; one size may be -1
//	ReshapeDims(x, dims, sizes...)           XLA's Reshape with a dimension order
//	Transpose(x, perm...)                    a layout change, no copy
//	Broadcast(x, sizes...)                   XLA: new leading dims
//	BroadcastTo(x, shape...)                 NumPy broadcast to a shape
//	SumTo(x, shape)                          the inverse of a broadcast (sums)
//	Slice(x, start, limit, strides)          XLA's Slice with strides
//	Pad(x, value, PadDim...)                 XLA's Pad: low/high (negative allowed) and interior
//	Concatenate(axis, xs...)                 XLA's ConcatInDim
//
// # Reductions (reduce.go), over any set of dims, optionally keeping them
//
//	Reduce(x, Reduction{Kind, Dims, KeepDims})
//	Sum, Mean, Prod, ReduceMaxOf, ReduceMinOf  shorthands over dims (all by default)
//
// # Linear algebra and losses (matmul.go, softmax.go)
//
//	MatMul(a, b), MatMulT(a, b, ta, tb)      [..., m k]·[..., k n]; batched, or b shared; AVX2/FMA kernels
//	LogSoftmax(x, axis), Softmax(x, axis)    float, stable
//	SoftmaxCrossEntropy(logits, probs)       [..., c] -> [...]
//	SparseSoftmaxCrossEntropy(logits, ids)   [n c], [n] int -> [n]
//	OneHot(ids, depth, dtype)                [...] -> [..., depth]
//
// # Constants (constant.go)
//
//	ScalarLike, ZerosLike, OnesLike, FullLike  on the device and in the dtype of a tensor
//
// # Errors
//
// Bad input panics with a *tensor.Error before any kernel runs, naming the
// op, its attributes, the input shapes and the caller; eager.Catch recovers
// it. Kernels never panic on values: NaN and Inf propagate.
//
// # Concurrency
//
// Ops are safe to call from many goroutines. Large kernels split their work
// over the CPU device's workers; small ones run inline.
package ops
