package ops_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

func TestKeepDims(t *testing.T) {
	x := tensor.FromSlice([]float64{1, 5, 3, 4, 2, 6}, 2, 3)
	for _, c := range []struct {
		name  string
		got   *tensor.Tensor
		shape tensor.Shape
		want  []float64
	}{
		{"Sum 1", ops.KeepDims(ops.Sum, x, 1), tensor.Shape{2, 1}, []float64{9, 12}},
		{"Sum -2", ops.KeepDims(ops.Sum, x, -2), tensor.Shape{1, 3}, []float64{5, 7, 9}},
		{"Mean all", ops.KeepDims(ops.Mean, x), tensor.Shape{1, 1}, []float64{3.5}},
		{"Amax 1", ops.KeepDims(ops.Amax, x, 1), tensor.Shape{2, 1}, []float64{5, 6}},
		{"Amin 0 1", ops.KeepDims(ops.Amin, x, 0, 1), tensor.Shape{1, 1}, []float64{1}},
		{"Prod 0", ops.KeepDims(ops.Prod, x, 0), tensor.Shape{1, 3}, []float64{4, 10, 18}},
		{"ArgMax -1", ops.Cast(ops.KeepDims(ops.ArgMax, x, -1), tensor.Float64), tensor.Shape{2, 1}, []float64{1, 2}},
		{"ArgMin 0", ops.Cast(ops.KeepDims(ops.ArgMin, x, 0), tensor.Float64), tensor.Shape{1, 3}, []float64{0, 1, 0}},
		{"Any 1", ops.Cast(ops.KeepDims(ops.Any, ops.Gt(x, ops.ScalarLike(x, 5)), 1), tensor.Float64), tensor.Shape{2, 1}, []float64{0, 1}},
		{"All 1", ops.Cast(ops.KeepDims(ops.All, ops.Gt(x, ops.ScalarLike(x, 0)), 1), tensor.Float64), tensor.Shape{2, 1}, []float64{1, 1}},
	} {
		if !c.got.Shape().Equal(c.shape) || !slices.Equal(tensor.ToSlice[float64](c.got), c.want) {
			t.Errorf("%s: %v, want %v %v", c.name, c.got, c.want, c.shape)
		}
	}
	// It broadcasts against x: x minus its row means.
	centred := ops.Sub(x, ops.KeepDims(ops.Mean, x, 1))
	if got := tensor.ToSlice[float64](centred); !slices.Equal(got, []float64{-2, 2, 0, -0, -2, 2}) {
		t.Errorf("centred rows: %v", got)
	}
	// Differentiable as the reduction is.
	res := tape.CheckGradient(func(in []*tensor.Tensor) *tensor.Tensor {
		return ops.Mul(ops.KeepDims(ops.Amax, in[0], 1), ops.KeepDims(ops.Mean, in[0], 0, 1))
	}, []*tensor.Tensor{tensor.FromSlice([]float64{0.3, -1.2, 0.8, 2.1, 0.5, -0.7}, 2, 3)}, 0)
	if res.MaxError > 1e-6 {
		t.Errorf("gradient: %v", res)
	}
	for name, fn := range map[string]func(){
		"ArgMax with two dims": func() { ops.KeepDims(ops.ArgMax, x, 0, 1) },
		"ArgMax with none":     func() { ops.KeepDims(ops.ArgMax, x) },
		"dim 2 of rank 2":      func() { ops.KeepDims(ops.Sum, x, 2) },
		"nil x":                func() { ops.KeepDims(ops.Sum, nil, 0) },
	} {
		err := tensor.Catch(fn)
		var te *tensor.Error
		if !errors.As(err, &te) || te.Op != "KeepDims" {
			t.Errorf("%s: %v, want an error of KeepDims", name, err)
		}
	}
}
