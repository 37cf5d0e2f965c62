package difftest

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

func values(x T) []float64 { return tensor.ToSlice[float64](ops.Cast(x, tensor.Float64)) }

// eagerly runs p on in with a tape: every step's value and the gradient
// of the loss with respect to each input.
func (p *Program) eagerly(in []T) (vals, grads []T) {
	tp := tape.New()
	tp.Watch(in...)
	vals, loss := p.run(in)
	return vals, tp.Gradient(loss, in...)
}

// hessianVector is the gradient of Σ v·∂loss/∂in over p's inputs in,
// for directions vs, from two tapes: the gradient rules differentiated
// in their turn.
func (p *Program) hessianVector(in, vs []T) []T {
	outer := tape.New()
	outer.Watch(in...)
	inner := tape.New()
	inner.Watch(in...)
	_, loss := p.run(in)
	s := tensor.Scalar(0.0)
	for i, g := range inner.Gradient(loss, in...) {
		if g != nil {
			s = ops.Add(s, ops.Sum(ops.Mul(g, vs[i])))
		}
	}
	return outer.Gradient(s, in...)
}

// secondTol is the tolerance of the Hessian-vector products: sums of
// more terms, rounded more often, than the gradients'.
const secondTol = 1e-7

// freshInputs returns new values for p's inputs, of the same shapes.
func (p *Program) freshInputs(seed uint64) []T {
	out := make([]T, len(p.in))
	for i, x := range p.in {
		out[i] = tensor.RandUniform(tensor.NewRNG(seed+uint64(i)), tensor.Float64, -2, 2, x.Shape()...)
	}
	return out
}

// sameAs returns "" when got equals want (nil as zeros) to tol.
func sameAs(got, want T) string {
	if want == nil {
		if got == nil {
			return ""
		}
		want = ops.ZerosLike(got)
	}
	return compare(got, encode(want))
}

// checkTraced runs p traced, with a tape inside the function (values and
// gradients, from the trace and from the graph on other inputs), with two
// inside (Hessian-vector products) and with a tape around its calls,
// against p run eagerly.
func checkTraced(p *Program, eagerVals, eagerGrads []T) string {
	inside := trace.NewFunction(func(in []T) []T {
		vals, grads := p.eagerly(in)
		return append(vals, grads...)
	})
	around := trace.NewFunction(func(in []T) []T {
		_, loss := p.run(in)
		return []T{loss}
	})
	second := trace.NewFunction(func(in []T) []T { return p.hessianVector(in[:len(p.in)], in[len(p.in):]) })
	for call, in := range [][]T{p.in, p.freshInputs(uint64(p.ID) << 20), p.in} {
		wantVals, wantGrads := eagerVals, eagerGrads
		if call == 1 {
			wantVals, wantGrads = p.eagerly(in)
		}
		got, err := inside.Call(in...)
		if err != nil {
			return fmt.Sprintf("traced call %d: %v", call, err)
		}
		for i, w := range append(append([]T{}, wantVals...), wantGrads...) {
			if d := sameAs(got[i], w); d != "" {
				return fmt.Sprintf("traced call %d, result %d: %s", call, i, d)
			}
		}
		wantHV := p.hessianVector(in, p.second)
		gotHV, err := second.Call(append(slices.Clone(in), p.second...)...)
		if err != nil {
			return fmt.Sprintf("traced Hessian-vector product, call %d: %v", call, err)
		}
		for i, w := range wantHV {
			if d := sameAs(gotHV[i], w); d != "" {
				return fmt.Sprintf("traced Hessian-vector product, call %d, input %d: %s", call, i, d)
			}
		}
		tp := tape.New()
		tp.Watch(in...)
		loss, err := around.Call(in...)
		if err != nil {
			return fmt.Sprintf("call %d under a tape: %v", call, err)
		}
		for i, g := range tp.Gradient(loss[0], in...) {
			if d := sameAs(g, wantGrads[i]); d != "" {
				return fmt.Sprintf("call %d under a tape, gradient of input %d: %s", call, i, d)
			}
		}
	}
	return ""
}

// checkSplit differentiates p in two passes (tape.Tape.GradientSplit,
// the first input's gradient first, then the others') and against the
// one-pass gradients grads: bit for bit, as the same rules run on the
// same output gradients.
func checkSplit(p *Program, grads []T) string {
	tp := tape.New(tape.Options{ReleaseIntermediates: true})
	tp.Watch(p.in...)
	_, loss := p.run(p.in)
	first, rest := tp.GradientSplit(loss, nil, p.in, 1)
	got := append(first, rest()...)
	for i, g := range got {
		switch {
		case g == nil || grads[i] == nil:
			if (g == nil) != (grads[i] == nil) {
				return fmt.Sprintf("split gradient of input %d: %v, one pass %v", i, g, grads[i])
			}
		case fmt.Sprint(values(g)) != fmt.Sprint(values(grads[i])):
			return fmt.Sprintf("split gradient of input %d differs from one pass's", i)
		}
	}
	return ""
}

// Seeded random op programs agree with PyTorch (values of every step,
// gradients of every input, Hessian-vector products), and traced with
// eager.
func TestOpsMatchPyTorch(t *testing.T) {
	needTorch(t)
	for _, seed := range seeds(t) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			var progs []*Program
			vals, grads := map[int][]T{}, map[int][]T{}
			for id := range *flagCases {
				p := generate(seed, id)
				var v, g []T
				if err := tensor.Catch(func() { v, g = p.eagerly(p.in) }); err != nil {
					t.Fatalf("program %d: %v\n%s", id, err, describe(p))
				}
				if d := checkTraced(p, v, g); d != "" {
					t.Errorf("program %d: %s\n%s", id, d, describe(p))
				}
				if d := checkSplit(p, g); d != "" {
					t.Errorf("program %d: %s\n%s", id, d, describe(p))
				}
				progs, vals[id], grads[id] = append(progs, p), v, g
			}
			res := runTorch(t, progs)
			steps, unsecond := 0, 0
			for _, p := range progs {
				r := resultOf(t, res, p.ID, p)
				if r == nil {
					continue
				}
				steps += len(p.Steps)
				for i, v := range vals[p.ID] {
					if d := compare(v, r.Values[i]); d != "" {
						t.Errorf("program %d, step %d (%s): %s\n%s", p.ID, i, p.Steps[i].Op, d, describe(p))
					}
				}
				for i, g := range grads[p.ID] {
					if d := compare(g, r.Grads[i]); d != "" {
						t.Errorf("program %d, gradient of input %d: %s\n%s", p.ID, i, d, describe(p))
					}
				}
				if r.SecondError != "" { // an op PyTorch does not differentiate twice
					unsecond++
					continue
				}
				var hv []T
				if err := tensor.Catch(func() { hv = p.hessianVector(p.in, p.second) }); err != nil {
					t.Errorf("program %d, Hessian-vector product: %v\n%s", p.ID, err, describe(p))
					continue
				}
				// Below a millionth of the product's largest element, an
				// element is held to that scale: where the function barely
				// depends on an input (a shift a BatchNorm takes out) its
				// elements are both sides' rounding noise.
				floor := 1.0
				for _, w := range r.Second {
					if w == nil {
						continue
					}
					if vals, err := w.decode(); err == nil {
						for _, x := range vals {
							if !math.IsInf(x, 0) && !math.IsNaN(x) {
								floor = math.Max(floor, 1e-6*math.Abs(x))
							}
						}
					}
				}
				for i, h := range hv {
					if d := compareAbove(h, r.Second[i], secondTol, floor); d != "" {
						t.Errorf("program %d, Hessian-vector product, input %d: %s\n%s", p.ID, i, d, describe(p))
					}
				}
			}
			t.Logf("seed %d: %d programs, %d steps: every step's value, every input's gradient and Hessian-vector product compared (%d without the product: PyTorch does not differentiate an op twice)",
				seed, len(progs), steps, unsecond)
		})
	}
}

// describe prints a program for a failure message.
func describe(p *Program) string {
	s := ""
	for i, x := range p.in {
		s += fmt.Sprintf("  in%d %v\n", i, x.Shape())
	}
	for i, st := range p.Steps {
		s += fmt.Sprintf("  %%%d = %s%v %s\n", i, st.Op, st.Args, compactAttrs(st.Attrs))
	}
	return s
}

// compactAttrs prints the attributes that are set.
func compactAttrs(a Attrs) string {
	b, _ := json.Marshal(a)
	var m map[string]any
	json.Unmarshal(b, &m)
	var parts []string
	for k, v := range m {
		switch x := v.(type) {
		case nil, bool, string, float64:
			if x == nil || x == false || x == "" || x == 0.0 {
				continue
			}
		case []any:
			if len(x) == 0 {
				continue
			}
		}
		j, _ := json.Marshal(v)
		parts = append(parts, k+"="+string(j))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}
