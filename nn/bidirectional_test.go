package nn_test

import (
	"errors"
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Bidirectional's shapes, its description and bad inputs; a model of it
// trains the same traced as eagerly (its two Scans and the reversals in
// the graph).
func TestBidirectional(t *testing.T) {
	r := tensor.NewRNG(3)
	b := &nn.Bidirectional{FromStart: nn.NewLSTMCell("f", r, 3, 4, tensor.Float32), FromEnd: nn.NewGRUCell("b", r, 3, 2, tensor.Float32)}
	x := tensor.RandNormal(r, tensor.Float32, 2, 5, 3)
	if got := b.Forward(x).Shape(); !got.Equal(tensor.Shape{2, 6}) {
		t.Errorf("last outputs: %v, want [2 6]", got)
	}
	b.ReturnSequences = true
	if got := b.Forward(x).Shape(); !got.Equal(tensor.Shape{2, 5, 6}) {
		t.Errorf("sequences: %v, want [2 5 6]", got)
	}
	if got := b.Forward(tensor.Zeros(tensor.Float32, 2, 0, 3)).Shape(); !got.Equal(tensor.Shape{2, 0, 6}) {
		t.Errorf("sequences of no steps: %v, want [2 0 6]", got)
	}
	if got, want := nn.Describe(b), "Bidirectional: LSTMCell f: 3 -> 4, GRUCell b: 3 -> 2, sequences"; got != want {
		t.Errorf("Describe: %q, want %q", got, want)
	}
	if n := len(b.Variables()); n != 7 {
		t.Errorf("%d variables, want the LSTM's 3 and the GRU's 4", n)
	}
	for name, f := range map[string]func(){
		"a matrix": func() { b.Forward(tensor.Zeros(tensor.Float32, 2, 3)) },
		"no last output": func() {
			(&nn.Bidirectional{FromStart: b.FromStart, FromEnd: b.FromEnd}).Forward(tensor.Zeros(tensor.Float32, 2, 0, 3))
		},
		"no cell": func() { (&nn.Bidirectional{FromStart: b.FromStart}).Forward(x) },
	} {
		if err := tensor.Catch(f); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if err := tensor.Catch(func() { b.Forward(tensor.Zeros(tensor.Float32, 2, 5, 4)) }); !errors.Is(err, tensor.ErrShape) {
		t.Errorf("4 features for cells of 3: %v", err)
	}
	xs := tensor.RandNormal(r, tensor.Float32, 16, 6, 3)
	batch := data.Element{xs, ops.Cast(ops.Gt(ops.Sum(ops.Index(xs, ":", 0), -1), tensor.Scalar[float32](0)), tensor.Int32)}
	var vals [2][]float32
	for k, mk := range []func(nn.Module, nn.Loss, nn.Optimizer) nn.Step{nn.TrainStep, nn.TracedTrainStep} {
		r := tensor.NewRNG(7)
		model := nn.NewSequential(&nn.Bidirectional{FromStart: nn.NewLSTMCell("f", r, 3, 4, tensor.Float32), FromEnd: nn.NewLSTMCell("b", r, 3, 4, tensor.Float32)},
			nn.NewDense("out", r, 8, 2, nn.DenseOpts{}))
		step := mk(model, nn.SparseSoftmaxCrossEntropy, nn.NewAdam(nn.Constant(0.05)))
		for range 5 {
			if _, _, err := step(batch); err != nil {
				t.Fatal(err)
			}
		}
		for _, v := range model.Variables() {
			vals[k] = append(vals[k], tensor.ToSlice[float32](v.Value())...)
		}
	}
	for i := range vals[0] {
		if math.Abs(float64(vals[0][i]-vals[1][i])) > 1e-5 {
			t.Fatalf("element %d of the variables: eager %g, traced %g", i, vals[0][i], vals[1][i])
		}
	}
}
