package control_test

import (
	"testing"

	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// A program written against the names that moved to control/trace and
// control/graph still builds and runs (issue 31: it failed with
// "undefined: control.NewFunction").
func TestMovedNamesStillServe(t *testing.T) {
	var f *control.Function = control.NewFunction(func(a []T) []T { return []T{ops.Mul(a[0], a[0])} })
	out, err := f.Call(tensor.FromSlice([]float64{3}))
	if err != nil || tensor.ToSlice[float64](out[0])[0] != 9 {
		t.Fatalf("NewFunction's Call: %v %v", out, err)
	}
	var g *control.Graph = f.Graph(tensor.FromSlice([]float64{3}))
	res, err := control.Execute(g, tensor.FromSlice([]float64{4}))
	if err != nil || tensor.ToSlice[float64](res[0])[0] != 16 {
		t.Fatalf("Execute: %v %v", res, err)
	}
	sig := control.NewFunctionWithSignature(func(a []T) []T { return a }, control.InputSpec{DType: tensor.Float64, Shape: []int{-1}})
	if _, err := sig.Call(tensor.FromSlice([]float64{1, 2})); err != nil {
		t.Fatal(err)
	}
	var k control.NodeKind = control.Switch
	if k.String() != "Switch" || control.RetraceWarning <= 0 || control.ErrDeadOutput == nil {
		t.Errorf("forwarded constants: %v %v %v", k, control.RetraceWarning, control.ErrDeadOutput)
	}
}
