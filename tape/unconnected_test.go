package tape_test

import (
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// A gradient asked for a tensor the tape never watched is nil; where the
// nil is first used, the error says why and what to do (issue 31), and
// UnconnectedZeros gives zeros instead (TensorFlow's
// unconnected_gradients=ZERO).
func TestUnwatchedSourceSaysWhy(t *testing.T) {
	x, w := tensor.FromSlice([]float64{1, 2}), tensor.FromSlice([]float64{3, 4})
	tp := tape.New()
	tp.Watch(x)
	g := tp.Gradient(ops.Sum(ops.Mul(x, w)), x, w)
	if g[0] == nil || g[1] != nil {
		t.Fatalf("gradients %v", g)
	}
	for name, use := range map[string]func(){
		"an op":  func() { ops.Sub(w, ops.Mul(g[1], ops.ScalarLike(w, 0.1))) },
		"Shape":  func() { _ = g[1].Shape() },
		"Item":   func() { g[1].Item() },
		"DType":  func() { g[1].DType() },
		"a sum":  func() { ops.Sum(g[1]) },
		"Dim(0)": func() { g[1].Dim(0) },
	} {
		err := tensor.Catch(use)
		if err == nil || !strings.Contains(err.Error(), "Tape.Watch") || !strings.Contains(err.Error(), "UnconnectedZeros") {
			t.Errorf("%s on the nil gradient: %v", name, err)
		}
	}
	zeros := tape.New(tape.Options{UnconnectedZeros: true})
	zeros.Watch(x)
	g = zeros.Gradient(ops.Sum(ops.Mul(x, w)), x, w)
	if g[1] == nil || tensor.ToSlice[float64](g[1])[0] != 0 || !g[1].Shape().Equal(w.Shape()) {
		t.Errorf("UnconnectedZeros: %v", g[1])
	}
}
