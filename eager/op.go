package eager

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/callsite"
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
	// Filled, where set, marks the OutGrads that are zeros the tape
	// stood in for outputs no gradient reached (Solve's factors, a
	// norm's statistics): a rule may leave out their terms. Nil where
	// every output's gradient came from its users.
	Filled []bool
}

// Reached reports whether output i's gradient came from its users (not
// a stand-in of zeros: Filled).
func (g *Grad) Reached(i int) bool { return g.Filled == nil || !g.Filled[i] }

// Out is the dtype and shape of one output, as Infer returns it.
type Out struct {
	DType tensor.DType
	Shape tensor.Shape
}

// Op is the one declaration of an operation: its name, how it checks its
// inputs and attributes and infers its outputs, and how it differentiates.
// It says nothing of devices: kernels are registered apart, per (op name,
// device kind, dtype), by the backend that implements them
// (RegisterKernel). Declarations live in package ops.
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
	// ViewOwns says View returns tensors with buffers of their own (a
	// copy to another device, a variable's cached Cast), never a
	// variable's: dispatch uses View for variables too. Such a View may
	// return nil to have the op's kernel run as without one.
	ViewOwns bool
	// Forwards says the op's single output is its single input unchanged
	// (Identity, StopGradient): a graph executor that no tape observes
	// hands the input on instead of dispatching the op.
	Forwards bool
	// Ordered says the op communicates with other processes (a
	// collective, a send or receive): every process must run its calls in
	// the same order, as the program makes them. A trace records it whenever an input is the
	// trace's, constant or not, and keeps it though nothing reads it; graph
	// passes never merge it with another; graphs run it alone (not beside
	// other ops), in an order that depends only on the graph and the
	// branches and trip counts of the run.
	Ordered bool
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
	// GradIgnores lists the inputs whose values Grad does not read where
	// GradReads says it reads inputs (an index op's operand, of which
	// Gather's rule reads only the shape and dtype; Select's branches). A
	// tape neither keeps their values for the rule nor refuses a variable
	// among them that was assigned after the op ran.
	GradIgnores []int
	// NoGrad lists the float inputs that never get a gradient: an order
	// or exponent the op is not differentiated in (Polygamma's n, Zeta's
	// s, as TensorFlow's); the rule returns nil for them, and the
	// gradient checks leave them out.
	NoGrad []int

	kernels *kernelTable // shared with the backends' registrations by name
}

// GradReads is what an op's gradient rule reads of its inputs' and
// outputs' values (their dtypes and shapes are always there): ReadsAll
// (the zero value), ReadsInputs, ReadsOutputs or ReadsNothing.
type GradReads uint8

// The GradReads declarations.
const (
	ReadsAll     GradReads = iota // inputs and outputs
	ReadsInputs                   // inputs only
	ReadsOutputs                  // outputs only
	ReadsNothing                  // shapes and dtypes only
)

// GradReadsInput reports whether op's gradient rule reads input i's
// values (GradReads and GradIgnores).
func (op *Op) GradReadsInput(i int) bool {
	return (op.GradReads == ReadsAll || op.GradReads == ReadsInputs) && !slices.Contains(op.GradIgnores, i)
}

// ElementwiseF32 is the float32 loops of an elementwise op: Unary for a
// one-input op; VV, VS and SV for a two-input op whose operands are both
// full, or one is a single value (broadcast). Each writes len(o) elements
// and allows o to alias an input. The loops run over host memory: a
// backend registers them for a device kind whose buffers the host
// addresses (the CPU's), and a graph optimiser fuses chains of them for
// graphs on devices of that kind only.
type ElementwiseF32 struct {
	Unary func(o, x []float32)
	VV    func(o, a, b []float32)
	VS    func(o, a []float32, b float32)
	SV    func(o []float32, a float32, b []float32)
}

var registry struct {
	sync.RWMutex
	ops    []*Op
	byName map[string]*Op
	tables map[string]*kernelTable // by op name, made by whichever comes first
}

// Register adds op to the registry and returns it; ops call it in their
// package-level declarations. It panics if another op has the name.
func Register(op *Op) *Op {
	if op == nil {
		panic("eager: Register of a nil op")
	}
	registry.Lock()
	defer registry.Unlock()
	if registry.byName == nil {
		registry.byName = map[string]*Op{}
	}
	if _, dup := registry.byName[op.Name]; dup {
		panic("eager: two ops are named " + op.Name)
	}
	registry.byName[op.Name] = op
	registry.ops = append(registry.ops, op)
	op.kernels = tableLocked(op.Name)
	return op
}

// Ops returns every registered op, in registration order.
func Ops() []*Op {
	registry.RLock()
	defer registry.RUnlock()
	return append([]*Op(nil), registry.ops...)
}

// Lookup returns the op named name, or nil.
func Lookup(name string) *Op {
	registry.RLock()
	defer registry.RUnlock()
	return registry.byName[name]
}

// kernelTable is an op's kernels: by device kind, then by key dtype, and
// its elementwise float32 loops by device kind. Registrations replace the
// table whole, so that dispatch reads it without a lock.
type kernelTable struct {
	cur atomic.Pointer[kernelSet]
}

type kernelSet struct {
	byKind      [][tensor.NumDTypes]Kernel
	portable    [tensor.NumDTypes]Kernel
	elementwise []*ElementwiseF32
}

// tableLocked returns the kernel table of the op named name, made on first
// use. registry must be locked.
func tableLocked(name string) *kernelTable {
	if registry.tables == nil {
		registry.tables = map[string]*kernelTable{}
	}
	t := registry.tables[name]
	if t == nil {
		t = &kernelTable{}
		t.cur.Store(&kernelSet{})
		registry.tables[name] = t
	}
	return t
}

// updateKernels applies fn to a copy of the kernel set of the op named op
// and installs it.
func updateKernels(op string, fn func(s *kernelSet)) {
	registry.Lock()
	t := tableLocked(op)
	registry.Unlock()
	t.update(fn)
}

// update applies fn to a copy of t's set and installs it.
func (t *kernelTable) update(fn func(s *kernelSet)) {
	old := t.cur.Load()
	s := &kernelSet{byKind: slices.Clone(old.byKind), portable: old.portable, elementwise: slices.Clone(old.elementwise)}
	fn(s)
	t.cur.Store(s)
}

// grow gives s a slot for devices of kind.
func (s *kernelSet) grow(kind device.Kind) {
	for len(s.byKind) <= int(kind) {
		s.byKind = append(s.byKind, [tensor.NumDTypes]Kernel{})
	}
	for len(s.elementwise) <= int(kind) {
		s.elementwise = append(s.elementwise, nil)
	}
}

// RegisterKernel registers k as the kernel of the op named op for devices
// of kind and inputs whose key dtype is dt. Backends call it from their
// init functions; it may run before or after the op's declaration is
// registered. A second registration for the same triple replaces the first.
func RegisterKernel(op string, kind device.Kind, dt tensor.DType, k Kernel) {
	linkedKinds.Store(kind, true)
	updateKernels(op, func(s *kernelSet) { s.grow(kind); s.byKind[kind][dt] = k })
}

// RegisterPortable registers k as the kernel of the op named op for
// inputs of key dtype dt on every device: a kernel that moves data only
// through the device interface (Copy, Fill, the host copies), so any
// device runs it. A kernel registered for a kind takes precedence there.
func RegisterPortable(op string, dt tensor.DType, k Kernel) {
	updateKernels(op, func(s *kernelSet) { s.portable[dt] = k })
}

// RegisterElementwise registers the float32 loops of the elementwise op
// named op on devices of kind, so that a graph optimiser can run a chain
// of such ops as one pass over blocks of the output instead of one kernel
// call (and one buffer) per op.
func RegisterElementwise(op string, kind device.Kind, loops *ElementwiseF32) {
	updateKernels(op, func(s *kernelSet) { s.grow(kind); s.elementwise[kind] = loops })
}

// AttachKernel gives op, which must not be registered, a kernel of its
// own for (kind, dt): for ops made at run time that no backend knows (a
// graph optimiser's fused chains, which run their ops' own loops).
func (op *Op) AttachKernel(kind device.Kind, dt tensor.DType, k Kernel) {
	if Lookup(op.Name) == op {
		panic("eager: AttachKernel on the registered op " + op.Name + "; backends use RegisterKernel")
	}
	if op.kernels == nil {
		op.kernels = &kernelTable{}
		op.kernels.cur.Store(&kernelSet{})
	}
	op.kernels.update(func(s *kernelSet) { s.grow(kind); s.byKind[kind][dt] = k })
}

// Kernel returns the kernel for (device kind, key dtype), or nil.
func (op *Op) Kernel(kind device.Kind, dt tensor.DType) Kernel {
	if op.kernels == nil || int(dt) >= tensor.NumDTypes {
		return nil
	}
	s := op.kernels.cur.Load()
	if int(kind) < len(s.byKind) && s.byKind[kind][dt] != nil {
		return s.byKind[kind][dt]
	}
	return s.portable[dt]
}

// Elementwise returns the op's float32 loops on devices of kind, or nil.
func (op *Op) Elementwise(kind device.Kind) *ElementwiseF32 {
	if op.kernels == nil {
		return nil
	}
	s := op.kernels.cur.Load()
	if int(kind) >= len(s.elementwise) {
		return nil
	}
	return s.elementwise[kind]
}

// KernelKinds returns the device kinds with a kernel of op for key dtype
// dt, for errors that say where the op runs.
func (op *Op) KernelKinds(dt tensor.DType) []device.Kind {
	var out []device.Kind
	if op.kernels == nil {
		return nil
	}
	for k, byDT := range op.kernels.cur.Load().byKind {
		if int(dt) < len(byDT) && byDT[dt] != nil {
			out = append(out, device.Kind(k))
		}
	}
	return out
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
	placed bool // its inputs are where it runs: placement scopes do not apply (RunPlaced)
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
		Inputs: in, Attrs: attrString(c.Attrs), Caller: callsite.Caller()}
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

// SetKernel registers the kernel for (device kind, key dtype).
//
// Deprecated: use RegisterKernel(op.Name, kind, dt, k).
func (op *Op) SetKernel(kind device.Kind, dt tensor.DType, k Kernel) {
	RegisterKernel(op.Name, kind, dt, k)
}
