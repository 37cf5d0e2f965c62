package difftest

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// T is the tensor type, shortened.
type T = *tensor.Tensor

// Array is a float64 tensor as it travels to and from PyTorch: its shape
// and its little-endian bytes in base64, so that values cross exactly.
type Array struct {
	Shape []int  `json:"shape"`
	Data  string `json:"data"`
}

func encode(x T) *Array {
	if x == nil {
		return nil
	}
	v := tensor.ToSlice[float64](ops.Cast(x, tensor.Float64))
	b := make([]byte, 8*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(f))
	}
	return &Array{Shape: append([]int{}, x.Shape()...), Data: base64.StdEncoding.EncodeToString(b)}
}

func (a *Array) decode() ([]float64, error) {
	b, err := base64.StdEncoding.DecodeString(a.Data)
	if err != nil || len(b)%8 != 0 {
		return nil, fmt.Errorf("bad array data (%d bytes): %v", len(b), err)
	}
	v := make([]float64, len(b)/8)
	for i := range v {
		v[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return v, nil
}

// Attrs are every op's attributes; each op reads the ones it needs and
// torch_eval.py reads them under the same names.
type Attrs struct {
	Kind        string     `json:"kind"`
	Dims        []int      `json:"dims"`
	Keep        bool       `json:"keep"`
	Shape       []int      `json:"shape"`
	Perm        []int      `json:"perm"`
	Start       []int      `json:"start"`
	Limit       []int      `json:"limit"`
	Strides     []int      `json:"strides"`
	Cfg         [][3]int   `json:"cfg"`
	Axis        int        `json:"axis"`
	Reps        []int      `json:"reps"`
	Exclusive   bool       `json:"exclusive"`
	Reverse     bool       `json:"reverse"`
	TA          bool       `json:"ta"`
	TB          bool       `json:"tb"`
	Alpha       float64    `json:"alpha"`
	Eps         float64    `json:"eps"`
	Labels      []int      `json:"labels"`
	Format      string     `json:"format"`
	Relu        bool       `json:"relu"`
	Padding     string     `json:"padding"`
	Explicit    [2][2]int  `json:"explicit"`
	Dilations   []int      `json:"dilations"`
	Size        []int      `json:"size"`
	Indices     []int      `json:"indices"`
	IShape      []int      `json:"ishape"`
	Descending  bool       `json:"descending"`
	K           int        `json:"k"`
	Starts      []int      `json:"starts"`
	Sizes       []int      `json:"sizes"`
	Axes        []int      `json:"axes"`
	LhsBatch    []int      `json:"lhs_batch"`
	RhsBatch    []int      `json:"rhs_batch"`
	LhsContract []int      `json:"lhs_contract"`
	RhsContract []int      `json:"rhs_contract"`
	Spec        string     `json:"spec"`
	Upper       bool       `json:"upper"`
	Unit        bool       `json:"unit"`
	Window      *XLAWindow `json:"window,omitempty"`
	Conv        *XLAConv   `json:"conv,omitempty"`
}

// Step is one op of a program. Args name earlier values: -1-i is input i,
// j >= 0 the value of step j.
type Step struct {
	Op    string `json:"op"`
	Args  []int  `json:"args"`
	Attrs Attrs  `json:"attrs"`
}

// Program is a case of the op suite: inputs, steps and one weight per step
// value. Its loss is the sum over the steps of sum(value * weight), so the
// gradient of every input passes through every step's rule.
type Program struct {
	ID      int      `json:"id"`
	Inputs  []*Array `json:"inputs"`
	Steps   []Step   `json:"steps"`
	Weights []*Array `json:"weights"`
	// Second is a direction per input: the reference also returns the
	// Hessian-vector product, the gradient of Σ v·∂loss/∂in.
	Second []*Array `json:"second,omitempty"`
	// Float32 asks the reference to run in float32 (from the same
	// inputs): how far rounding alone moves each result.
	Float32 bool `json:"float32,omitempty"`

	in      []T // the inputs as tensors
	weights []T
	second  []T
}

// arg returns the value that an Args entry names.
func arg(in, vals []T, a int) T {
	if a < 0 {
		return in[-1-a]
	}
	return vals[a]
}

// run evaluates p's steps on in and returns every step's value and the
// loss.
func (p *Program) run(in []T) (vals []T, loss T) {
	for _, s := range p.Steps {
		args := make([]T, len(s.Args))
		for i, a := range s.Args {
			args[i] = arg(in, vals, a)
		}
		vals = append(vals, apply(s.Op, args, s.Attrs))
	}
	loss = tensor.Scalar(0.0)
	for i, v := range vals {
		loss = ops.Add(like(v, loss), ops.Sum(ops.Mul(v, like(v, p.weights[i]))))
	}
	return vals, loss
}

// unary maps the elementwise functions of one tensor.
var unary = map[string]func(T) T{
	"neg": ops.Neg, "abs": ops.Abs, "square": ops.Square, "relu": ops.Relu, "exp": ops.Exp,
	"log": ops.Log, "sqrt": ops.Sqrt, "rsqrt": ops.Rsqrt, "tanh": ops.Tanh, "sigmoid": ops.Sigmoid,
	"sin": ops.Sin, "cos": ops.Cos, "log1p": ops.Log1p, "expm1": ops.Expm1, "erf": ops.Erf,
	"softplus": ops.Softplus, "gelu": ops.Gelu, "gelu_tanh": ops.GeluTanh, "elu": ops.Elu,
	"floor": ops.Floor, "ceil": ops.Ceil, "round": ops.Round, "sign": ops.Sign, "identity": ops.Identity,
	"tan": ops.Tan, "asin": ops.Asin, "acos": ops.Acos, "atan": ops.Atan, "sinh": ops.Sinh, "cosh": ops.Cosh,
	"asinh": ops.Asinh, "atanh": ops.Atanh, "log2": ops.Log2, "log10": ops.Log10, "exp2": ops.Exp2,
	"selu": ops.Selu, "silu": ops.Silu, "mish": ops.Mish, "softsign": ops.Softsign, "relu6": ops.Relu6,
	"hardsigmoid": ops.HardSigmoid, "hardswish": ops.HardSwish, "erfinv": ops.Erfinv,
	"erfc": ops.Erfc, "erfcx": ops.Erfcx, "ndtr": ops.Ndtr, "log_ndtr": ops.LogNdtr, "ndtri": ops.Ndtri,
	"logit": ops.Logit, "i0": ops.BesselI0, "i1": ops.BesselI1, "i0e": ops.BesselI0e, "i1e": ops.BesselI1e,
	"lgamma": ops.Lgamma, "digamma": ops.Digamma,
	"polygamma1": func(x T) T { return ops.Polygamma(1, x) }, "polygamma2": func(x T) T { return ops.Polygamma(2, x) },
}

// binaryOps maps the broadcasting functions of two tensors.
var binaryOps = map[string]func(T, T) T{
	"add": ops.Add, "sub": ops.Sub, "mul": ops.Mul, "div": ops.Div, "max": ops.Max, "min": ops.Min,
	"pow": ops.Pow, "rem": ops.Rem, "atan2": ops.Atan2, "hypot": ops.Hypot, "logaddexp": ops.LogAddExp,
	"prelu": ops.Prelu, "xlogy": ops.Xlogy, "xlog1py": ops.Xlog1py, "zeta": ops.Zeta, "igamma": ops.Igamma, "igammac": ops.Igammac,
}

// lastTwo is the permutation of rank dimensions that swaps the last two.
func lastTwo(rank int) []int {
	perm := make([]int, rank)
	for i := range perm {
		perm[i] = i
	}
	perm[rank-2], perm[rank-1] = rank-1, rank-2
	return perm
}

// scaledEye is c·I of like's last dimension, dtype and device.
func scaledEye(like T, c float64) T { return scaledDiagonal(like, c, false) }

// scaledDiagonal is c·I of like's last dimension, dtype and device, or
// c·J (the anti-diagonal's ones) where anti.
func scaledDiagonal(like T, c float64, anti bool) T {
	n := like.Dim(-1)
	e := make([]float64, n*n)
	for i := range n {
		j := i
		if anti {
			j = n - 1 - i
		}
		e[i*n+j] = c
	}
	return ops.Cast(tensor.FromSliceOn(like.Device(), e, n, n), like.DType())
}

// conv2DOpts turns a step's attributes into Conv2DOpts.
func conv2DOpts(a Attrs) ops.Conv2DOpts {
	o := ops.Conv2DOpts{Strides: [2]int{a.Strides[0], a.Strides[1]}, Dilations: [2]int{a.Dilations[0], a.Dilations[1]}, Explicit: a.Explicit}
	o.Padding = map[string]ops.PaddingMode{"valid": ops.Valid, "same": ops.Same, "explicit": ops.Explicit}[a.Padding]
	if a.Format == "NCHW" {
		o.Format = ops.NCHW
	}
	return o
}

func poolOpts(a Attrs) ops.PoolOpts {
	c := conv2DOpts(Attrs{Strides: a.Strides, Dilations: []int{1, 1}, Explicit: a.Explicit, Padding: a.Padding, Format: a.Format})
	return ops.PoolOpts{Size: [2]int{a.Size[0], a.Size[1]}, Strides: c.Strides, Padding: c.Padding, Explicit: c.Explicit, Format: c.Format}
}

// labelMask is the step's mask (its 0/1 Labels in shape IShape) as a
// Bool tensor on like's device.
func labelMask(like T, a Attrs) T {
	keep := make([]bool, len(a.Labels))
	for i, l := range a.Labels {
		keep[i] = l == 1
	}
	if len(a.IShape) == 0 {
		return near(like, tensor.Scalar(keep[0]))
	}
	return near(like, tensor.FromSlice(keep, a.IShape...))
}

// near returns x on like's device (x itself where it is there already):
// a program's constants go where its inputs are.
func near(like, x T) T {
	if x.Device() == like.Device() {
		return x
	}
	y, err := x.To(like.Device())
	if err != nil {
		panic(err)
	}
	return y
}

// like returns the float64 constant x as a value of v's dtype on v's
// device (a float32 run's weights).
func like(v, x T) T {
	if v.DType() != x.DType() {
		x = ops.Cast(x, v.DType())
	}
	return near(v, x)
}

// int64s returns v as an Int64 tensor of shape (a vector when shape is
// nil, a scalar when it is empty and v has one element) on like's device.
func int64s(like T, v []int, shape []int) T {
	return near(like, hostInt64s(v, shape))
}

func hostInt64s(v []int, shape []int) T {
	d := make([]int64, len(v))
	for i, x := range v {
		d[i] = int64(x)
	}
	if shape == nil {
		shape = []int{len(v)}
	}
	if len(shape) == 0 {
		return tensor.Scalar(d[0])
	}
	return tensor.FromSlice(d, shape...)
}

// apply runs one step eagerly.
// statistics are the reductions of a "reduce" step that are functions
// of their own (ops.LogSumExp, ops.Var, ops.Std), not kinds of ops.Reduce.
var statistics = map[string]func(*tensor.Tensor, ...int) *tensor.Tensor{
	"logsumexp": ops.LogSumExp, "var": ops.Var, "std": ops.Std,
	"norm_2": normOf(2), "norm_1": normOf(1), "norm_3": normOf(3), "norm_inf": normOf(math.Inf(1)),
}

// normOf is ops.Norm of order ord.
func normOf(ord float64) func(*tensor.Tensor, ...int) *tensor.Tensor {
	return func(x *tensor.Tensor, dims ...int) *tensor.Tensor { return ops.Norm(x, ord, dims...) }
}

func apply(op string, x []T, a Attrs) T {
	if f, ok := unary[op]; ok {
		return f(x[0])
	}
	if f, ok := binaryOps[op]; ok {
		return f(x[0], x[1])
	}
	switch op {
	case "extract_patches", "select_and_scatter", "reduce_window", "conv":
		return applyXLAWindow(op, x, a)
	case "leaky_relu":
		return ops.LeakyRelu(x[0], a.Alpha)
	case "celu":
		return ops.Celu(x[0], a.Alpha)
	case "reduce":
		if f, ok := statistics[a.Kind]; ok {
			if a.Keep {
				return ops.KeepDims(f, x[0], a.Dims...)
			}
			return f(x[0], a.Dims...)
		}
		kind := map[string]ops.ReduceKind{"sum": ops.ReduceSum, "mean": ops.ReduceMean, "max": ops.ReduceMax, "min": ops.ReduceMin, "prod": ops.ReduceProd}[a.Kind]
		return ops.Reduce(x[0], ops.Reduction{Kind: kind, Dims: a.Dims, KeepDims: a.Keep})
	case "reshape":
		return ops.Reshape(x[0], a.Shape...)
	case "transpose":
		return ops.Transpose(x[0], a.Perm...)
	case "slice":
		return ops.Slice(x[0], a.Start, a.Limit, a.Strides)
	case "pad":
		cfg := make([]ops.PadDim, len(a.Cfg))
		for i, c := range a.Cfg {
			cfg[i] = ops.PadDim{Low: c[0], High: c[1], Interior: c[2]}
		}
		return ops.Pad(x[0], x[1], cfg...)
	case "concat":
		return ops.Concatenate(a.Axis, x...)
	case "stack":
		return ops.Stack(a.Axis, x...)
	case "broadcast_to":
		return ops.BroadcastTo(x[0], a.Shape...)
	case "tile":
		return ops.Tile(x[0], a.Reps...)
	case "rev":
		return ops.Rev(x[0], a.Dims...)
	case "cumsum":
		return ops.Cumsum(x[0], a.Axis, a.Exclusive, a.Reverse)
	case "roll":
		return ops.Roll(x[0], a.K, a.Axis)
	case "lstm_cell": // K picks the output: h' or the new cell
		h, next := ops.LSTMCell(x[0], x[1], x[2])
		return []T{h, next}[a.K]
	case "gru_cell":
		return ops.GRUCell(x[0], x[1], x[2])
	case "gru_seq": // K picks the output: the steps' or h's
		ys, h := ops.GRUSequence(x[0], x[1], x[2], x[3])
		return []T{ys, h}[a.K]
	case "lstm_seq": // K picks the output: the steps', h's or the cell's
		ys, h, c := ops.LSTMSequence(x[0], x[1], x[2], x[3])
		return []T{ys, h, c}[a.K]
	case "cholesky_spd": // of x·xᵀ + n·I
		n := x[0].Dim(-1)
		return ops.Cholesky(ops.Add(ops.MatMulT(x[0], x[0], false, true), scaledEye(x[0], float64(n))))
	case "trisolve": // a + 3·I: its diagonal kept from 0
		opts := ops.TriangularSolveOpts{Upper: a.Upper, Transpose: a.TA, UnitDiagonal: a.Unit}
		return ops.TriangularSolve(ops.Add(x[0], scaledEye(x[0], 3)), x[1], opts)
	case "eigvalsh_sym", "eigh_sigmoid_sym":
		vals, vecs := ops.Eigh(ops.Add(x[0], ops.Transpose(x[0], lastTwo(x[0].Rank())...)))
		if op == "eigvalsh_sym" {
			return vals
		}
		return ops.MatMulT(ops.Mul(vecs, ops.ExpandDims(ops.Sigmoid(vals), -2)), vecs, false, true)
	case "qr": // K picks q or r
		q, r := ops.QR(x[0])
		return []T{q, r}[a.K]
	case "svd": // K picks s, or u·diag(σ(s))·vt (the vectors' signs cancel)
		u, s, vt := ops.SVD(x[0])
		if a.K == 0 {
			return s
		}
		return ops.MatMul(ops.Mul(u, ops.ExpandDims(ops.Sigmoid(s), -2)), vt)
	case "pinv":
		return ops.Pinv(x[0])
	case "matrix_norm":
		return ops.MatrixNorm(x[0], a.Kind)
	case "lstsq":
		return ops.Lstsq(x[0], x[1])
	case "trace":
		return ops.Trace(x[0])
	case "matrix_exp":
		return ops.MatrixExp(x[0])
	case "diagonal":
		return ops.Diagonal(x[0])
	case "det_shifted":
		return ops.Det(ops.Add(x[0], scaledEye(x[0], 3)))
	case "logabsdet_shifted":
		_, l := ops.Slogdet(ops.Add(x[0], scaledEye(x[0], 3)))
		return l
	case "inverse_shifted":
		return ops.Inverse(ops.Add(x[0], scaledEye(x[0], 3)))
	case "solve_shifted":
		return ops.Solve(ops.Add(x[0], scaledEye(x[0], 3)), x[1])
	case "lu_anti", "lu_solve_anti", "lu_unpack_anti": // rows exchanged: 3·J dominates
		lu, _, perm := ops.LU(ops.Add(x[0], scaledDiagonal(x[0], 3, true)))
		switch op {
		case "lu_solve_anti":
			return ops.LUSolve(lu, perm, x[1], ops.LUSolveOpts{Transpose: a.TA})
		case "lu_unpack_anti":
			p, l, u := ops.LUUnpack(lu, perm)
			return ops.Add(ops.Add(p, l), u)
		}
		return lu
	case "tril":
		return ops.Tril(x[0], a.Axis)
	case "triu":
		return ops.Triu(x[0], a.Axis)
	case "cumprod":
		return ops.Cumprod(x[0], a.Axis, a.Exclusive, a.Reverse)
	case "matmul":
		if !a.TA && !a.TB {
			return ops.MatMul(x[0], x[1]) // vectors too
		}
		return ops.MatMulT(x[0], x[1], a.TA, a.TB)
	case "softmax":
		return ops.Softmax(x[0], a.Axis)
	case "log_softmax":
		return ops.LogSoftmax(x[0], a.Axis)
	case "xent":
		return ops.SoftmaxCrossEntropy(x[0], x[1])
	case "sparse_xent":
		return ops.SparseSoftmaxCrossEntropy(x[0], int64s(x[0], a.Labels, nil))
	case "l2_normalize":
		return ops.L2Normalize(x[0], a.Axis, a.Eps)
	case "layer_norm":
		if a.Kind == "rms" {
			return ops.RMSNorm(x[0], x[1], a.Eps)
		}
		var beta T
		if len(x) == 3 {
			beta = x[2]
		}
		return ops.LayerNorm(x[0], x[1], beta, a.Eps)
	case "batch_norm":
		var beta T
		if len(x) == 3 {
			beta = x[2]
		}
		y, _, _ := ops.BatchNorm(x[0], x[1], beta, a.Axis, a.Eps)
		return y
	case "attention":
		var mask T
		if a.Labels != nil {
			keep := make([]bool, len(a.Labels))
			for i, l := range a.Labels {
				keep[i] = l == 1
			}
			tk := x[1].Dim(-2)
			mask = near(x[0], tensor.FromSlice(keep, len(keep)/tk, tk)) // [Tq, Tk], or [1, Tk] broadcast
		}
		return ops.Attention(x[0], x[1], x[2], mask, a.Relu, 0)
	case "conv2d":
		return ops.Conv2D(x[0], x[1], conv2DOpts(a))
	case "depthwise_conv2d":
		return ops.DepthwiseConv2D(x[0], x[1], conv2DOpts(a))
	case "fused_conv2d":
		act := ops.NoActivation
		if a.Relu {
			act = ops.ReluActivation
		}
		return ops.FusedConv2D(x[0], x[1], x[2], conv2DOpts(a), act)
	case "max_pool2d":
		return ops.MaxPool2D(x[0], poolOpts(a))
	case "max_unpool2d":
		y, taps := ops.MaxPool2DWithArgmax(x[0], poolOpts(a))
		return ops.MaxUnpool2D(y, taps, x[0].Shape(), poolOpts(a))
	case "avg_pool2d":
		return ops.AvgPool2D(x[0], poolOpts(a))
	case "scatter_add":
		return ops.ScatterAdd(x[0], int64s(x[0], a.Indices, a.IShape), x[1], a.Axis)
	case "masked_fill":
		return ops.MaskedFill(x[0], labelMask(x[0], a), x[1])
	case "masked_select":
		return ops.MaskedSelect(x[0], labelMask(x[0], a))
	case "masked_scatter":
		return ops.MaskedScatter(x[0], labelMask(x[0], a), x[1])
	case "where":
		return ops.Where(labelMask(x[0], a), x[0], x[1])
	case "fused_matmul":
		act := ops.NoActivation
		if a.Relu {
			act = ops.ReluActivation
		}
		return ops.FusedMatMul(x[0], x[1], x[2], act)
	case "bias_add":
		format := ops.NHWC
		if a.Format == "NCHW" {
			format = ops.NCHW
		}
		return ops.BiasAdd(x[0], x[1], format)
	case "sum_of_squares":
		return ops.SumOfSquares(x...)
	case "scale_each":
		return ops.ScaleEach(x[0], x[1:]...)[a.K]
	case "split":
		return ops.Split(x[0], a.Axis, a.Sizes)[a.K]
	case "take_along_axis":
		return ops.TakeAlongAxis(x[0], int64s(x[0], a.Indices, a.IShape), a.Axis)
	case "gather":
		return ops.Gather(x[0], int64s(x[0], a.Indices, a.IShape), a.Axis)
	case "sort":
		return ops.Sort(x[0], a.Axis, a.Descending)
	case "topk":
		v, _ := ops.TopK(x[0], a.K)
		return v
	case "select":
		return ops.Where(ops.Gt(x[0], x[1]), x[2], x[3])
	case "clip":
		return ops.Clip(x[0], x[1], x[2])
	case "einsum":
		return ops.Einsum(a.Spec, x...)
	case "dot_general":
		return ops.DotGeneral(x[0], x[1], ops.DotDims{LhsBatch: a.LhsBatch, RhsBatch: a.RhsBatch, LhsContract: a.LhsContract, RhsContract: a.RhsContract})
	case "dynamic_slice":
		return ops.DynamicSlice(x[0], int64s(x[0], a.Starts, nil), a.Sizes...)
	case "dynamic_update_slice":
		return ops.DynamicUpdateSlice(x[0], x[1], int64s(x[0], a.Starts, nil))
	case "expand_dims":
		return ops.ExpandDims(x[0], a.Axis)
	case "squeeze":
		return ops.Squeeze(x[0], a.Axes...)
	}
	panic("difftest: unknown op " + op)
}
