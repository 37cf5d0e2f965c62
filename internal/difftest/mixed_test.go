package difftest

import (
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// A classifier under nn.MixedBFloat16 (float32 variables, Dense layers in
// bfloat16, the loss in float32) has, to the bit, the loss and the
// variables' gradients (the loss to float32's rounding) of the same
// classifier under torch.autocast(bfloat16): where the casts are, what is rounded to
// bfloat16 and what is summed in float32 are the same. The only
// differences allowed are a bfloat16 rounding apart (2^-8 relative),
// where the two libraries add a product's terms in another order, in at
// most a tenth of the elements. The gradients a tape with HalfGradients
// gives (bfloat16, as nn.TrainStep hands them to Adam) are the same
// widened.
func TestMixedPrecisionGradientsAgainstTorch(t *testing.T) {
	needTorch(t)
	rng := tensor.NewRNG(95)
	for _, c := range []struct {
		kind  string
		x     *tensor.Tensor
		model func(r *tensor.RNG) []nn.Module
	}{
		{"mixed_mlp", tensor.RandNormal(rng, tensor.Float32, 64, 12), func(r *tensor.RNG) []nn.Module {
			return []nn.Module{nn.NewDense("hidden", r, 12, 48, nn.DenseOpts{Activation: ops.Relu}), nn.NewDense("logits", r, 48, 5, nn.DenseOpts{})}
		}},
		{"mixed_cnn", tensor.RandNormal(rng, tensor.Float32, 16, 6, 6, 3), func(r *tensor.RNG) []nn.Module {
			return []nn.Module{
				nn.NewConv2D("conv", r, 3, 3, 3, 8, nn.Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Padding: ops.Same, Format: ops.NHWC}, Activation: ops.Relu}),
				nn.MaxPool2D{}, nn.Flatten{},
				nn.NewDense("logits", r, 72, 5, nn.DenseOpts{})}
		}},
	} {
		y := ops.Cast(tensor.RandUniform(rng, tensor.Float64, 0, 5, c.x.Dim(0)), tensor.Int32)
		m := nn.NewSequential(c.model(tensor.NewRNG(96))...)
		m.Policy = nn.MixedBFloat16
		mixedGradientsMatch(t, c.kind, m, c.x, y)
	}
}

// mixedGradientsMatch compares m's loss and gradients on x, y with
// nn_torch.py's case kind (see TestMixedPrecisionGradientsAgainstTorch).
func mixedGradientsMatch(t *testing.T, kind string, m *nn.Sequential, x, y *tensor.Tensor) {
	c := layerCase{ID: 0, Kind: kind, X: encode(x), W: encode(y)}
	vars := m.Variables()
	for _, v := range vars {
		c.Names = append(c.Names, v.Name())
		c.Weights = append(c.Weights, encode(v.Value()))
	}
	want := runCases(t, "nn_torch.py", []layerCase{c}, func(r *layerResult) int { return r.ID })[0]
	if want == nil || len(want.Grads) != len(vars) {
		t.Fatalf("%s: PyTorch gave no or other gradients", kind)
	}
	for _, half := range []bool{false, true} {
		tp := tape.New(tape.Options{HalfGradients: half})
		loss := nn.SparseSoftmaxCrossEntropy(m.Forward(x), y)
		grads := tp.Gradient(loss, nn.Values(vars)...)
		if d := compareWithin(ops.Cast(loss, tensor.Float64), want.Out, 1e-6); d != "" { // a float32 mean of 64 terms
			t.Errorf("%s, the loss: %s", kind, d)
		}
		for i, g := range grads {
			if half && g.DType() != tensor.BFloat16 {
				t.Errorf("%s with HalfGradients, %s's gradient is %v", kind, vars[i].Name(), g.DType())
			}
			got := tensor.ToSlice[float64](ops.Cast(g, tensor.Float64))
			w, err := want.Grads[i].decode()
			if err != nil {
				t.Fatal(err)
			}
			apart := 0
			for j := range w {
				if got[j] == w[j] {
					continue
				}
				apart++
				if math.Abs(got[j]-w[j]) > math.Abs(w[j])/128 {
					t.Errorf("%s, half %v, %s[%d]: %g, PyTorch %g: more than a bfloat16 rounding apart", kind, half, vars[i].Name(), j, got[j], w[j])
				}
			}
			if apart > len(w)/10 {
				t.Errorf("%s, half %v, %s: %d of %d elements differ from PyTorch's", kind, half, vars[i].Name(), apart, len(w))
			}
			t.Logf("%s, half %v, %s: %d of %d elements a rounding from PyTorch's", kind, half, vars[i].Name(), apart, len(w))
		}
	}
}
