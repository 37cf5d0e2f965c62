// Package fusion runs a chain of float32 elementwise ops (each step
// taking the previous one's value) as one kernel with one output buffer:
// on devices whose backend registered host loops for every step
// (eager.RegisterElementwise: the CPU's) the kernel runs every step over
// one block of the output before moving to the next, so the intermediate
// values stay in the L1 cache, each step calling the op's own loop (the
// result is bitwise the ops' one by one); on other devices the kind's
// eager.Fuser compiles the chain (the GPU's: generated PTX, each step the
// code of the op's own kernel).
//
// control/graph fuses a traced graph's chains with it, and package ops
// the elementwise chains of its gradient rules.
package fusion

import (
	"slices"
	"strings"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/hostmem"
	"github.com/eagerflow/eagerflow/tensor"
)

// Operand is where one operand of a step comes from: the chain (the
// previous step's value), or an input of the chain, full (the output's
// shape) or a single value broadcast to it.
type Operand = eager.FuseOperand

// Step is one op of a chain: the op, its attributes (those it runs with
// when the chain is replayed op by op) and its operands, one or two.
type Step struct {
	Op    *eager.Op
	Attrs any
	Args  []Operand
}

// Chain is a compiled chain. Op is a synthesised op (not registered, so
// no backend knows it) whose kernel for the device kind the chain was
// compiled for runs every step; it takes the chain's inputs, full ones of
// one shape (the output's) and single values, float32 all, and is not
// differentiable: where a tape or a tracer observes, Replay runs the
// steps' own ops instead.
type Chain struct {
	Op    *eager.Op
	Steps []Step
	loops []*eager.ElementwiseF32 // each step's; nil where a Fuser compiled it
}

// StepFusible reports whether op, with that many inputs (one or two), can
// be a step of a chain on devices of kind: it has host loops for the
// kind, or the kind's Fuser takes it.
func StepFusible(op *eager.Op, inputs int, kind device.Kind) bool {
	if loops := op.Elementwise(kind); loops != nil {
		return (inputs == 1 && loops.Unary != nil) || (inputs == 2 && loops.VV != nil)
	}
	f := eager.FuserFor(kind)
	return f != nil && (inputs == 1 || inputs == 2) && f.CanFuse(op.Name, inputs)
}

// Compile returns the chain of steps for devices of kind, its op taking
// inputs tensors, or nil where it cannot be compiled (a step without host
// loops or a Fuser that takes it; a Fuser's error).
func Compile(kind device.Kind, steps []Step, inputs int) *Chain {
	c := &Chain{Steps: steps}
	names := make([]string, len(steps))
	onHost := true
	for i, st := range steps {
		if !StepFusible(st.Op, len(st.Args), kind) {
			return nil
		}
		names[i] = st.Op.Name
		loops := st.Op.Elementwise(kind)
		c.loops = append(c.loops, loops)
		onHost = onHost && loops != nil
	}
	c.Op = &eager.Op{Name: "Fused(" + strings.Join(names, ",") + ")", Inputs: inputs,
		DTypes: []tensor.DType{tensor.Float32}, Infer: c.infer, NonDifferentiable: true}
	kernel := eager.Kernel(c.hostKernel)
	if !onHost {
		fuser := eager.FuserFor(kind)
		if fuser == nil {
			return nil
		}
		fs := make([]eager.FuseStep, len(steps))
		for i, st := range steps {
			fs[i] = eager.FuseStep{Op: st.Op.Name, Args: st.Args}
		}
		var err error
		if kernel, err = fuser.Fuse(fs); err != nil {
			return nil
		}
		c.loops = nil
	}
	c.Op.AttachKernel(kind, tensor.Float32, kernel)
	return c
}

// Replay runs the steps' own ops on the chain's inputs, one by one (so
// that a tape or a tracer sees them), and returns the last one's outputs.
func (c *Chain) Replay(args []*tensor.Tensor) []*tensor.Tensor {
	var last []*tensor.Tensor
	for _, st := range c.Steps {
		ins := make([]*tensor.Tensor, len(st.Args))
		for j, o := range st.Args {
			if o.Chain {
				ins[j] = last[0]
			} else {
				ins[j] = args[o.Input]
			}
		}
		last = eager.RunPlaced(st.Op, st.Attrs, ins...)
	}
	return last
}

// SameOperands reports whether the chains x and y read their inputs alike
// at every step (each input full, or a single value); nil chains are
// alike.
func SameOperands(x, y *Chain) bool {
	if x == nil || y == nil {
		return x == y
	}
	return slices.EqualFunc(x.Steps, y.Steps, func(p, q Step) bool { return slices.Equal(p.Args, q.Args) })
}

// infer gives the chain's output the shape of its full inputs, which must
// agree, and checks that single inputs hold one value.
func (c *Chain) infer(call *eager.Call) []eager.Out {
	var shape tensor.Shape
	for _, st := range c.Steps {
		for _, a := range st.Args {
			if a.Chain {
				continue
			}
			s := call.Inputs[a.Input].Shape()
			switch {
			case a.Single && s.NumElements() != 1:
				call.Fail(tensor.ErrShape, "input %d has shape %v where the chain takes a single value", a.Input, s)
			case a.Single:
			case shape == nil:
				shape = s
			case !s.Equal(shape):
				call.Fail(tensor.ErrShape, "inputs of shapes %v and %v where the chain takes equal shapes", shape, s)
			}
		}
	}
	return call.Out1(tensor.Float32, shape)
}

// block is the elements one block holds: 2 KiB of float32, well inside
// L1 next to the inputs' blocks.
const block = 512

// stepCost is the work per element of one step, in device.Parallel's
// units, for sharding: chains of a few thousand elements and more are
// split, shorter ones would lose more to waking a worker than they gain.
const stepCost = 1

// hostKernel runs the chain on host memory, over blocks of the output
// split among the CPU's workers.
func (c *Chain) hostKernel(call *eager.Call, outs []*tensor.Tensor) {
	out := hostData(outs[0])
	var buf [4][]float32
	ins := buf[:0]
	for _, x := range call.Inputs {
		ins = append(ins, hostData(x))
	}
	if cost := float64(len(out) * len(c.Steps) * stepCost); cost < hostmem.MinShardCost {
		c.blocks(out, ins, 0, len(out)) // inline: no closure to allocate
		return
	}
	cpu, ok := call.Device.(*device.CPUDevice)
	if !ok {
		cpu = device.Host()
	}
	ins = slices.Clone(ins)
	cpu.Parallel(len(out), float64(len(c.Steps)*stepCost), func(lo, hi int) { c.blocks(out, ins, lo, hi) })
}

// blocks runs the chain over out[lo:hi] in blocks.
func (c *Chain) blocks(out []float32, ins [][]float32, lo, hi int) {
	for b := lo; b < hi; b += block {
		c.block(out[b:min(b+block, hi)], ins, b)
	}
}

// block runs every step on o, the output's elements from lo.
func (c *Chain) block(o []float32, ins [][]float32, lo int) {
	full := func(a Operand) []float32 {
		if a.Chain {
			return o
		}
		return ins[a.Input][lo : lo+len(o)]
	}
	for i, st := range c.Steps {
		loops := c.loops[i]
		if len(st.Args) == 1 {
			loops.Unary(o, full(st.Args[0]))
			continue
		}
		a, b := st.Args[0], st.Args[1]
		switch {
		case a.Single:
			loops.SV(o, ins[a.Input][0], full(b))
		case b.Single:
			loops.VS(o, full(a), ins[b.Input][0])
		default:
			loops.VV(o, full(a), full(b))
		}
	}
}

// hostData is x's float32 elements in host memory (the kernel runs on
// devices whose buffers the host addresses).
func hostData(x *tensor.Tensor) []float32 {
	return tensor.HostData[float32](x) //nolint:staticcheck // backend.HostData's, below the backends' layer
}
