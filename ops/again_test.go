package ops_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// opCounter counts the calls of one op by name while on.
type opCounter struct {
	name string
	n    atomic.Int64
}

var (
	counting     atomic.Pointer[opCounter]
	addCountOnce sync.Once
)

type countObserver struct{}

func (countObserver) Observe(c *eager.Call, _ []*tensor.Tensor) {
	if oc := counting.Load(); oc != nil && c.Op != nil && c.Op.Name == oc.name {
		oc.n.Add(1)
	}
}

// callsOf runs fn and returns how many times it called the op name,
// backward passes included.
func callsOf(name string, fn func()) int64 {
	addCountOnce.Do(func() { eager.AddObserver(countObserver{}) })
	oc := &opCounter{name: name}
	counting.Store(oc)
	eager.Activate() // observed even while the tapes pause for their gradients
	defer func() {
		eager.Deactivate()
		counting.Store(nil)
	}()
	fn()
	return oc.n.Load()
}

// hvp is the gradient of Σ v·∇(Σ w·f(xs)) with respect to xs, from two
// tapes: the Hessian of Σ w·f times v.
func hvp(f func([]*tensor.Tensor) *tensor.Tensor, xs, vs []*tensor.Tensor, w *tensor.Tensor) []*tensor.Tensor {
	outer := tape.New()
	outer.Watch(xs...)
	inner := tape.New()
	inner.Watch(xs...)
	grads := inner.Gradient(ops.Sum(ops.Mul(f(xs), w)), xs...)
	s := tensor.Scalar(0.0)
	for i, g := range grads {
		s = ops.Add(s, ops.Sum(ops.Mul(g, vs[i])))
	}
	return outer.Gradient(s, xs...)
}

// The fused ops whose backward is an op of its own differentiate twice:
// Hessian-vector products through them equal those through the same
// mathematics spelled out as ops (a second derivative was silently zero
// before), and a first-order gradient still runs the backward op.
func TestFusedGradientsDifferentiateAgain(t *testing.T) {
	r := tensor.NewRNG(12)
	n := func(shape ...int) *tensor.Tensor { return tensor.RandNormal(r, tensor.Float64, shape...) }
	mask := ops.Gt(tensor.RandUniform(r, tensor.Float64, 0, 1, 3, 4), tensor.Scalar(0.3))
	attention := func(m *tensor.Tensor, causal bool) func([]*tensor.Tensor) *tensor.Tensor {
		return func(in []*tensor.Tensor) *tensor.Tensor { return ops.Attention(in[0], in[1], in[2], m, causal, 0) }
	}
	attentionByOps := func(m *tensor.Tensor, causal bool) func([]*tensor.Tensor) *tensor.Tensor {
		return func(in []*tensor.Tensor) *tensor.Tensor {
			return ops.MatMul(ops.AttentionWeights(in[0], in[1], m, causal, 0), in[2])
		}
	}
	for _, c := range []struct {
		name, backward string
		fused, byOps   func([]*tensor.Tensor) *tensor.Tensor
		inputs         []*tensor.Tensor
	}{
		{"LayerNorm", "LayerNormBackprop",
			func(in []*tensor.Tensor) *tensor.Tensor { return ops.LayerNorm(in[0], in[1], in[2], 1e-3) },
			func(in []*tensor.Tensor) *tensor.Tensor { return normByOps(in[0], in[1], in[2], 1e-3, false) },
			[]*tensor.Tensor{n(3, 5), n(5), n(5)}},
		{"RMSNorm", "LayerNormBackprop",
			func(in []*tensor.Tensor) *tensor.Tensor { return ops.RMSNorm(in[0], in[1], 1e-3) },
			func(in []*tensor.Tensor) *tensor.Tensor { return normByOps(in[0], in[1], nil, 1e-3, true) },
			[]*tensor.Tensor{n(2, 3, 4), n(4)}},
		{"BatchNorm NCHW", "BatchNormBackprop",
			func(in []*tensor.Tensor) *tensor.Tensor {
				y, _, _ := ops.BatchNorm(in[0], in[1], in[2], 1, 1e-3)
				return y
			},
			func(in []*tensor.Tensor) *tensor.Tensor {
				y, _, _ := batchNormByOps(in[0], in[1], in[2], 1, 1e-3)
				return y
			},
			[]*tensor.Tensor{n(3, 2, 2, 2), n(2), n(2)}},
		{"causal attention", "ScaledDotProductAttentionBackprop", attention(nil, true), attentionByOps(nil, true),
			[]*tensor.Tensor{n(2, 3, 5), n(2, 4, 5), n(2, 4, 3)}},
		{"masked attention", "ScaledDotProductAttentionBackprop", attention(mask, false), attentionByOps(mask, false),
			[]*tensor.Tensor{n(2, 3, 5), n(2, 4, 5), n(2, 4, 3)}},
		// One tensor as several inputs: its second derivative counted once
		// (twice before: each input's share was the whole).
		{"self-attention, one tensor as query, key and value", "ScaledDotProductAttentionBackprop",
			func(in []*tensor.Tensor) *tensor.Tensor { return ops.Attention(in[0], in[0], in[0], nil, true, 0) },
			func(in []*tensor.Tensor) *tensor.Tensor {
				return attentionByOps(nil, true)([]*tensor.Tensor{in[0], in[0], in[0]})
			},
			[]*tensor.Tensor{n(2, 4, 5)}},
		{"LSTMCell", "LSTMCellBackprop",
			func(in []*tensor.Tensor) *tensor.Tensor {
				h, c := ops.LSTMCell(in[0], in[1], in[2])
				return ops.Add(h, c)
			},
			func(in []*tensor.Tensor) *tensor.Tensor {
				h, c := lstmWritten(in[0], in[1], in[2])
				return ops.Add(h, c)
			},
			[]*tensor.Tensor{n(3, 8), n(3, 8), n(3, 2)}},
		{"GRUCell, one tensor as both gate terms", "GRUCellBackprop",
			func(in []*tensor.Tensor) *tensor.Tensor { return ops.GRUCell(in[0], in[0], in[1]) },
			func(in []*tensor.Tensor) *tensor.Tensor { return gruWritten(in[0], in[0], in[1]) },
			[]*tensor.Tensor{n(3, 6), n(3, 2)}},
	} {
		vs := make([]*tensor.Tensor, len(c.inputs))
		for i, x := range c.inputs {
			vs[i] = n(x.Shape()...)
		}
		w := n(c.fused(c.inputs).Shape()...)
		got, want := hvp(c.fused, c.inputs, vs, w), hvp(c.byOps, c.inputs, vs, w)
		for i := range want {
			g, w := got[i], want[i]
			switch { // nil where the result is linear in an input (an offset): zeros
			case g == nil && w == nil:
				continue
			case g == nil:
				g = ops.ZerosLike(w)
			case w == nil:
				w = ops.ZerosLike(g)
			}
			diff(t, fmt.Sprintf("%s: Hessian-vector product, input %d", c.name, i), g, w, 1e-9)
		}
		gradient := func(in []*tensor.Tensor) []*tensor.Tensor {
			tp := tape.New()
			tp.Watch(in...)
			return tp.Gradient(ops.Sum(ops.Mul(c.fused(in), w)), in...)
		}
		if calls := callsOf(c.backward, func() { gradient(c.inputs) }); calls != 1 {
			t.Errorf("%s: a first-order gradient called %s %d times, want once", c.name, c.backward, calls)
		}
		leaked := tape.New() // recording, never asked: no second derivative is asked for either
		leaked.Watch(c.inputs...)
		if calls := callsOf(c.backward, func() { gradient(c.inputs) }); calls != 1 {
			t.Errorf("%s: with another tape recording, a first-order gradient called %s %d times, want once", c.name, c.backward, calls)
		}
		leaked.Stop()
		traced := trace.NewFunction(func(in []*tensor.Tensor) []*tensor.Tensor { return gradient(in) })
		for call := range 2 { // the trace, then the graph
			if calls := callsOf(c.backward, func() { traced.Call(c.inputs...) }); calls != 1 {
				t.Errorf("%s: traced call %d of a first-order gradient called %s %d times, want once", c.name, call, c.backward, calls)
			}
		}
	}
}
