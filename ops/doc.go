// Package ops declares eagerflow's operations: XLA's operation semantics and
// the ops neural networks need. Each op is declared once, in the file of its
// family: name, attributes, dtype rule, shape rule (Infer) and gradient
// rule; many are compositions of the others and get gradients that way. A
// declaration says nothing about devices: each backend registers its
// kernels for the op by name (the CPU's are in package backend/cpu, in a
// file named as the declaring one), and ops imports none of them. A
// program gets the CPU kernels by importing backend/cpu, which package
// tape (and so everything that trains) does. The functions here run an op
// eagerly through package eager; when a tape is recording, the op is
// recorded.
//
// Shapes below read "a: [m k], b: [k n] -> [m n]". Unless stated, inputs of
// one op share a dtype and outputs have it. A Go number made a tensor by
// tensor.Scalar is weakly typed, as JAX's Python scalars are: beside a
// tensor of another dtype or device it takes theirs, so
// Div(x, tensor.Scalar(255.0)) divides a float32 x and Add(i, tensor.Scalar(1))
// adds to int32 indices; a value the dtype cannot hold exactly (0.5 beside
// integers, 256 beside uint8) is ErrDType. Weak scalars alone meet at the
// highest kind among them (bool, integer, float) and its narrowest dtype
// present: Scalar(float32(10)) times Scalar(0.5) is float32. Tensors ops
// compute are never weak: mixing their dtypes is ErrDType (Cast says which one is meant).
// Gradients flow to float inputs
// only: integer and bool inputs (indices, labels, predicates) get none.
// Rounding, comparisons, logical ops, ArgSort/ArgMax/ArgMin and StopGradient
// block gradients, as in TensorFlow.
//
// # Elementwise binary (binary.go, floordiv.go, logarithms.go, logical.go), NumPy broadcasting
//
//	Add, Sub, Mul, Div, Rem, Pow             numeric; integer x/0 = -1 and x%0 = x (XLA); Rem has the dividend's sign
//	FloorDiv, Mod                            numeric (floordiv.go); Python's // and %: the quotient rounded
//	                                         toward -∞, the remainder with the divisor's sign
//	Xlogy, Xlog1py                           float (logarithms.go); x·log y and x·log1p y, 0 where x is 0
//	Maximum, Minimum                         numeric (XLA's Max and Min); Max and Min are deprecated aliases
//	Atan2(y, x), Hypot(a, b), LogAddExp      float (trigonometry.go); C's special cases
//	Zeta(s, q)                               float (gamma.go); Hurwitz's, no gradient in s
//	Igamma(a, x), Igammac(a, x)              float (igamma.go); regularized P and Q, no gradient in a
//	LogicalAnd, LogicalOr                    bool
//	BroadcastDims(op, lhs, rhs, dims...)     XLA's explicit broadcast_dimensions form of any binary op
//
// # Elementwise unary (unary.go, math.go, trigonometry.go, gamma.go, normal.go, logarithms.go, bessel.go, logical.go)
//
//	Neg, Abs, Sign, Square, Relu             numeric
//	Exp, Log, Sqrt, Rsqrt, Tanh, Sigmoid     float
//	Sin, Cos, Log1p, Expm1, Erf, Erfinv      float
//	Tan, Asin, Acos, Atan                    float
//	Sinh, Cosh, Asinh, Acosh, Atanh          float
//	Log2, Log10, Exp2                        float; exact at the powers of their bases
//	Lgamma, Digamma, Polygamma(n, x)         float (gamma.go); each one's derivative the next
//	Erfc, Erfcx                              float (normal.go); 1 - erf without cancelling, e^(x²)·erfc
//	Logit, LogitEps                          float (logarithms.go); the log-odds, Sigmoid's inverse
//	BesselI0, BesselI1, BesselI0e, BesselI1e float (bessel.go); modified Bessel functions, and scaled by e^-|x|
//	Ndtr, LogNdtr, Ndtri                     float (normal.go); Φ, ln Φ and Φ⁻¹ of the standard normal, tails
//	                                         to their last digits
//	Ceil, Floor, Round                       float, no gradient; Round halves away from zero (XLA)
//	IsFinite                                 float -> bool
//	LogicalNot                               bool
//	Identity, StopGradient                   any dtype
//
// # Comparison, selection, conversion (compare.go, structure.go, cast.go)
//
//	Eq, Ne                                   any dtype -> bool (IEEE: NaN is unequal to all)
//	Lt, Le, Gt, Ge                           numeric -> bool
//	Where(cond, x, y)                        cond bool; all three broadcast (XLA's Select; Select is a deprecated alias)
//	Clip(x, lo, hi)                          min(max(x, lo), hi)
//	Cast(x, dtype)                           XLA's ConvertElementType
//	ToDevice(x, dev)                         a copy on dev (tensor.Tensor.To records it for tapes and traces; device.go)
//
// # Shape and data movement (shape.go, slice.go, indexing.go, structure.go, dynamic.go)
//
//	Reshape(x, sizes...)                     a view; one size may be -1
//	ReshapeDims(x, dims, sizes...)           XLA's Reshape with a dimension order
//	Collapse(x, dims...)                     XLA's Collapse (dimension numbers as in its examples)
//	Transpose(x, perm...)                    a layout change, no copy
//	Broadcast(x, sizes...)                   XLA: new leading dims (NumPy's broadcasting is BroadcastTo)
//	BroadcastTo(x, shape...), SumTo          NumPy broadcast to a shape, and its inverse (sums)
//	ExpandDims, Squeeze, Tile, Rev           NumPy/XLA vocabulary
//	Roll(x, shift, axis)                     torch.roll/np.roll along one axis
//	Stack, Unstack, Split                    along an axis
//	Index(x, items...)                       NumPy's x[...]: ints, R/From/Until/Every ranges,
//	                                         "1:-1:2" strings, Ellipsis, NewAxis, one index tensor
//	                                         or one bool mask
//
// # Boolean masks (mask.go): the result's size is read from the mask's values
//
//	Nonzero(x)                               int64 [n, rank]: the indices of x's nonzero elements
//	MaskedSelect(x, mask)                    [n]: x where mask (broadcast to x) is true
//	MaskedFill(x, mask, value)               x with value where mask is true
//	MaskedScatter(x, mask, source)           x with source's first n elements where mask is true
//	Slice(x, start, limit, strides)          XLA's Slice with strides
//	DynamicSlice, DynamicUpdateSlice         start indices as tensors, clamped as XLA does
//	Pad(x, value, PadDim...)                 XLA's Pad: low/high (negative allowed) and interior
//	Concatenate(axis, xs...)                 XLA's ConcatInDim
//	Iota(dtype, shape, dim)                  XLA's Iota
//	Tril(x, k), Triu(x, k)                   x below (above) the k-th diagonal of its last two dims, zeros
//	                                         elsewhere (triangle.go)
//	Tuple, GetTupleElement, Call, Map        XLA's tuples and sub-computations (Go functions)
//
// # Reductions (reduce.go, reduce_func.go, logical.go)
//
//	Reduce(x, Reduction{Kind, Dims, KeepDims})  built-in Sum/Mean/Max/Min/Prod over any dims
//	Sum, Mean, Prod, Amax, Amin              shorthands over dims (all by default); ReduceMaxOf and
//	                                         ReduceMinOf are deprecated aliases of Amax and Amin
//	KeepDims(reduce, x, dims...)             any of them (and ArgMax, ArgMin) keeping the reduced dims as 1
//	Any, All                                 bool
//	LogSumExp(x, dims...)                    log Σ exp, without overflow; float (statistics.go)
//	Var, Std                                 variance and standard deviation over dims, ddof 0 as NumPy's
//	                                         (torch.var divides by n-1 by default); float
//	Norm(x, ord, dims...)                    torch.linalg.vector_norm: ord 2, 1, ±Inf, 0 or any p > 0
//	ReduceWith(x, init, f, dims...)             XLA's Reduce with a user function
//	Cumsum(x, axis, exclusive, reverse)         running sums
//	Cumprod(x, axis, exclusive, reverse)        running products
//
// # Sorting, indexing (sort.go, gather.go)
//
//	ArgSort, Sort, SortKeyVal                stable, NaNs last (first descending); Sort differentiates through the permutation
//	TopK(x, k), ArgMax, ArgMin               along an axis; indices are Int64
//	TakeAlongAxis(x, idx, axis)              NumPy's take_along_axis
//	Gather(params, idx, axis)                an embedding lookup when axis is 0
//	ScatterAdd, Scatter                      Gather's adjoint, and replacement
//	OneHot(ids, depth, dtype)                [...] -> [..., depth]
//
// # Windows and convolution (window.go, reduce_window.go, window_spread.go, conv.go, pool.go, pool_argmax.go)
//
//	Window{Dims, Strides, Padding, BaseDilation, WindowDilation}   XLA's window; SamePadding for TensorFlow's SAME
//	ExtractPatches, ScatterPatches           im2col in any rank, and its adjoint
//	ReduceWindow(x, init, kind, w)           XLA's ReduceWindow (Sum, Max, Min); ReduceWindowWith for user functions
//	SelectAndScatter(x, src, init, sel, w)   XLA's SelectAndScatter with Add
//	Conv(x, k, ConvOpts)                     XLA's ConvGeneralDilated: N-d, strides, padding, both dilations, groups, dim numbers
//	Conv2D, Conv2DBackpropInput/Filter       NHWC or NCHW, SAME/VALID/explicit, HWIO filters; runs as
//	                                         three ops of its own, one GEMM per image (im2row for NCHW,
//	                                         im2col against the filter in place for NHWC)
//	FusedConv2D(x, f, bias, o, act)          Conv2D + BiasAdd (+ Relu) as one op (TensorFlow's _FusedConv2D):
//	                                         the bias and Relu applied to each image's output in cache;
//	                                         its gradient is one op too (FusedConv2DBackprop: Relu's mask,
//	                                         the bias sum and both backprops per image, dz in cache)
//	DepthwiseConv2D                          per-channel filters [kh kw c multiplier]
//	MaxPool2D, AvgPool2D                     via ReduceWindow; max pooling's gradient is SelectAndScatter
//	                                         (windows over the last two dims run as plain plane loops),
//	                                         or on the GPU MaxUnpool2D of the choices its forward kept
//	MaxPool2DWithArgmax, MaxUnpool2D         max pooling with each window's tap number (a byte), and
//	                                         PyTorch's MaxUnpool2d of those taps (pool_argmax.go)
//
// # Linear algebra (matmul.go, dot.go, einsum.go, linalg*.go)
//
//	MatMul(a, b), MatMulT(a, b, ta, tb)      [..., m k]·[..., k n]; batched, or b shared; packed GEMM,
//	                                         AVX-512 or AVX2+FMA micro-kernels chosen at start-up
//	Dot(lhs, rhs), DotGeneral(lhs, rhs, d)   XLA's Dot and DotGeneral (batch and contracting dims)
//	Einsum(spec, xs...)                      np.einsum/torch.einsum ("bij,bjk->bik", "..." too), by
//	                                         DotGeneral two operands at a time (einsum.go)
//	Cholesky(a)                              [..., n n] SPD -> lower L; NaN where not positive definite (JAX's)
//	TriangularSolve(a, b, opts)              a·x = b or aᵀ·x = b, a's lower or upper triangle; batches broadcast
//	CholeskySolve(l, b)                      (l·lᵀ)·x = b by two triangular solves
//	Solve(a, b), Inverse(a)                  LU with partial pivoting in float64 (linalg_lu.go); ±∞/NaN if singular
//	Det(a), Slogdet(a)                       the determinant; its sign and log|det| (no overflow)
//	LU(a), LUSolve(lu, perm, b, opts)        the factors, exchanges and permutation; solves reusing them (linalg_lufactor.go)
//	LUUnpack(lu, perm)                       p, l and u with a = p·l·u
//	MatrixExp(a)                             exp of square matrices: Padé scaling and squaring (linalg_expm.go)
//	Eigh(a)                                  symmetric: ascending eigenvalues, eigenvectors (Jacobi; linalg_eigh.go)
//	QR(a)                                    reduced q·r of [..., m n], r's diagonal ≥ 0 (Householder; linalg_qr.go)
//	SVD(a)                                   reduced u·diag(s)·vt, s descending (one-sided Jacobi; linalg_svd.go)
//	Lstsq(a, b), Pinv(a)                     least squares by QR, the pseudo-inverse by SVD (linalg_functions.go)
//	MatrixNorm(a, ord), Trace, Diagonal      fro, nuc, ±2, ±1, ±inf; of square matrices' diagonals
//
// # Neural-net functions (activation.go, rectifiers.go, smooth_units.go, softmax.go, layernorm.go, attention.go)
//
//	Gelu, GeluTanh, Softplus                 float activations, one op each way
//	Prelu(x, alpha), LeakyRelu(x, alpha)     x or alpha·x (alpha broadcast: a learned slope per channel)
//	Relu6, HardSigmoid, HardSwish            the clamps of MobileNet, PyTorch's kinks
//	Elu, Selu, Celu(x, alpha)                exponential linear units
//	Silu, Mish, Softsign                     x·σ(x), x·tanh(softplus(x)), x/(1 + |x|)
//	LogSoftmax(x, axis), Softmax(x, axis)    float, stable
//	SoftmaxCrossEntropy(logits, probs)       [..., c] -> [...]
//	SparseSoftmaxCrossEntropy(logits, ids)   [n c], [n] int -> [n]
//	LayerNorm(x, gamma, beta, eps)           [..., c], [c] -> [..., c]; one op each way
//	RMSNorm(x, gamma, eps)                   [..., c], [c] -> [..., c]; one op each way
//	BatchNorm(x, gamma, beta, axis, eps)     x, [c] -> x, mean [c], variance [c]; one op each way
//	Attention(q, k, v, mask, causal, scale)  [..., tq d], [..., tk d], [..., tk dv] -> [..., tq dv]
//	AttentionDropout(q, k, v, causal, ...)   the same, its weights dropped (the mask drawn in the kernels)
//	LSTMCell(xz, hz, c)                      [n 4h], [n 4h], [n h] -> h', c' [n h]; one op each way
//	GRUCell(xp, hp, h)                       [n 3h], [n 3h], [n h] -> h' [n h]; one op each way
//	LSTMSequence(xz, u, h0, c0)              [n t 4h], [h 4h], [n h] -> ys [n t h], hT, cT; a GPU launch each way
//	GRUSequence(xp, u, b, h0)                [n t 3h], [h 3h], [3h], [n h] -> ys [n t h], hT; likewise
//	BiasAdd(x, bias, format)                 NHWC or NCHW
//	L2Normalize(x, axis, eps)
//	Dropout(x, rate, rng)                    seeded; scales kept values by 1/(1-rate)
//	RngUniform, RngNormal, RngBernoulli      XLA's seeded generators (Philox)
//
// # Constants (constant.go)
//
//	ScalarLike, ZerosLike, OnesLike, FullLike  on the device and in the dtype of a tensor
//
// # Names and argument order
//
// One name per operation: NumPy's and PyTorch's where they agree (Where,
// BroadcastTo, Amax, Cumsum, TakeAlongAxis), XLA's for what NumPy lacks
// (Broadcast, ReduceWindow, DotGeneral, Iota); a second name is a
// deprecated alias kept for one minor release, marked in its doc and in
// CHANGELOG.md. Arguments come in one order: the tensors first, then the
// axis or dims they act along, then options. The exception is a function
// of a list of tensors (Concatenate, Stack), which takes the axis first
// and the tensors as its variadic tail, as Go requires of a list written
// out (Gorgonia's and GoMLX's Concat do the same). Dims that may be several
// are variadic and last (Sum(x, 0, 2)); none means all. The keepdims
// form of every reduction is KeepDims(reduction, x, dims...).
//
// # Errors
//
// Bad input panics with a *tensor.Error before any kernel runs, naming the
// op, its attributes, the input shapes and the caller; tensor.Catch recovers
// it. Shape rules read dtypes, shapes and attributes only, never values,
// and never change the call's attributes (the public functions normalise
// them: negative axes, window defaults). Values are checked by the kernels,
// under one policy: an index tensor's value outside its axis (Gather,
// Scatter, ScatterAdd, TakeAlongAxis, a SparseSoftmaxCrossEntropy label) is
// an error of kind ErrIndex naming its position, raised by the CPU kernel
// before it writes anything; a device that runs kernels asynchronously
// raises it when the host next synchronises with it. DynamicSlice and
// DynamicUpdateSlice clamp their starts instead, as XLA defines. Kernels
// never panic on float values: NaN and Inf propagate.
//
// # Concurrency
//
// Ops are safe to call from many goroutines. Large CPU kernels split their
// work over the device's workers; small ones run inline.
package ops
