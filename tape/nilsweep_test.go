package tape

import (
	"testing"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/nilsweep"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Every exported function and the Tape's methods, given nil arguments,
// say what was nil.
func TestNilArgumentsAreReported(t *testing.T) {
	x := tensor.FromSlice([]float64{1, 2})
	sum := func(xs []*tensor.Tensor) *tensor.Tensor { return ops.Sum(ops.Square(xs[0])) }
	id := func(xs []*tensor.Tensor) []*tensor.Tensor { return xs }
	grad := func(xs, ys, dys []*tensor.Tensor) []*tensor.Tensor { return dys }
	fns := []nilsweep.Func{
		{Name: "CheckGradient", Fn: CheckGradient, Valid: []any{sum, []*tensor.Tensor{x}, 1e-6}},
		{Name: "CustomGradient", Fn: func(fn func([]*tensor.Tensor) []*tensor.Tensor, g func(xs, ys, dys []*tensor.Tensor) []*tensor.Tensor, xs ...*tensor.Tensor) {
			tp := New()
			tp.Watch(x)
			tp.Gradient(ops.Sum(CustomGradient(fn, g)(xs...)[0]), x)
		}, Valid: []any{id, grad, []*tensor.Tensor{x}}},
		{Name: "RecordingTapes", Fn: RecordingTapes},
		{Name: "Detach", Fn: Detach},
		{Name: "New", Fn: New},
		{Name: "NewVariable", Fn: NewVariable, Valid: []any{"w", x}},
		{Name: "Tape.Watch", Fn: func(xs ...*tensor.Tensor) { New().Watch(xs...) }, Valid: []any{[]*tensor.Tensor{x, x}}},
		{Name: "Tape.Gradient", Fn: func(y *tensor.Tensor, xs ...*tensor.Tensor) {
			tp := New()
			tp.Watch(x)
			tp.Gradient(y, xs...)
		}, Valid: []any{ops.Sum(x), []*tensor.Tensor{x}}},
		{Name: "Tape.GradientSeeded", Fn: func(y, seed *tensor.Tensor, xs ...*tensor.Tensor) {
			tp := New()
			tp.Watch(x)
			tp.GradientSeeded(y, seed, xs...)
		}, Valid: []any{ops.Square(x), x, []*tensor.Tensor{x}}},
		{Name: "Tape.GradientEach", Fn: func(y, seed *tensor.Tensor, xs []*tensor.Tensor, ready func(int, *tensor.Tensor)) {
			tp := New()
			tp.Watch(x)
			tp.GradientEach(y, seed, xs, ready)
		}, Valid: []any{ops.Square(x), x, []*tensor.Tensor{x}, func(int, *tensor.Tensor) {}}},
		{Name: "Tape.GradientSplit", Fn: func(y, seed *tensor.Tensor, xs []*tensor.Tensor) {
			tp := New()
			tp.Watch(x)
			_, rest := tp.GradientSplit(y, seed, xs, 1)
			rest()
		}, Valid: []any{ops.Square(x), x, []*tensor.Tensor{x}}},
		{Name: "Tape.Jacobian", Fn: func(y, x *tensor.Tensor) { tp := New(); tp.Watch(x); tp.Jacobian(y, x) }, Valid: []any{x, x}},
		{Name: "Variable.Assign", Fn: func(y *tensor.Tensor) { NewVariable("v", x).Assign(y) }, Valid: []any{x}},
		{Name: "Variable.AssignAdd", Fn: func(y *tensor.Tensor) { NewVariable("v", x).AssignAdd(y) }, Valid: []any{x}},
		{Name: "Variable.AssignSub", Fn: func(y *tensor.Tensor) { NewVariable("v", x).AssignSub(y) }, Valid: []any{x}},
		{Name: "Variable.AssignScaled", Fn: func(y *tensor.Tensor) { NewVariable("v", x).AssignScaled(2, y) }, Valid: []any{x}},
		{Name: "Variable.AdamUpdate", Fn: func(m, s *Variable, g *tensor.Tensor) {
			NewVariable("v", x).AdamUpdate(m, s, g, ops.AdamParams{LR: 0.1, Beta1: 0.9, Beta2: 0.999, C1: 0.1, C2: 0.001, Eps: 1e-7})
		}, Valid: []any{NewVariable("m", ops.ZerosLike(x)), NewVariable("s", ops.ZerosLike(x)), x}},
		{Name: "AdamUpdateAll", Fn: func(vars, ms, ss []*Variable, grads []*tensor.Tensor) {
			AdamUpdateAll(vars, ms, ss, grads, ops.AdamParams{LR: 0.1, Beta1: 0.9, Beta2: 0.999, C1: 0.1, C2: 0.001, Eps: 1e-7})
		}, Valid: []any{[]*Variable{NewVariable("w", x)}, []*Variable{NewVariable("m", ops.ZerosLike(x))},
			[]*Variable{NewVariable("s", ops.ZerosLike(x))}, []*tensor.Tensor{x}}},
		{Name: "MomentumUpdateAll", Fn: func(vars, vels []*Variable, grads []*tensor.Tensor) {
			MomentumUpdateAll(vars, vels, grads, ops.MomentumParams{LR: 0.1, Momentum: 0.9})
		}, Valid: []any{[]*Variable{NewVariable("w", x)}, []*Variable{NewVariable("vel", ops.ZerosLike(x))}, []*tensor.Tensor{x}}},
		{Name: "RMSPropUpdateAll", Fn: func(vars, ss, moms []*Variable, grads []*tensor.Tensor) {
			RMSPropUpdateAll(vars, ss, moms, grads, ops.RMSPropParams{LR: 0.1, Rho: 0.9, Eps: 1e-7, Momentum: 0.5})
		}, Valid: []any{[]*Variable{NewVariable("w", x)}, []*Variable{NewVariable("s", ops.ZerosLike(x))},
			[]*Variable{NewVariable("mom", ops.ZerosLike(x))}, []*tensor.Tensor{x}}},
		{Name: "StepConstants", Fn: StepConstants, Valid: []any{device.Host(), 1}},
		{Name: "NewStepRecord", Fn: NewStepRecord, Valid: []any{[]*tensor.Tensor{tensor.Zeros(tensor.Uint8, device.StepConstBytes)}}},
	}
	noArg := "no argument"
	prim := "a deprecated region primitive; control's constructs, which sweep, call it"
	nilsweep.Covered(t, ".", fns, map[string]string{"Mark": prim, "Recording": prim, "Captures": prim, "DropUnread": prim,
		"WindowVJP": prim, "RecordRegion": prim, "Tape.Stop": noArg, "Variable.Name": noArg, "Variable.Value": noArg,
		"Variable.String": noArg, "Variable.MarkChanged": noArg}, "Tape", "Variable")
	nilsweep.Sweep(t, fns)
}
