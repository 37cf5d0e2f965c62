package nn_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// The global poolings reduce each channel over the image in both
// layouts; UpSampling2D repeats each pixel into a block, its gradient
// the block's sum; images of another rank and factors below 1 are
// errors.
func TestResamplingLayers(t *testing.T) {
	x := ops.Reshape(tensor.Arange[float64](0, 2*2*3*2, 1), 2, 2, 3, 2) // NHWC
	if got := tensor.ToSlice[float64](nn.GlobalAvgPool2D{}.Forward(x)); !slices.Equal(got, []float64{5, 6, 17, 18}) {
		t.Errorf("GlobalAvgPool2D NHWC: %v", got)
	}
	if got := tensor.ToSlice[float64](nn.GlobalMaxPool2D{Format: ops.NCHW}.Forward(x)); !slices.Equal(got, []float64{5, 11, 17, 23}) {
		t.Errorf("GlobalMaxPool2D NCHW: %v", got)
	}
	img := ops.Reshape(tensor.FromSlice([]float64{1, 2, 3, 4}), 1, 2, 2, 1)
	up := nn.UpSampling2D{Size: [2]int{2, 3}}
	want := []float64{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}
	y := up.Forward(img)
	if got := tensor.ToSlice[float64](y); !y.Shape().Equal(tensor.Shape{1, 4, 6, 1}) || !slices.Equal(got, want) {
		t.Errorf("UpSampling2D 2x3: %v %v", y.Shape(), got)
	}
	nchw := ops.Transpose(img, 0, 3, 1, 2)
	if got := tensor.ToSlice[float64](nn.UpSampling2D{Size: [2]int{2, 3}, Format: ops.NCHW}.Forward(nchw)); !slices.Equal(got, want) {
		t.Errorf("UpSampling2D NCHW: %v", got)
	}
	tp := tape.New()
	tp.Watch(img)
	w := ops.Reshape(tensor.Arange[float64](0, 24, 1), 1, 4, 6, 1)
	g := tp.Gradient(ops.Sum(ops.Mul(up.Forward(img), w)), img)[0]
	// Each pixel's block of 2x3 weights summed: rows 0-1 and 2-3, columns 0-2 and 3-5.
	if got := tensor.ToSlice[float64](g); !slices.Equal(got, []float64{0 + 1 + 2 + 6 + 7 + 8, 3 + 4 + 5 + 9 + 10 + 11, 12 + 13 + 14 + 18 + 19 + 20, 15 + 16 + 17 + 21 + 22 + 23}) {
		t.Errorf("UpSampling2D's gradient: %v", got)
	}
	if got := nn.Describe(nn.UpSampling2D{Format: ops.NCHW}); got != "UpSampling2D: 2x2, NCHW" {
		t.Errorf("Describe: %q", got)
	}
	for name, f := range map[string]func(){
		"a pooled sequence":   func() { nn.GlobalAvgPool2D{}.Forward(tensor.Zeros(tensor.Float32, 2, 5, 3)) },
		"an upsampled matrix": func() { nn.UpSampling2D{}.Forward(tensor.Zeros(tensor.Float32, 2, 5)) },
		"a factor of -1":      func() { nn.UpSampling2D{Size: [2]int{-1, 2}}.Forward(img) },
		"nil":                 func() { nn.GlobalMaxPool2D{}.Forward(nil) },
	} {
		if err := tensor.Catch(f); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// Residual adds its input to its block's output and differentiates
// through both paths; SetTraining and TracedTrainStep reach a Dropout
// inside it; a block that changes the shape is a shape error.
func TestResidual(t *testing.T) {
	r := tensor.NewRNG(2)
	dense := nn.NewDense("d", r, 3, 3, nn.DenseOpts{DType: tensor.Float64})
	res := nn.Residual{Block: dense}
	x := tensor.RandNormal(r, tensor.Float64, 2, 3)
	tp := tape.New()
	tp.Watch(x)
	y := res.Forward(x)
	gx := tp.Gradient(ops.Sum(y), x)[0]
	// d/dx Σ(x + xW + b) = 1 + Σ_j W[i, j] for each row.
	rowSums := tensor.ToSlice[float64](ops.Sum(dense.Kernel.Value(), 1))
	for i, v := range tensor.ToSlice[float64](gx) {
		if want := 1 + rowSums[i%3]; v-want > 1e-12 || want-v > 1e-12 {
			t.Errorf("gradient element %d: %v, want %v", i, v, want)
		}
	}
	if err := tensor.Catch(func() { nn.Residual{Block: nn.NewDense("e", r, 3, 2, nn.DenseOpts{DType: tensor.Float64})}.Forward(x) }); !errors.Is(err, tensor.ErrShape) {
		t.Errorf("a block of another width: %v", err)
	}
	drop := nn.NewDropout(0.5, tensor.NewRNG(3))
	model := nn.NewSequential(nn.Residual{Block: nn.NewSequential(nn.NewDense("a", r, 4, 4, nn.DenseOpts{}), drop)}, nn.NewDense("o", r, 4, 2, nn.DenseOpts{}))
	nn.SetTraining(model, false)
	if drop.Training() {
		t.Error("SetTraining(false) did not reach the Dropout inside the residual")
	}
	nn.SetTraining(model, true)
	xs := tensor.RandNormal(r, tensor.Float32, 8, 4)
	batch := data.Element{xs, ops.Cast(ops.Gt(ops.Sum(xs, -1), tensor.Scalar[float32](0)), tensor.Int32)}
	step := nn.TracedTrainStep(model, nn.SparseSoftmaxCrossEntropy, nn.NewAdam(nn.Constant(0.01)))
	if _, _, err := step(batch); err != nil {
		t.Errorf("a traced step through a residual's dropout: %v", err)
	}
	if got := nn.Describe(res); got != "Residual: Dense d: 3 -> 3" {
		t.Errorf("Describe: %q", got)
	}
}

// twoTower is a model of one's own: two Dense layers on one input,
// summed; a Container.
type twoTower struct{ a, b *nn.Dense }

func (m twoTower) Forward(x *tensor.Tensor) *tensor.Tensor {
	return ops.Add(m.a.Forward(x), m.b.Forward(x))
}
func (m twoTower) Variables() []*tape.Variable {
	return append(m.a.Variables(), m.b.Variables()...)
}
func (m twoTower) Modules() []nn.Module { return []nn.Module{m.a, m.b} }

// Summarize lists the modules of a Container of one's own (and of a
// Residual inside a Sequential) under its row, with their parameters.
func TestSummarizeListsAContainersModules(t *testing.T) {
	r := tensor.NewRNG(3)
	m := nn.NewSequential(twoTower{nn.NewDense("a", r, 3, 4, nn.DenseOpts{}), nn.NewDense("b", r, 3, 4, nn.DenseOpts{})},
		nn.Residual{Block: nn.NewDense("c", r, 4, 4, nn.DenseOpts{})})
	s, err := nn.Summarize(m, tensor.Zeros(tensor.Float32, 2, 3))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range s.Layers {
		got = append(got, fmt.Sprint(l.Depth, " ", l.Layer, " ", l.Output, " ", l.Params))
	}
	want := []string{"0 nn_test.twoTower [2 4] 32", "1 Dense a: 3 -> 4 [] 16", "1 Dense b: 3 -> 4 [] 16",
		"0 Residual: Dense c: 4 -> 4 [2 4] 20", "1 Dense c: 4 -> 4 [] 20"}
	if !slices.Equal(got, want) {
		t.Errorf("rows %q, want %q", got, want)
	}
}
