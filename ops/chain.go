package ops

import (
	"strconv"
	"strings"
	"sync"

	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/fusion"
	"github.com/eagerflow/eagerflow/tensor"
)

// Elementwise chains in gradient rules: a rule's product of several
// elementwise factors (Pow's dy·b·a^(b-1), Rsqrt's dy·(-y³/2)) would make
// a pass over memory and a buffer per op; chain runs it as one fused
// kernel (internal/fusion, as a traced graph's chains run) where it can,
// the result bitwise the ops' one by one.

// link is one step of a chain: op over args, a nil arg standing for the
// previous step's value.
type link struct {
	op   *eager.Op
	args []*tensor.Tensor
}

func step(op *eager.Op, args ...*tensor.Tensor) link { return link{op, args} }

// chain computes the links in order, each nil argument taking the
// previous link's value, and returns the last one's. Where nothing
// observes (no tape records, no tracer traces: they see the ops
// themselves), every operand is float32 on one device whose kind fuses
// every step, and the operands are of one shape, the result's (the
// first link's among them), or single values, it runs as one kernel;
// else op by op, each intermediate released.
func chain(links ...link) *tensor.Tensor {
	if c, ins := fused(links); c != nil {
		return eager.Run1(c.Op, nil, ins...)
	}
	var last *tensor.Tensor
	for i, l := range links {
		args := make([]*tensor.Tensor, len(l.args))
		for j, a := range l.args {
			if args[j] = a; a == nil {
				args[j] = last
			}
		}
		y := eager.Run1(l.op, nil, args...)
		if i > 0 {
			releaseTemp(last)
		}
		last = y
	}
	return last
}

// chains are the compiled chains by their signature (device kind, ops
// and operands); nil where one could not be compiled.
var chains sync.Map

// fused returns the compiled chain of links and its inputs, or nil where
// they must run op by op.
func fused(links []link) (*fusion.Chain, []*tensor.Tensor) {
	if eager.Observing() || len(links) < 2 {
		return nil, nil
	}
	var shape tensor.Shape
	for _, a := range links[0].args {
		if a != nil && a.NumElements() > 1 {
			shape = a.Shape()
			break
		}
	}
	if shape == nil {
		return nil, nil
	}
	dev := links[0].args[0].Device()
	var ins []*tensor.Tensor
	steps := make([]fusion.Step, len(links))
	var key strings.Builder
	key.WriteString(strconv.Itoa(int(dev.Kind())))
	for i, l := range links {
		steps[i].Op = l.op
		key.WriteString("|" + l.op.Name)
		for _, a := range l.args {
			if a == nil {
				if i == 0 {
					return nil, nil
				}
				steps[i].Args = append(steps[i].Args, fusion.Operand{Chain: true})
				key.WriteString(" c")
				continue
			}
			if a.DType() != tensor.Float32 || a.Device() != dev {
				return nil, nil
			}
			single := !a.Shape().Equal(shape)
			if single && (a.NumElements() != 1 || a.Rank() > shape.Rank()) {
				return nil, nil
			}
			k := indexOf(ins, a)
			if k < 0 {
				k = len(ins)
				ins = append(ins, a)
			}
			steps[i].Args = append(steps[i].Args, fusion.Operand{Input: k, Single: single})
			key.WriteString(" " + strconv.Itoa(k) + map[bool]string{true: "s", false: "f"}[single])
		}
	}
	if c, ok := chains.Load(key.String()); ok {
		c, _ := c.(*fusion.Chain)
		return c, ins
	}
	c := fusion.Compile(dev.Kind(), steps, len(ins))
	chains.Store(key.String(), c)
	if c == nil {
		return nil, nil
	}
	return c, ins
}

// indexOf is the index of x in xs, or -1.
func indexOf(xs []*tensor.Tensor, x *tensor.Tensor) int {
	for i, y := range xs {
		if y == x {
			return i
		}
	}
	return -1
}
