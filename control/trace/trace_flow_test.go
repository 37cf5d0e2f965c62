package trace_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Tracing control flow: Cond, Case, While (with MaxIterations), Fori and
// nested Functions, each checked against the same function run eagerly.
func TestFunctionControlFlow(t *testing.T) {
	// Fori's trip count is a Go value: traced unrolled, it stays right.
	fori := trace.NewFunction(func(a []T) []T {
		return control.Fori(0, 4, func(i T, v []T) []T { return []T{ops.Mul(v[0], a[0])} }, []T{ops.OnesLike(a[0])})
	})
	for _, v := range []float32{2, 3} {
		got, err := fori.Call(f32(v))
		if err != nil || tensor.ToSlice[float32](got[0])[0] != v*v*v*v {
			t.Errorf("Fori x=%v: %v %v", v, got, err)
		}
	}
	// A Cond on a constant is baked in correctly.
	constant := trace.NewFunction(func(a []T) []T {
		return control.Cond(tensor.Scalar(true), func() []T { return []T{ops.Neg(a[0])} }, func() []T { return a })
	})
	if got, err := constant.Call(f32(5)); err != nil || tensor.ToSlice[float32](got[0])[0] != -5 {
		t.Errorf("constant Cond: %v %v", got, err)
	}
	// A Case deciding on the argument becomes a chain of conds; indices
	// out of range take the last branch, as eagerly.
	caseFn := func(a []T) []T {
		return control.Case(ops.Cast(a[0], tensor.Int32),
			func() []T { return a },
			func() []T { return []T{ops.Neg(a[0])} },
			func() []T { return []T{ops.Mul(a[0], tensor.Scalar(float32(10)))} })
	}
	pick := trace.NewFunction(caseFn)
	for _, v := range []float32{1, 0, 2, 5, -3, 1} {
		got, err := pick.Call(tensor.Scalar(v))
		if err != nil {
			t.Fatal(err)
		}
		eq32(t, fmt.Sprintf("Case(%v)", v), got[0], caseFn([]T{tensor.Scalar(v)})[0])
	}
	if pick.Traces() != 1 {
		t.Errorf("Case: %d traces", pick.Traces())
	}
	// A While deciding on the argument under a tape: the loop and its
	// gradient are frames, right for every trip count (0 included).
	taped := trace.NewFunction(func(a []T) []T {
		tp := tape.New()
		tp.Watch(a[0])
		y := control.While(func(v []T) T { return ops.Lt(v[0], tensor.Scalar(float32(10))) },
			func(v []T) []T { return []T{ops.Mul(v[0], tensor.Scalar(float32(2)))} }, a)
		return []T{y[0], tp.Gradient(y[0], a[0])[0]}
	})
	for _, c := range []struct{ x, y, dy float32 }{{1, 16, 16}, {3, 12, 4}, {20, 20, 1}, {0.1, 12.8, 128}, {9.5, 19, 2}} {
		got, err := taped.Call(tensor.Scalar(c.x))
		if err != nil {
			t.Fatal(err)
		}
		if y, dy := got[0].Float(), got[1].Float(); float32(y) != c.y || float32(dy) != c.dy {
			t.Errorf("While under a tape at x=%v: y=%v dy/dx=%v, want %v %v", c.x, y, dy, c.y, c.dy)
		}
	}
	if taped.Traces() != 1 {
		t.Errorf("While under a tape: %d traces", taped.Traces())
	}
}

func eq32(t *testing.T, what string, got, want T) {
	t.Helper()
	if !slices.Equal(tensor.ToSlice[float32](got), tensor.ToSlice[float32](want)) {
		t.Errorf("%s: traced %v, eager %v", what, got, want)
	}
}

func TestFunctionTracesCond(t *testing.T) {
	// Nested conds; a branch returning a value from outside unchanged (x,
	// read again after the cond), one returning a constant, and a
	// variable read inside a branch.
	w := tape.NewVariable("w", f32(3))
	fn := func(a []T) []T {
		x := a[0]
		s := ops.Sum(x)
		y := control.Cond(ops.Gt(s, tensor.Scalar(float32(0))),
			func() []T {
				inner := control.Cond(ops.Gt(s, tensor.Scalar(float32(10))),
					func() []T { return []T{tensor.FullOf(tensor.Float32, 100, 2)} },
					func() []T { return []T{ops.Mul(ops.Tanh(x), w.Value())} })
				return []T{inner[0], x}
			},
			func() []T { return []T{ops.Neg(x), ops.Exp(x)} })
		return []T{ops.Add(y[0], x), y[1], x}
	}
	f := trace.NewFunction(fn)
	for _, in := range [][]float32{{1, 2}, {-1, -2}, {20, 1}, {0.5, -0.25}, {-3, 1}} {
		x := f32(in...)
		got, err := f.Call(x)
		if err != nil {
			t.Fatal(err)
		}
		want := fn([]T{x})
		for i := range want {
			eq32(t, fmt.Sprintf("%v result %d", in, i), got[i], want[i])
		}
	}
	if f.Traces() != 1 {
		t.Errorf("%d traces", f.Traces())
	}
	g := f.Graph(f32(0, 0)).String()
	if strings.Count(g, "= Merge(") != 3 || !strings.Contains(g, "= Switch(") {
		t.Errorf("want 3 Merges (one per cond output) and Switches:\n%s", g)
	}
}

func TestFunctionCondErrors(t *testing.T) {
	pos := func(x T) T { return ops.Gt(ops.Sum(x), tensor.Scalar(float32(0))) }
	for _, c := range []struct {
		name, want string
		fn         func(a []T) []T
	}{
		{"shapes", "Cond output 0 differs between branches: true float32[2], false float32[]", func(a []T) []T {
			return control.Cond(pos(a[0]), func() []T { return a }, func() []T { return []T{ops.Sum(a[0])} })
		}},
		{"counts", "true 1, false 2", func(a []T) []T {
			return control.Cond(pos(a[0]), func() []T { return a }, func() []T { return []T{a[0], a[0]} })
		}},
		{"untaken fails", "the branch not taken (false) failed", func(a []T) []T {
			return control.Cond(pos(a[0]), func() []T { return a }, func() []T { return []T{ops.MatMul(a[0], ops.Reshape(a[0], 1, 2))} })
		}},
	} {
		f := trace.NewFunction(c.fn)
		if _, err := f.Call(f32(1, 2)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// A tape made inside a traced While's body that differentiates a While of
// varying trip count there: the inner loop is traced unrolled with guards
// on its decisions, and calls whose trip counts differ run eagerly, so
// every call returns what fn computes.
func TestFunctionTapeInsideLoopBody(t *testing.T) {
	small := func(v []T) T { return ops.Lt(ops.Sum(v[0]), tensor.Scalar(float32(100))) }
	fn := func(a []T) []T {
		return control.While(small, func(v []T) []T {
			tp := tape.New()
			tp.Watch(v[0])
			inner := control.While(small, func(u []T) []T { return []T{ops.Mul(u[0], tensor.Scalar(float32(3)))} }, v)
			return []T{ops.Add(v[0], tp.Gradient(ops.Sum(inner[0]), v[0])[0])}
		}, a)
	}
	f := trace.NewFunction(fn)
	var logged []string
	f.Logf = func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
	checkCalls(t, "tape inside a loop", f, fn, [][]T{{f32(1, 2)}, {f32(1, 2)}, {f32(2, 2)}, {f32(20, 1)}, {f32(1, 2)}}, 1e-6)
	if f.Traces() != 1 {
		t.Errorf("%d traces", f.Traces())
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "runs eagerly") {
		t.Errorf("logged %q, want one note that a guard failed", logged)
	}
	if g := f.Graph(f32(1, 2)).String(); !strings.Contains(g, "Guard(") {
		t.Errorf("no guard in the graph:\n%s", g)
	}
}

func i64(v int64) T { return tensor.Scalar(v) }

func TestFunctionTracesWhile(t *testing.T) {
	w := tape.NewVariable("w", f32(1.5, 2))
	one := i64(1)
	fn := func(a []T) []T {
		n, x := a[0], a[1]
		// sum of i for i < n, with a loop constant (one), a loop value
		// passed on unchanged (x) and one replaced by a constant.
		sum := control.While(func(v []T) T { return ops.Lt(v[0], n) },
			func(v []T) []T { return []T{ops.Add(v[0], one), ops.Add(v[1], v[0]), v[2], i64(7)} },
			[]T{i64(0), i64(0), x, i64(0)})
		// x times w until its sum passes 20; a Cond in the body; an inner
		// loop counting to i.
		grown := control.While(func(v []T) T { return ops.Lt(ops.Sum(v[0]), tensor.Scalar(float32(20))) },
			func(v []T) []T {
				y := control.Cond(ops.Gt(ops.Amax(v[0]), tensor.Scalar(float32(4))),
					func() []T { return []T{ops.Add(v[0], tensor.Scalar(float32(1)))} },
					func() []T { return []T{ops.Mul(v[0], w.Value())} })
				inner := control.While(func(u []T) T { return ops.Lt(u[0], v[1]) },
					func(u []T) []T { return []T{ops.Add(u[0], one), ops.Add(u[1], u[0])} },
					[]T{i64(0), v[2]})
				return []T{y[0], ops.Add(v[1], one), inner[1]}
			}, []T{ops.Abs(x), i64(0), i64(0)})
		return append(sum, grown...)
	}
	f := trace.NewFunction(fn)
	for _, c := range []struct {
		n int64
		x []float32
	}{{5, []float32{1, 2}}, {0, []float32{3, -1}}, {1, []float32{0.5, 0.5}}, {9, []float32{30, 1}}, {3, []float32{-0.1, 0.2}}} {
		args := []T{i64(c.n), f32(c.x...)}
		got, err := f.Call(args...)
		if err != nil {
			t.Fatal(err)
		}
		want := fn(args)
		if len(got) != len(want) {
			t.Fatalf("%d results, want %d", len(got), len(want))
		}
		for i := range want {
			if got[i].String() != want[i].String() {
				t.Errorf("n=%d x=%v result %d: traced %v, eager %v", c.n, c.x, i, got[i], want[i])
			}
		}
	}
	if f.Traces() != 1 {
		t.Errorf("%d traces", f.Traces())
	}
	g := f.Graph(i64(0), f32(0, 0)).String()
	for _, want := range []string{`{"while1"}`, `{"while3", constant}`, "= NextIteration(", "= Exit(", "[while3] = Add("} {
		if !strings.Contains(g, want) {
			t.Errorf("graph lacks %q:\n%s", want, g)
		}
	}
}

func TestNestedFunctions(t *testing.T) {
	inner := trace.NewFunction(func(a []T) []T {
		return control.Cond(ops.Gt(ops.Sum(a[0]), tensor.Scalar(float32(0))),
			func() []T { return []T{ops.Neg(a[0])} }, func() []T { return a })
	})
	outer := trace.NewFunction(func(a []T) []T {
		y, err := inner.Call(ops.Mul(a[0], tensor.Scalar(float32(2))))
		if err != nil {
			panic(err)
		}
		return y
	})
	for _, v := range []float32{1, -1, 3, -2} {
		got, err := outer.Call(f32(v))
		if err != nil {
			t.Fatal(err)
		}
		want := -2 * v
		if v < 0 {
			want = 2 * v
		}
		if g := tensor.ToSlice[float32](got[0])[0]; g != want {
			t.Errorf("outer(%v) = %v, want %v", v, g, want)
		}
	}
	if outer.Traces() != 1 || inner.Traces() != 0 {
		t.Errorf("traces: outer %d, inner %d; want 1 and 0 (inlined)", outer.Traces(), inner.Traces())
	}
}

func TestFunctionTracesWhileWithMaxIterations(t *testing.T) {
	fn := func(a []T) []T {
		return control.While(func(v []T) T { return ops.Lt(v[0], a[0]) },
			func(v []T) []T { return []T{ops.Add(v[0], i64(1))} }, []T{i64(0)},
			control.WhileOptions{MaxIterations: 4})
	}
	f := trace.NewFunction(fn)
	for _, n := range []int64{2, 9, 0, 4} {
		got, err := f.Call(i64(n))
		if err != nil {
			t.Fatal(err)
		}
		if g, w := got[0].Item().(int64), fn([]T{i64(n)})[0].Item().(int64); g != w || g != min(n, 4) {
			t.Errorf("n=%d: traced %d, eager %d, want %d", n, g, w, min(n, 4))
		}
	}
	if f.Traces() != 1 {
		t.Errorf("%d traces", f.Traces())
	}
}

// A branch whose ops read only a variable and constants runs only when
// taken: its ops wait on the branch's pivot, so the Merge sees the right
// live input whichever branch a call takes.
func TestFunctionCondBranchOfVariablesOnly(t *testing.T) {
	w := tape.NewVariable("w", f32(1.5, -2))
	fn := func(a []T) []T {
		return control.Cond(ops.Gt(ops.Sum(a[0]), tensor.Scalar(float32(0))),
			func() []T { return []T{ops.Mul(w.Value(), tensor.Scalar(float32(2)))} },
			func() []T { return []T{ops.Neg(a[0])} })
	}
	f := trace.NewFunction(fn)
	for _, in := range [][]float32{{1, 2}, {-1, -2}, {3, -1}, {-4, 1}} {
		got, err := f.Call(f32(in...))
		if err != nil {
			t.Fatal(err)
		}
		eq32(t, fmt.Sprint(in), got[0], fn([]T{f32(in...)})[0])
	}
}
