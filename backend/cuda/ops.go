package cuda

import (
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	_ "github.com/eagerflow/eagerflow/backend/move" // the layout ops' portable kernels
	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// The GPU kernels of the ops, registered for device.GPU: each computes its
// launch's arguments and queues the kernel on the device's stream.

// binaryOps and unaryOps name the elementwise kernels of each op (the
// kernels' op names).
var (
	binaryOps = map[string]string{"Add": "add", "Sub": "sub", "Mul": "mul", "Div": "div", "Rem": "rem",
		"Max": "max", "Min": "min", "Pow": "pow", "ReluGrad": "relugrad",
		"TanhGrad": "tanhgrad", "SigmoidGrad": "sigmoidgrad", "GeluTanhGrad": "gelutanhgrad",
		"GeluGrad": "gelugrad", "Atan2": "atan2", "Hypot": "hypot", "LogAddExp": "logaddexp", "Zeta": "zeta", "Polygamma": "polygamma", "Igamma": "igamma", "Igammac": "igammac",
		"Prelu": "prelu", "PreluSlope": "preluslope", "Relu6Grad": "relu6grad", "HardSigmoidGrad": "hardsigmoidgrad",
		"HardSwishGrad": "hardswishgrad", "EluGrad": "elugrad", "SeluGrad": "selugrad", "SiluGrad": "silugrad", "MishGrad": "mishgrad",
		"ErfcGrad": "erfcgrad", "ErfcxGrad": "erfcxgrad", "NdtrGrad": "ndtrgrad", "LogNdtrGrad": "logndtrgrad", "NdtriGrad": "ndtrigrad"}
	unaryOps = map[string]string{"Neg": "neg", "Abs": "abs", "Sign": "sign", "Square": "square", "Relu": "relu",
		"Sqrt": "sqrt", "Rsqrt": "rsqrt", "Ceil": "ceil", "Floor": "floor", "Round": "round", "IsFinite": "isfinite",
		"LogicalNot": "not", "Exp": "exp", "Log": "log", "Expm1": "expm1", "Log1p": "log1p", "Tanh": "tanh",
		"Sigmoid": "sigmoid", "Softplus": "softplus", "Erf": "erf", "Gelu": "gelu", "GeluTanh": "gelutanh", "Sin": "sin", "Cos": "cos",
		"Tan": "tan", "Asin": "asin", "Acos": "acos", "Atan": "atan", "Sinh": "sinh", "Cosh": "cosh", "Asinh": "asinh",
		"Acosh": "acosh", "Atanh": "atanh", "Log2": "log2", "Log10": "log10", "Exp2": "exp2",
		"Relu6": "relu6", "HardSigmoid": "hardsigmoid", "HardSwish": "hardswish", "Softsign": "softsign", "Elu": "elu",
		"Selu": "selu", "Silu": "silu", "Mish": "mish", "Erfinv": "erfinv", "Lgamma": "lgamma", "Digamma": "digamma",
		"Erfc": "erfc", "Erfcx": "erfcx", "Ndtr": "ndtr", "LogNdtr": "logndtr", "Ndtri": "ndtri",
		"BesselI0": "besseli0", "BesselI0e": "besseli0e", "BesselI1": "besseli1", "BesselI1e": "besseli1e"}
)

func init() {
	// The half types' elementwise kernels compute in float32 (kernels'
	// compute dtype), as the float32 ones' ops list them.
	for op, k := range binaryOps {
		for _, d := range slices.Concat(kernels.Numeric, kernels.Halves) {
			if contains(kernels.BinaryOps(d.Compute()), k) {
				eager.RegisterKernel(op, device.GPU, tensorType(d), binary("binary", k, d))
			}
		}
	}
	for op, k := range map[string]string{"Eq": "eq", "Ne": "ne", "Lt": "lt", "Le": "le", "Gt": "gt", "Ge": "ge"} {
		for _, d := range slices.Concat(kernels.All, kernels.Halves) {
			if contains(kernels.Compares(d.Compute()), k) {
				eager.RegisterKernel(op, device.GPU, tensorType(d), binary("compare", k, d))
			}
		}
	}
	eager.RegisterKernel("LogicalAnd", device.GPU, tensor.Bool, binary("compare", "and", kernels.Bool))
	eager.RegisterKernel("LogicalOr", device.GPU, tensor.Bool, binary("compare", "or", kernels.Bool))
	for _, d := range slices.Concat(kernels.All, kernels.Halves) {
		eager.RegisterKernel("Select", device.GPU, tensorType(d), selectKernel(d))
	}
	for _, d := range slices.Concat(kernels.All, kernels.Halves, kernels.Floats8) {
		eager.RegisterKernel("Cast", device.GPU, tensorType(d), cast(d))
	}
	for op, k := range unaryOps {
		for _, d := range slices.Concat(kernels.All, kernels.Halves) {
			if contains(kernels.UnaryOps(d.Compute()), k) {
				eager.RegisterKernel(op, device.GPU, tensorType(d), unary(k, d))
			}
		}
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// The kernel dtypes and the tensor dtypes, in the same order.
var (
	kernelDTypes = []kernels.DType{kernels.F32, kernels.F64, kernels.S32, kernels.S64, kernels.U8, kernels.Bool,
		kernels.BF16, kernels.F16, kernels.F8E4M3, kernels.F8E5M2}
	tensorDTypes = []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Bool,
		tensor.BFloat16, tensor.Float16, tensor.Float8E4M3, tensor.Float8E5M2}
)

// tensorType is the tensor dtype of a kernel dtype.
func tensorType(d kernels.DType) tensor.DType { return tensorDTypes[slices.Index(kernelDTypes, d)] }

// kernelType is the kernel dtype of a tensor dtype.
func kernelType(dt tensor.DType) kernels.DType { return kernelDTypes[slices.Index(tensorDTypes, dt)] }

// registerMoves registers k as the GPU kernel of op for every dtype: a
// kernel that moves elements as bits, whatever they hold.
func registerMoves(op string, k eager.Kernel) {
	for _, d := range slices.Concat(kernels.All, kernels.Halves, kernels.Floats8) {
		eager.RegisterKernel(op, device.GPU, tensorType(d), k)
	}
}

// flag is a kernel's boolean argument: 1 or 0.
func flag(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// gpu is the call's device.
func gpu(c *eager.Call) *Device { return c.Device.(*Device) }

// ptr is the device address of t's buffer.
func ptr(t *tensor.Tensor) cu.Ptr { return t.Buffer().(*buffer).ptr }

// check fails the call with the device's error.
func check(c *eager.Call, err error) {
	if err != nil {
		c.Fail(tensor.ErrDeviceFailed, "%s: %v", c.Device.Name(), err)
	}
}

// strides are in's element strides when broadcast to out (0 along the
// dimensions it broadcasts; shapes aligned at the end, row-major).
func strides(out, in tensor.Shape) []int {
	st := make([]int, len(out))
	rs := tensor.Strides(in, nil)
	off := len(out) - len(in)
	for d := off; d < len(out); d++ {
		if in[d-off] != 1 {
			st[d] = rs[d-off]
		}
	}
	return st
}

// geometry is the kernel geometry of out's shape with each input's
// broadcast strides, or fails the call beyond the kernels' rank.
func geometry(c *eager.Call, out tensor.Shape, ins ...*tensor.Tensor) []byte {
	if len(out) > kernels.MaxRank {
		c.Fail(tensor.ErrRank, "the GPU kernels take at most %d dimensions, the output has %d", kernels.MaxRank, len(out))
	}
	var st [][]int
	for _, x := range ins {
		st = append(st, strides(out, x.Shape()))
	}
	return kernels.Geometry(out, st, nil)
}

// full reports whether every input has out's shape.
func full(out tensor.Shape, ins ...*tensor.Tensor) bool {
	for _, x := range ins {
		if !x.Shape().Equal(out) {
			return false
		}
	}
	return true
}

// single reports whether one of a and b is a single value and the other
// of out's shape, and the single-value kernels' variant for it (vs: b
// single; sv: a).
func single(out tensor.Shape, a, b *tensor.Tensor) (string, bool) {
	switch {
	case b.NumElements() == 1 && a.Shape().Equal(out) && out.NumElements() > 1:
		return "vs", true
	case a.NumElements() == 1 && b.Shape().Equal(out) && out.NumElements() > 1:
		return "sv", true
	}
	return "", false
}

// binary is the kernel of an elementwise op of two inputs.
func binary(family, op string, d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		binaryInto(c, family, op, d, c.Inputs[0], c.Inputs[1], outs[0])
	}
}

// binaryInto launches the elementwise kernel op of family on a and b
// (broadcast to out's shape) into out.
func binaryInto(c *eager.Call, family, op string, d kernels.DType, a, b, out *tensor.Tensor) {
	n := out.NumElements()
	if n == 0 {
		return
	}
	args := newArgs().Ptr(ptr(out)).Ptr(ptr(a)).Ptr(ptr(b)).U64(uint64(n))
	if v, ok := single(out.Shape(), a, b); ok && family == "binary" && slices.Contains(kernels.SingleTypes, d) && slices.Contains(kernels.SingleOps, op) {
		check(c, gpu(c).launchVector("single", kname(op, string(d), v), n, kernels.Lanes(d), args))
		return
	}
	if full(out.Shape(), a, b) && (family == "binary" || family == "compare") {
		check(c, gpu(c).launchVector(family, kname(op, string(d), "vv"), n, kernels.Lanes(d), args))
		return
	}
	name := kname(op, string(d), "vv")
	if !full(out.Shape(), a, b) {
		args.Bytes(geometry(c, out.Shape(), a, b), 8)
		name = kname(op, string(d), "bc")
	}
	check(c, gpu(c).launch(family, name, n, args))
}

func selectKernel(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		p, a, b, out := c.Inputs[0], c.Inputs[1], c.Inputs[2], outs[0]
		n := out.NumElements()
		if n == 0 {
			return
		}
		args := newArgs().Ptr(ptr(out)).Ptr(ptr(p)).Ptr(ptr(a)).Ptr(ptr(b)).U64(uint64(n))
		if full(out.Shape(), p, a, b) {
			check(c, gpu(c).launchVector("compare", kname("select", string(d), "vv"), n, kernels.Lanes(d), args))
			return
		}
		args.Bytes(geometry(c, out.Shape(), p, a, b), 8)
		check(c, gpu(c).launch("compare", kname("select", string(d), "bc"), n, args))
	}
}

func unary(op string, d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		x, out := c.Inputs[0], outs[0]
		n := out.NumElements()
		if n == 0 {
			return
		}
		check(c, gpu(c).launchVector("unary", kname(op, string(d), ""), n, kernels.Lanes(d), newArgs().Ptr(ptr(out)).Ptr(ptr(x)).U64(uint64(n))))
	}
}

func cast(from kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		x, out := c.Inputs[0], outs[0]
		n := out.NumElements()
		if n == 0 {
			return
		}
		if kernelType(c.Attrs.(opattr.CastAttrs).To) == from {
			check(c, gpu(c).Copy(out.Buffer(), 0, []int{1}, x.Buffer(), 0, []int{1}, []int{n}, from.Size()))
			return
		}
		check(c, gpu(c).castInto(out, x))
	}
}

// kname is kernels.Name of the non-empty parts of a, b, c.
func kname(a, b, c string) string {
	if c == "" {
		return kernels.Name(a, b)
	}
	return kernels.Name(a, b, c)
}
