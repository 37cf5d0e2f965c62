package eager

import (
	"fmt"
	"sync"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernel computes an op's outputs, which dispatch has allocated on the
// inputs' device with the shapes and dtypes the op's Infer returned. A
// kernel must not panic on data values (NaN, Inf, division by zero).
type Kernel func(c *Call, outs []*tensor.Tensor)

// GradFunc returns, for each input of the call, the gradient of the
// differentiated target with respect to that input, given the gradients
// with respect to the outputs. It returns nil for inputs that get no
// gradient (integer inputs, inputs g.Needs marks false). The returned
// gradient may have the shape of the broadcast result rather than of the
// input: the tape sums it back down. Rules are written with ops, so they are
// recorded and differentiable themselves.
type GradFunc func(g *Grad) []*tensor.Tensor

// Grad is what a gradient rule sees.
type Grad struct {
	*Call
	Outputs  []*tensor.Tensor // the op's outputs
	OutGrads []*tensor.Tensor // one per output, never nil
	Needs    []bool           // one per input: whether its gradient is wanted
}

// Out is the dtype and shape of one output, as Infer returns it.
type Out struct {
	DType tensor.DType
	Shape tensor.Shape
}

// Op is the one declaration of an operation: its name, how it checks its
// inputs and attributes and infers its outputs, how it differentiates, and
// its kernels per device kind and dtype. Declarations live in package ops.
type Op struct {
	Name string
	// Inputs is the number of inputs; -1 means one or more (variadic).
	Inputs int
	// DTypes lists the dtypes input KeyInput may have (nil means any).
	DTypes []tensor.DType
	// KeyInput picks the input whose dtype selects the kernel (default 0).
	KeyInput int
	// SameDTypes requires every input from SameFrom on to share one dtype.
	SameDTypes bool
	SameFrom   int
	// AnyLayout says the kernel reads inputs in any layout; otherwise
	// dispatch makes them row-major first.
	AnyLayout bool
	// Infer validates attributes and input shapes and returns the outputs'
	// dtypes and shapes. It reports bad input with c.Fail; it runs before
	// any kernel, so a failed op changes nothing.
	Infer func(c *Call) []Out
	// View, when set, returns outputs that share the inputs' buffers instead
	// of running a kernel (reshape, transpose as a layout change). Dispatch
	// uses the kernel instead when an input is a variable, whose buffer may
	// change in place later.
	View func(c *Call, specs []Out) []*tensor.Tensor
	// Grad is the gradient rule; nil requires NonDifferentiable.
	Grad GradFunc
	// NonDifferentiable declares that the op has no gradient (comparisons,
	// integer ops, StopGradient). A registry test fails ops with neither.
	NonDifferentiable bool
	// GradReads says which of the op's values Grad reads beyond their
	// dtypes and shapes. The zero value, ReadsAll, is always safe; a tape
	// may drop the values a rule declares it does not read (package tape
	// does for the intermediates of stored loop iterations).
	GradReads GradReads
	// F32, when set, exposes a float32 elementwise op's CPU loops, so that
	// a graph optimiser can run a chain of such ops as one pass over blocks
	// of the output instead of one kernel call (and one buffer) per op.
	F32 *ElementwiseF32

	kernels [2][tensor.NumDTypes]Kernel
}

// GradReads is what an op's gradient rule reads of its inputs' and
// outputs' values (their dtypes and shapes are always there).
type GradReads uint8

// The GradReads declarations.
const (
	ReadsAll     GradReads = iota // inputs and outputs
	ReadsInputs                   // inputs only
	ReadsOutputs                  // outputs only
	ReadsNothing                  // shapes and dtypes only
)

// ElementwiseF32 is the float32 loops of an elementwise op: Unary for a
// one-input op; VV, VS and SV for a two-input op whose operands are both
// full, or one is a single value (broadcast). Each writes len(o) elements
// and allows o to alias an input.
type ElementwiseF32 struct {
	Unary func(o, x []float32)
	VV    func(o, a, b []float32)
	VS    func(o, a []float32, b float32)
	SV    func(o []float32, a float32, b []float32)
}

var registry struct {
	sync.RWMutex
	ops []*Op
}

// Register adds op to the registry and returns it; ops call it in their
// package-level declarations.
func Register(op *Op) *Op {
	registry.Lock()
	defer registry.Unlock()
	registry.ops = append(registry.ops, op)
	return op
}

// Ops returns every registered op, in registration order.
func Ops() []*Op {
	registry.RLock()
	defer registry.RUnlock()
	return append([]*Op(nil), registry.ops...)
}

// SetKernel registers the kernel for (device kind, key dtype).
func (op *Op) SetKernel(kind device.Kind, dt tensor.DType, k Kernel) {
	op.kernels[kind][dt] = k
}

// Kernel returns the kernel for (device kind, key dtype), or nil.
func (op *Op) Kernel(kind device.Kind, dt tensor.DType) Kernel {
	if int(kind) >= len(op.kernels) || int(dt) >= tensor.NumDTypes {
		return nil
	}
	return op.kernels[kind][dt]
}

// Call is one invocation of an op: the inputs and the typed attributes.
type Call struct {
	Op     *Op
	Inputs []*tensor.Tensor
	Attrs  any
	Device device.Device
	orig   []*tensor.Tensor // the caller's inputs while Inputs holds row-major copies
	outBuf [1]Out
	inBuf  [3]*tensor.Tensor
	outT   [1]*tensor.Tensor
	kept   bool // an observer retained the call; it must not be reused
}

// Out1 returns a single-output result without allocating, for Infer.
func (c *Call) Out1(dt tensor.DType, shape tensor.Shape) []Out {
	c.outBuf[0] = Out{dt, shape}
	return c.outBuf[:]
}

// Fail panics with a *tensor.Error that names the op, its attributes, its
// inputs and the caller. kind is one of tensor's sentinels.
func (c *Call) Fail(kind error, format string, args ...any) {
	panic(failure(c, kind, format, args...))
}

// failure is the *tensor.Error that Fail panics with.
func failure(c *Call, kind error, format string, args ...any) *tensor.Error {
	in := make([]string, len(c.Inputs))
	for i, t := range c.Inputs {
		in[i] = tensor.Describe(t)
	}
	return &tensor.Error{Pkg: "ops", Op: c.Op.Name, Kind: kind, Detail: fmt.Sprintf(format, args...),
		Inputs: in, Attrs: attrString(c.Attrs), Caller: tensor.Caller()}
}

func attrString(a any) string {
	if a == nil {
		return ""
	}
	if s, ok := a.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%+v", a)
}

// AttrString formats attributes as errors show them.
func AttrString(a any) string { return attrString(a) }
