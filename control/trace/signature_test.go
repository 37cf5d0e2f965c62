package trace_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// A signature with an unknown batch dim: after three traces (two to learn
// how the graph follows the batch size, a third to confirm it), every
// other size gets its graph without running fn. The gradient of the mean
// has the batch size in BroadcastTo's shape and in a constant 1/(3B).
func TestSignatureUnknownBatch(t *testing.T) {
	rng := tensor.NewRNG(3)
	w := tape.NewVariable("w", tensor.RandNormal(rng, tensor.Float32, 4, 3))
	b := tape.NewVariable("b", tensor.RandNormal(rng, tensor.Float32, 3))
	fn := func(a []T) []T {
		tp := tape.New()
		h := ops.Tanh(ops.Add(ops.Mul(ops.Add(ops.MatMul(a[0], w.Value()), b.Value()), tensor.Scalar(float32(1.5))), tensor.Scalar(float32(0.25))))
		loss := ops.Mean(ops.Mul(h, h))
		g := tp.Gradient(loss, w.Value(), b.Value())
		return []T{h, loss, g[0], g[1]}
	}
	var logged []string
	f := trace.NewFunctionWithSignature(fn, trace.InputSpec{DType: tensor.Float32, Shape: []int{-1, 4}})
	f.Logf = func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
	var calls [][]T
	for _, n := range []int{2, 5, 1, 7, 2, 64} {
		calls = append(calls, []T{tensor.RandNormal(rng, tensor.Float32, n, 4)})
	}
	checkCalls(t, "batch", f, fn, calls, 1e-6)
	if f.Traces() != 3 || len(logged) != 0 {
		t.Errorf("%d traces (want 3), logged %q", f.Traces(), logged)
	}
}

// A size turned into a Go int and handed to Reshape follows the size by a
// rule (2B): rebuilt for new sizes, values right.
func TestSignatureSizeInAttribute(t *testing.T) {
	f := trace.NewFunctionWithSignature(func(a []T) []T {
		return []T{ops.Reshape(ops.Neg(a[0]), a[0].Dim(0)*2)}
	}, trace.InputSpec{DType: tensor.Float32, Shape: []int{-1, 2}})
	for _, n := range []int{1, 3, 4, 3, 10, 2} {
		x := tensor.RandNormal(tensor.NewRNG(uint64(n)), tensor.Float32, n, 2)
		got, err := f.Call(x)
		if err != nil {
			t.Fatal(err)
		}
		closeTo(t, fmt.Sprintf("batch %d", n), got[0], ops.Reshape(ops.Neg(x), 2*n), 0)
	}
	if f.Traces() != 3 {
		t.Errorf("%d traces, want 3", f.Traces())
	}
}

// Two unknown dims whose learning traces could not tell them apart: one
// never varied (so it looked like a constant), or both varied in
// proportion (so each looked like the other), or in inverse proportion
// (so a size looked like a constant's fraction of the other). Sizes that
// break what the traces showed are traced, logged once, never built from
// rules that do not reach them; sizes that keep it still are built. The
// numbers: B and T in a Reshape and in the gradient's shapes, and with a
// mean, 1/BT.
func TestSignatureSizesTheTracesDidNotTellApart(t *testing.T) {
	for _, c := range []struct {
		name   string
		mean   bool
		sizes  [][2]int
		traces int
	}{
		// T never varies while learning: [3 7] and [2 2] are traced, [5 5]
		// keeps T and is built.
		{"constant", true, [][2]int{{2, 5}, {3, 5}, {4, 5}, {3, 7}, {2, 2}, {5, 5}}, 5},
		// B = T while learning (square images): [6 6] is built, [2 7] traced.
		{"equal", false, [][2]int{{2, 2}, {3, 3}, {4, 4}, {6, 6}, {2, 7}}, 4},
		// B*T = 12 while learning: [6 2] is built, [3 7] traced.
		{"inverse", true, [][2]int{{2, 6}, {3, 4}, {4, 3}, {6, 2}, {3, 7}}, 4},
	} {
		fn := func(a []T) []T {
			tp := tape.New()
			tp.Watch(a[0])
			y := ops.Sum(ops.Reshape(ops.Square(a[0]), a[0].Dim(0), a[0].Dim(1), 1))
			if c.mean {
				y = ops.Mean(ops.Reshape(ops.Square(a[0]), a[0].Dim(0), a[0].Dim(1), 1))
			}
			return []T{y, tp.Gradient(y, a[0])[0]}
		}
		var logged []string
		f := trace.NewFunctionWithSignature(fn, trace.InputSpec{DType: tensor.Float32, Shape: []int{-1, -1}})
		f.Logf = func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
		var calls [][]T
		for i, s := range c.sizes {
			calls = append(calls, []T{tensor.RandNormal(tensor.NewRNG(uint64(i)), tensor.Float32, s[0], s[1])})
		}
		checkCalls(t, c.name, f, fn, calls, 1e-6)
		if f.Traces() != c.traces || len(logged) != 1 || !strings.Contains(logged[0], "outside what its traces") {
			t.Errorf("%s: %d traces (want %d), logged %q (want one note of sizes outside)", c.name, f.Traces(), c.traces, logged)
		}
	}
}

// Numbers that follow a product of sizes (a Reshape to B*T, a mean's
// 1/(B*T*4), the gradient's shapes) are rebuilt from rules too: three
// traces for any number of (B, T).
func TestSignatureProductsOfSizes(t *testing.T) {
	fn := func(a []T) []T {
		tp := tape.New()
		tp.Watch(a[0])
		flat := ops.Reshape(ops.Tanh(a[0]), a[0].Dim(0)*a[0].Dim(1), 4)
		loss := ops.Mean(ops.Square(flat))
		return []T{flat, loss, tp.Gradient(loss, a[0])[0]}
	}
	f := trace.NewFunctionWithSignature(fn, trace.InputSpec{DType: tensor.Float32, Shape: []int{-1, -1, 4}})
	var calls [][]T
	for i, s := range [][2]int{{2, 3}, {3, 5}, {4, 2}, {5, 7}, {1, 1}, {6, 6}, {2, 9}, {3, 5}} {
		calls = append(calls, []T{tensor.RandNormal(tensor.NewRNG(uint64(i)), tensor.Float32, s[0], s[1], 4)})
	}
	checkCalls(t, "products", f, fn, calls, 1e-6)
	if f.Traces() != 3 {
		t.Errorf("%d traces, want 3", f.Traces())
	}
}

// Numbers that follow the size by no rule (B*B), or by a rule the third
// size refutes: each size traces, and the reason is logged once.
func TestSignatureSizesNotFollowed(t *testing.T) {
	for _, c := range []struct {
		name  string
		scale func(n int) float32
		want  string
	}{
		{"square", func(n int) float32 { return float32(n * n) }, "no rule explains"},
		{"refuted", func(n int) float32 { return float32(n * (1 + n/4)) }, "does not follow the rules"},
	} {
		var logged []string
		f := trace.NewFunctionWithSignature(func(a []T) []T {
			return []T{ops.Mul(a[0], tensor.Scalar(c.scale(a[0].Dim(0))))}
		}, trace.InputSpec{DType: tensor.Float32, Shape: []int{-1}})
		f.Logf = func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
		for _, n := range []int{1, 3, 5, 6, 3} {
			x := tensor.Ones(tensor.Float32, n)
			got, err := f.Call(x)
			if err != nil {
				t.Fatal(err)
			}
			closeTo(t, fmt.Sprintf("%s: size %d", c.name, n), got[0], tensor.FullOf(tensor.Float32, float64(c.scale(n)), n), 0)
		}
		if f.Traces() != 4 || len(logged) != 1 || !strings.Contains(logged[0], c.want) {
			t.Errorf("%s: %d traces (want 4), logged %q", c.name, f.Traces(), logged)
		}
	}
}

func TestSignatureErrors(t *testing.T) {
	f := trace.NewFunctionWithSignature(func(a []T) []T { return a },
		trace.InputSpec{DType: tensor.Float32, Shape: []int{-1, 3}}, trace.InputSpec{DType: tensor.Int64, Shape: nil})
	for _, c := range []struct {
		args []T
		want string
	}{
		{[]T{tensor.Zeros(tensor.Float32, 2, 3)}, "takes 2 arguments (signature [float32[? 3] int64[]])"},
		{[]T{tensor.Zeros(tensor.Float64, 2, 3), tensor.Scalar(int64(1))}, "argument 0 is float64[2 3], the signature says float32[? 3]"},
		{[]T{tensor.Zeros(tensor.Float32, 2, 4), tensor.Scalar(int64(1))}, "the signature says float32[? 3] (dim 1)"},
		{[]T{tensor.Zeros(tensor.Float32, 3), tensor.Scalar(int64(1))}, "argument 0 is float32[3]"},
		{[]T{tensor.Zeros(tensor.Float32, 2, 3), tensor.Zeros(tensor.Int64, 1)}, "argument 1 is int64[1], the signature says int64[]"},
	} {
		if _, err := f.Call(c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want an error containing %q", c.args, err, c.want)
		}
	}
	if f.Traces() != 0 {
		t.Errorf("%d traces on bad arguments", f.Traces())
	}
}

// A traced RNN training step over sequences of any length: the loop bound
// is the sequence's length turned into a Go int, the gradients come from
// the loop frames and their stacks.
func TestSignatureSequenceLength(t *testing.T) {
	rng := tensor.NewRNG(11)
	w := tape.NewVariable("w", ops.Mul(tensor.RandNormal(rng, tensor.Float64, 4, 4), tensor.Scalar(0.5)))
	fn := func(a []T) []T {
		xs := a[0]
		steps := tensor.Scalar(int64(xs.Dim(0)))
		tp := tape.New()
		tp.Watch(xs)
		out := control.While(func(v []T) T { return ops.Lt(v[0], steps) },
			func(v []T) []T {
				x := ops.Reshape(ops.Gather(xs, v[0], 0), 1, 4)
				h := ops.Tanh(ops.Add(ops.MatMul(v[1], w.Value()), x))
				return []T{ops.Add(v[0], tensor.Scalar(int64(1))), h}
			}, []T{tensor.Scalar(int64(0)), tensor.Zeros(tensor.Float64, 1, 4)})
		loss := ops.Mean(ops.Mul(out[1], out[1]))
		g := tp.Gradient(loss, w.Value(), xs)
		return []T{loss, g[0], g[1]}
	}
	f := trace.NewFunctionWithSignature(fn, trace.InputSpec{DType: tensor.Float64, Shape: []int{-1, 4}})
	var calls [][]T
	for _, n := range []int{3, 6, 2, 5, 8, 1, 6} {
		calls = append(calls, []T{tensor.RandNormal(rng, tensor.Float64, n, 4)})
	}
	checkCalls(t, "length", f, fn, calls, 1e-12)
	if f.Traces() != 3 {
		t.Errorf("%d traces, want 3", f.Traces())
	}
}

// Models whose graphs follow one to three unknown sizes (a batch, a
// sequence's length, an image's height and width), called at sizes drawn
// at random: every call of the Function equals fn run eagerly (outputs,
// loss, every variable's gradient), whether it traced, was built from the
// rules, or was traced because the rules did not reach it.
func TestSignatureModelsMatchEager(t *testing.T) {
	rng := tensor.NewRNG(5)
	f32 := tensor.Float32
	conv := nn.NewSequential(nn.NewConv2D("c", rng, 3, 3, 2, 3, nn.Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Padding: ops.Same}, Activation: ops.Relu}),
		nn.NewLayerNorm("ln", 3, f32))
	for _, c := range []struct {
		name  string
		model nn.Module
		shape []int // -1 where the size varies
	}{
		{"mlp", nn.NewSequential(nn.NewDense("d1", rng, 6, 5, nn.DenseOpts{Activation: ops.Tanh}), nn.NewDense("d2", rng, 5, 3, nn.DenseOpts{})), []int{-1, 6}},
		{"transformer", nn.NewTransformerBlock("tb", rng, 8, 2, nn.MultiHeadAttentionOpts{Causal: true}), []int{-1, -1, 8}},
		{"lstm", &nn.RNN{Cell: nn.NewLSTMCell("lstm", rng, 4, 5, f32), ReturnSequences: true}, []int{-1, -1, 4}},
		{"conv", conv, []int{-1, -1, -1, 2}},
	} {
		vars := c.model.Variables()
		fn := func(a []T) []T {
			tp := tape.New()
			y := c.model.Forward(a[0])
			loss := ops.Mean(ops.Square(y))
			vals := make([]T, len(vars))
			for i, v := range vars {
				vals[i] = v.Value()
			}
			return append([]T{y, loss}, tp.Gradient(loss, vals...)...)
		}
		f := trace.NewFunctionWithSignature(fn, trace.InputSpec{DType: f32, Shape: c.shape})
		r := rand.New(rand.NewPCG(uint64(len(c.name)), 9))
		var calls [][]T
		for range 10 {
			shape := slices.Clone(c.shape)
			for d, n := range shape {
				if n < 0 {
					shape[d] = 1 + r.IntN(6)
				}
			}
			calls = append(calls, []T{tensor.RandNormal(rng, f32, shape...)})
		}
		checkCalls(t, c.name, f, fn, calls, 1e-5)
		t.Logf("%s: 10 calls, %d traces", c.name, f.Traces())
	}
}

// A number made from a size by a rule the traces cannot see (min(n, 4)
// agrees with n at sizes 1, 2 and 3): EAGERFLOW_DEBUG=sizes traces the
// next sizes too and says where the rules' graph differs; every call's
// result is fn's.
func TestSignatureCheckFindsSizesNoRuleFollows(t *testing.T) {
	t.Setenv("EAGERFLOW_DEBUG", "sizes")
	fn := func(a []T) []T {
		k := min(a[0].Dim(0), 4) // the first (at most) four rows
		return []T{ops.Sum(ops.Index(a[0], ops.Until(k)), 0)}
	}
	var logged []string
	f := trace.NewFunctionWithSignature(fn, trace.InputSpec{DType: tensor.Float32, Shape: []int{-1, 2}})
	f.Logf = func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
	var calls [][]T
	for i, n := range []int{1, 2, 3, 3, 6, 8, 6} {
		calls = append(calls, []T{tensor.RandNormal(tensor.NewRNG(uint64(i)), tensor.Float32, n, 2)})
	}
	checkCalls(t, "min", f, fn, calls, 0)
	if f.Traces() != 5 || len(logged) != 1 || !strings.Contains(logged[0], "at float32[6 2] the graph the rules build differs") {
		t.Errorf("%d traces (want 5), logged %q", f.Traces(), logged)
	}
}
