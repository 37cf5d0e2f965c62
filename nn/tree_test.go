package nn_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// fashionModel is the Fashion-MNIST CNN of the README's first-hour user.
func fashionModel() *nn.Sequential {
	rng := tensor.NewRNG(1)
	same := nn.Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Padding: ops.Same}, Activation: ops.Relu}
	pool := nn.MaxPool2D{PoolOpts: ops.PoolOpts{Size: [2]int{2, 2}}}
	return nn.NewSequential(
		nn.NewConv2D("conv1", rng, 3, 3, 1, 32, same), pool,
		nn.NewConv2D("conv2", rng, 3, 3, 32, 64, same), pool,
		nn.Flatten{},
		nn.NewSequential(
			nn.NewDense("dense1", rng, 7*7*64, 128, nn.DenseOpts{Activation: ops.Relu}),
			nn.NewDropout(0.2, rng)),
		nn.NewDense("logits", rng, 128, 10, nn.DenseOpts{}))
}

func TestModelPrintsAsATree(t *testing.T) {
	got := fmt.Sprint(fashionModel())
	want := `Sequential: 7 layers, 421,642 parameters
├─ Conv2D conv1: 3x3, 1 -> 32, same, relu       320
├─ MaxPool2D: 2x2
├─ Conv2D conv2: 3x3, 32 -> 64, same, relu   18,496
├─ MaxPool2D: 2x2
├─ Flatten
├─ Sequential: 2 layers                     401,536
│  ├─ Dense dense1: 3136 -> 128, relu       401,536
│  └─ Dropout: rate 0.2
└─ Dense logits: 128 -> 10                    1,290`
	if got != want {
		t.Errorf("the model prints as\n%s\nwant\n%s", got, want)
	}
	if got := fmt.Sprint(nn.NewDense("d", tensor.NewRNG(1), 3, 2, nn.DenseOpts{NoBias: true})); got != "Dense d: 3 -> 2, no bias" {
		t.Errorf("a Dense prints as %q", got)
	}
}

func TestSummaryShapes(t *testing.T) {
	s, err := nn.Summarize(fashionModel(), tensor.Zeros(tensor.Float32, 128, 28, 28, 1))
	if err != nil {
		t.Fatal(err)
	}
	got := s.String()
	for _, want := range []string{
		"layer", "output shape", "parameters",
		"Conv2D conv1: 3x3, 1 -> 32, same, relu", "[128 28 28 32]", "320",
		"MaxPool2D: 2x2", "[128 7 7 64]",
		"  Dense dense1: 3136 -> 128, relu", "[128 128]",
		"Dense logits: 128 -> 10", "[128 10]",
		"input float32 [128 28 28 1]; 421,642 trainable parameters",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("summary lacks %q:\n%s", want, got)
		}
	}
	// The deprecated Summary is the same table.
	if text, err := nn.Summary(fashionModel(), tensor.Zeros(tensor.Float32, 128, 28, 28, 1)); err != nil || text != got {
		t.Fatalf("Summary: %v, differs from Summarize's String: %v", err, text != got)
	}
	// As data: rows in order, nested rows one level deeper, a nested
	// Sequential's own row without a shape.
	first, last := s.Layers[0], s.Layers[len(s.Layers)-1]
	if first.Depth != 0 || first.Params != 320 || !slices.Equal(first.Output, tensor.Shape{128, 28, 28, 32}) || last.Layer != "Dense logits: 128 -> 10" || s.Trainable != 421642 {
		t.Errorf("rows %+v ... %+v, trainable %d", first, last, s.Trainable)
	}
	nested := 0
	for _, l := range s.Layers {
		if l.Output == nil {
			nested++
		} else if strings.HasPrefix(l.Layer, "Dense dense1") && l.Depth != 1 {
			t.Errorf("dense1 at depth %d, want 1", l.Depth)
		}
	}
	if nested != 1 {
		t.Errorf("%d rows without a shape, want the nested Sequential's one", nested)
	}
	// A wrong input: the error names the layer.
	_, err = nn.Summarize(fashionModel(), tensor.Zeros(tensor.Float32, 2, 28, 28, 3))
	if err == nil || !strings.Contains(err.Error(), "conv1: ") {
		t.Errorf("summary of a wrong input: %v", err)
	}
}

func TestLayerErrorsNameTheLayer(t *testing.T) {
	m := fashionModel()
	err := tensor.Catch(func() { m.Forward(tensor.Zeros(tensor.Float32, 2, 28, 28, 2)) })
	var te *tensor.Error
	if !errors.As(err, &te) || !strings.Contains(err.Error(), "nn: conv1: Conv2D: the layer takes 1 input channels (NHWC) in dimension 3; the input [2 28 28 2] has 2") {
		t.Errorf("error %v, want one naming conv1", err)
	}
	// A layer without variables is named by position and kind; nested
	// Sequentials name their own layer once.
	bad := nn.NewSequential(nn.Flatten{}, nn.NewSequential(nn.Activation(ops.Relu), nn.NewDense("inner", tensor.NewRNG(1), 5, 2, nn.DenseOpts{})))
	err = tensor.Catch(func() { bad.Forward(tensor.Zeros(tensor.Float32, 2, 3)) })
	if err == nil || !strings.Contains(err.Error(), ": inner: Dense: the layer takes 5 input features") || strings.Count(err.Error(), "inner") != 1 {
		t.Errorf("nested error %v", err)
	}
	err = tensor.Catch(func() { nn.NewSequential(nn.Flatten{}).Forward(tensor.Scalar(float32(1))) })
	if err == nil || !strings.Contains(err.Error(), "layer 0 (Flatten): ") {
		t.Errorf("unnamed layer error %v", err)
	}
}
