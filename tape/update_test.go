package tape_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// stepRule is one optimizer formula: its fused update of vars on the
// host, and the same written in ops (the reference), over one variable
// and its slots.
type stepRule struct {
	name  string
	slots int
	fused func(vars []*tape.Variable, slots [][]*tape.Variable, grads []*tensor.Tensor) []bool
	ops   func(w *tape.Variable, slots []*tape.Variable, g *tensor.Tensor)
}

// stepRules are SGD with momentum (heavy ball and Nesterov) and RMSProp
// (with and without momentum) at constants that round in float32.
func stepRules() []stepRule {
	s := func(like *tensor.Tensor, v float64) *tensor.Tensor { return ops.ScalarLike(like, v) }
	var rules []stepRule
	for _, nesterov := range []bool{false, true} {
		p := ops.MomentumParams{LR: 0.0123, Momentum: 0.9, Nesterov: nesterov}
		rules = append(rules, stepRule{fmt.Sprintf("momentum (Nesterov %v)", nesterov), 1,
			func(vars []*tape.Variable, slots [][]*tape.Variable, grads []*tensor.Tensor) []bool {
				return tape.MomentumUpdateAll(vars, slots[0], grads, p)
			},
			func(w *tape.Variable, sl []*tape.Variable, g *tensor.Tensor) {
				vel := sl[0]
				vel.Assign(ops.Add(ops.Mul(vel.Value(), s(g, p.Momentum)), g))
				step := vel.Value()
				if nesterov {
					step = ops.Add(g, ops.Mul(vel.Value(), s(g, p.Momentum)))
				}
				w.Assign(ops.Sub(w.Value(), ops.Mul(step, s(g, p.LR))))
			}})
	}
	for _, mu := range []float64{0, 0.7} {
		p := ops.RMSPropParams{LR: 0.0031, Rho: 0.9, Eps: 1e-7, Momentum: mu}
		n := 1
		if mu > 0 {
			n = 2
		}
		rules = append(rules, stepRule{fmt.Sprintf("RMSProp (momentum %v)", mu), n,
			func(vars []*tape.Variable, slots [][]*tape.Variable, grads []*tensor.Tensor) []bool {
				var moms []*tape.Variable
				if mu > 0 {
					moms = slots[1]
				}
				return tape.RMSPropUpdateAll(vars, slots[0], moms, grads, p)
			},
			func(w *tape.Variable, sl []*tape.Variable, g *tensor.Tensor) {
				ms := sl[0]
				ms.Assign(ops.Add(ops.Mul(ms.Value(), s(g, p.Rho)), ops.Mul(ops.Mul(g, g), s(g, 1-p.Rho))))
				u := ops.Div(g, ops.Add(ops.Sqrt(ms.Value()), s(g, p.Eps)))
				if mu > 0 {
					sl[1].Assign(ops.Add(ops.Mul(sl[1].Value(), s(g, mu)), u))
					u = sl[1].Value()
				}
				w.Assign(ops.Sub(w.Value(), ops.Mul(u, s(g, p.LR))))
			}})
	}
	return rules
}

// The fused host steps are, bit for bit, their formula written in ops,
// step after step, in both float dtypes, on a variable long enough to be
// split across the host's workers and on short ones.
func TestFusedStepsMatchOps(t *testing.T) {
	r := tensor.NewRNG(31)
	for _, rule := range stepRules() {
		for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
			sizes := []int{1, 7, 100003}
			var fused, ref []*tape.Variable
			var fslots, rslots [][]*tape.Variable
			fslots, rslots = make([][]*tape.Variable, rule.slots), make([][]*tape.Variable, rule.slots)
			for i, n := range sizes {
				w := tensor.RandNormal(r, dt, n)
				fused = append(fused, tape.NewVariable(fmt.Sprint("w", i), w))
				ref = append(ref, tape.NewVariable(fmt.Sprint("w", i), w))
				for k := range rule.slots {
					sl := ops.Abs(tensor.RandNormal(r, dt, n))
					fslots[k] = append(fslots[k], tape.NewVariable(fmt.Sprint("s", k, i), sl))
					rslots[k] = append(rslots[k], tape.NewVariable(fmt.Sprint("s", k, i), sl))
				}
			}
			for step := range 3 {
				var grads []*tensor.Tensor
				for _, n := range sizes {
					grads = append(grads, tensor.RandNormal(r, dt, n))
				}
				done := rule.fused(fused, fslots, grads)
				for i := range sizes {
					if !done[i] {
						t.Fatalf("%s %v: variable %d not updated in one pass", rule.name, dt, i)
					}
					var sl []*tape.Variable
					for k := range rule.slots {
						sl = append(sl, rslots[k][i])
					}
					rule.ops(ref[i], sl, grads[i])
					if !bytes.Equal(fused[i].Value().HostBytes(), ref[i].Value().HostBytes()) {
						t.Fatalf("%s %v, step %d: variable %d (%d elements) differs from the ops' update", rule.name, dt, step, i, sizes[i])
					}
					for k := range rule.slots {
						if !bytes.Equal(fslots[k][i].Value().HostBytes(), rslots[k][i].Value().HostBytes()) {
							t.Fatalf("%s %v, step %d: slot %d of variable %d differs from the ops' update", rule.name, dt, step, k, i)
						}
					}
				}
			}
		}
	}
}

// The fused steps refuse lists of other lengths, a nil slot and a slot or
// gradient of another shape with a typed error, changing nothing; a nil
// gradient skips its variable.
func TestFusedStepChecks(t *testing.T) {
	w := tape.NewVariable("w", tensor.FromSlice([]float32{1, 2}))
	vel := tape.NewVariable("vel", tensor.Zeros(tensor.Float32, 2))
	p := ops.MomentumParams{LR: 0.1, Momentum: 0.9}
	g := tensor.FromSlice([]float32{1, 1})
	for _, c := range []struct {
		what string
		run  func()
		kind error
	}{
		{"two velocities for one variable", func() {
			tape.MomentumUpdateAll([]*tape.Variable{w}, []*tape.Variable{vel, vel}, []*tensor.Tensor{g}, p)
		}, tensor.ErrArity},
		{"a nil velocity", func() { tape.MomentumUpdateAll([]*tape.Variable{w}, []*tape.Variable{nil}, []*tensor.Tensor{g}, p) }, tensor.ErrArity},
		{"a velocity of another shape", func() {
			tape.MomentumUpdateAll([]*tape.Variable{w}, []*tape.Variable{tape.NewVariable("v3", tensor.Zeros(tensor.Float32, 3))}, []*tensor.Tensor{g}, p)
		}, tensor.ErrShape},
		{"a gradient of another dtype", func() {
			tape.MomentumUpdateAll([]*tape.Variable{w}, []*tape.Variable{vel}, []*tensor.Tensor{tensor.FromSlice([]float64{1, 1})}, p)
		}, tensor.ErrDType},
		{"RMSProp with momentum and no momentum slots", func() {
			tape.RMSPropUpdateAll([]*tape.Variable{w}, []*tape.Variable{vel}, nil, []*tensor.Tensor{g}, ops.RMSPropParams{LR: 0.1, Rho: 0.9, Eps: 1e-7, Momentum: 0.5})
		}, tensor.ErrArity},
	} {
		if err := tensor.Catch(c.run); !errors.Is(err, c.kind) {
			t.Errorf("%s: %v, want %v", c.what, err, c.kind)
		}
	}
	if got := tensor.ToSlice[float32](w.Value()); got[0] != 1 || got[1] != 2 {
		t.Errorf("the variable changed: %v", got)
	}
	if done := tape.MomentumUpdateAll([]*tape.Variable{w}, []*tape.Variable{nil}, []*tensor.Tensor{nil}, p); done[0] {
		t.Error("a variable with a nil gradient was updated")
	}
}
