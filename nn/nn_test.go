package nn

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/internal/approx"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

func f64(t *tensor.Tensor) []float64 { return tensor.ToSlice[float64](t) }

func TestDenseAndSequentialByHand(t *testing.T) {
	d := NewDense("d", tensor.NewRNG(1), 2, 2, DenseOpts{DType: tensor.Float64, Activation: ops.Relu})
	d.Kernel.Assign(tensor.FromSlice([]float64{1, -1, 2, 0.5}, 2, 2))
	d.Bias.Assign(tensor.FromSlice([]float64{0.5, -3}))
	// [1 2]·[[1 -1] [2 .5]] = [5 0], + [.5 -3] = [5.5 -3], relu -> [5.5 0].
	y := d.Forward(tensor.FromSlice([]float64{1, 2}, 1, 2))
	if diff := approx.Diff(f64(y), []float64{5.5, 0}, 0); diff != "" {
		t.Error(diff)
	}
	seq := NewSequential(d, Flatten{}, Activation(ops.Neg))
	if diff := approx.Diff(f64(seq.Forward(tensor.FromSlice([]float64{1, 2}, 1, 2))), []float64{-5.5, 0}, 0); diff != "" {
		t.Error(diff)
	}
	if len(seq.Variables()) != 2 || seq.Variables()[0].Name() != "d/kernel" {
		t.Errorf("variables %v", seq.Variables())
	}
	x3 := tensor.FromSlice([]float64{1, 2, 3, 4}, 2, 1, 2) // rank 3 input
	if got := d.Forward(x3).Shape(); !got.Equal(tensor.Shape{2, 1, 2}) {
		t.Errorf("rank-3 dense shape %v", got)
	}
}

// A layer (or a recurrent cell) given an input of the wrong width names
// its kind, the size it takes and where, instead of the op inside it (a
// Sequential adds the layer's name); a Conv2D whose input has the
// channels where the other layout keeps them says so.
func TestLayersNameAWrongInputWidth(t *testing.T) {
	rng := tensor.NewRNG(1)
	nchw := Conv2DOpts{Conv2DOpts: ops.Conv2DOpts{Format: ops.NCHW}}
	for _, c := range []struct {
		name string
		f    func()
		want string
	}{
		{"Dense", func() { NewDense("hidden", rng, 3, 4, DenseOpts{}).Forward(tensor.Zeros(tensor.Float32, 2, 2)) },
			`nn: Dense: the layer takes 3 input features in dimension -1; the input [2 2] has 2`},
		{"Dense of a scalar", func() { NewDense("hidden", rng, 3, 4, DenseOpts{}).Forward(tensor.Scalar(float32(1))) },
			`the layer takes 3 input features in dimension -1; the input [] has no such dimension`},
		{"Conv2D of NCHW data", func() {
			NewConv2D("conv1", rng, 3, 3, 1, 8, Conv2DOpts{}).Forward(tensor.Zeros(tensor.Float32, 2, 1, 28, 28))
		},
			`nn: Conv2D: the layer takes 1 input channels (NHWC) in dimension 3; the input [2 1 28 28] has 28 (is it NCHW? Conv2DOpts.Format says NHWC)`},
		{"Conv2D NCHW", func() { NewConv2D("conv2", rng, 3, 3, 8, 8, nchw).Forward(tensor.Zeros(tensor.Float32, 2, 3, 28, 28)) },
			`the layer takes 8 input channels (NCHW) in dimension 1; the input [2 3 28 28] has 3 (inputs`},
		{"an RNN's LSTM cell", func() {
			(&RNN{Cell: NewLSTMCell("lstm", rng, 3, 4, tensor.Float32)}).Forward(tensor.Zeros(tensor.Float32, 2, 5, 4))
		},
			`nn: LSTMCell: the layer takes 3 input features in dimension -1; the input [2 5 4] has 4`},
		{"attention", func() {
			NewMultiHeadAttention("att", rng, 8, 2, MultiHeadAttentionOpts{}).Forward(tensor.Zeros(tensor.Float32, 2, 5, 6))
		},
			`nn: MultiHeadAttention: the layer takes 8 features in dimension -1; the input [2 5 6] has 6`},
		{"Conv1D", func() { NewConv1D("c", rng, 3, 4, 8, Conv1DOpts{}).Forward(tensor.Zeros(tensor.Float32, 2, 4, 10)) },
			`nn: Conv1D: the layer takes 4 input channels ([N L C]) in dimension 2; the input [2 4 10] has 10`},
		{"Conv1D of images", func() { NewConv1D("c", rng, 3, 4, 8, Conv1DOpts{}).Forward(tensor.Zeros(tensor.Float32, 2, 4, 10, 4)) },
			`nn: Conv1D: x must be a batch of sequences, [N L C], got [2 4 10 4]`},
		{"Conv2DTranspose", func() {
			NewConv2DTranspose("t", rng, 3, 3, 4, 8, Conv2DTransposeOpts{}).Forward(tensor.Zeros(tensor.Float32, 2, 5, 5, 8))
		},
			`nn: Conv2DTranspose: the layer takes 4 input channels (NHWC) in dimension 3; the input [2 5 5 8] has 8`},
		{"DepthwiseConv2D", func() {
			NewDepthwiseConv2D("d", rng, 3, 3, 4, 2, Conv2DOpts{}).Forward(tensor.Zeros(tensor.Float32, 2, 5, 5, 8))
		},
			`nn: DepthwiseConv2D: the layer takes 4 input channels (NHWC) in dimension 3; the input [2 5 5 8] has 8`},
		{"a GRU cell", func() { NewGRUCell("gru", rng, 3, 4, tensor.Float32).Step(tensor.Zeros(tensor.Float32, 2, 5), nil) },
			`nn: GRUCell: the layer takes 3 input features in dimension -1; the input [2 5] has 5`},
	} {
		if err := tensor.Catch(c.f); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

func TestInitializers(t *testing.T) {
	rng := tensor.NewRNG(3)
	g := tensor.ToSlice[float32](GlorotUniform(rng, tensor.Float32, 100, 50))
	l := math.Sqrt(6.0 / 150)
	for _, v := range g {
		if math.Abs(float64(v)) > l {
			t.Fatalf("glorot value %v beyond %v", v, l)
		}
	}
	h := f64(HeNormal(rng, tensor.Float64, 400, 200))
	varh := 0.0
	for _, v := range h {
		varh += v * v
	}
	if varh /= float64(len(h)); math.Abs(varh-2.0/400) > 0.0005 {
		t.Errorf("He variance %v, want %v", varh, 2.0/400)
	}
	q := Orthogonal(rng, tensor.Float64, 6, 4) // columns orthonormal
	qtq := f64(ops.MatMulT(q, q, true, false))
	for i := 0; i < 4; i++ {
		for j := 0; j < 4; j++ {
			want := 0.0
			if i == j {
				want = 1
			}
			if math.Abs(qtq[i*4+j]-want) > 1e-12 {
				t.Fatalf("QᵀQ[%d,%d] = %v", i, j, qtq[i*4+j])
			}
		}
	}
	if a, b := f64(GlorotNormal(tensor.NewRNG(9), tensor.Float64, 3, 3)), f64(GlorotNormal(tensor.NewRNG(9), tensor.Float64, 3, 3)); approx.Diff(a, b, 0) != "" {
		t.Error("the same seed gave different weights")
	}
}

// RandomNormal and TruncatedNormal: their moments (a normal truncated at
// ±2σ has standard deviation 0.8796σ), TruncatedNormal's bounds, the same
// values from the same seed, every float dtype, empty shapes, and bad
// parameters refused.
func TestNormalInitializers(t *testing.T) {
	const mean, sd, n = 0.5, 0.02, 200000
	moments := func(v []float64) (m, s float64) {
		for _, x := range v {
			m += x
		}
		m /= float64(len(v))
		for _, x := range v {
			s += (x - m) * (x - m)
		}
		return m, math.Sqrt(s / float64(len(v)))
	}
	tr := f64(TruncatedNormal(mean, sd)(tensor.NewRNG(4), tensor.Float64, n))
	for _, v := range tr {
		if math.Abs(v-mean) > 2*sd+1e-15 {
			t.Fatalf("truncated value %v beyond mean ± 2σ", v)
		}
	}
	if m, s := moments(tr); math.Abs(m-mean) > 1e-4 || math.Abs(s/sd-0.8796) > 0.005 {
		t.Errorf("truncated: mean %v, std %v·σ; want %v, 0.8796·σ", m, s/sd, mean)
	}
	if m, s := moments(f64(RandomNormal(mean, sd)(tensor.NewRNG(4), tensor.Float64, n))); math.Abs(m-mean) > 1e-4 || math.Abs(s/sd-1) > 0.005 {
		t.Errorf("normal: mean %v, std %v·σ; want %v, σ", m, s/sd, mean)
	}
	a, b := TruncatedNormal(0, 1)(tensor.NewRNG(8), tensor.Float32, 50, 7), TruncatedNormal(0, 1)(tensor.NewRNG(8), tensor.Float32, 50, 7)
	if approx.Diff(f64(ops.Cast(a, tensor.Float64)), f64(ops.Cast(b, tensor.Float64)), 0) != "" || a.DType() != tensor.Float32 || !a.Shape().Equal(tensor.Shape{50, 7}) {
		t.Error("the same seed gave different weights, or the dtype or shape differs")
	}
	for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		if w := TruncatedNormal(0, 1)(tensor.NewRNG(1), dt, 3, 4); w.DType() != dt {
			t.Errorf("%v: got %v", dt, w.DType())
		}
	}
	if w := TruncatedNormal(0, 1)(tensor.NewRNG(1), tensor.Float32, 0, 3); w.NumElements() != 0 {
		t.Error("an empty shape gave elements")
	}
	if z := f64(TruncatedNormal(3, 0)(tensor.NewRNG(1), tensor.Float64, 4)); approx.Diff(z, []float64{3, 3, 3, 3}, 0) != "" {
		t.Errorf("stddev 0: %v", z)
	}
	for _, bad := range [][2]float64{{0, -1}, {0, math.NaN()}, {0, math.Inf(1)}, {math.Inf(-1), 1}} {
		var te *tensor.Error
		if err := tensor.Catch(func() { TruncatedNormal(bad[0], bad[1]) }); !errors.As(err, &te) {
			t.Errorf("TruncatedNormal(%v, %v): %v, want a *tensor.Error", bad[0], bad[1], err)
		}
		if err := tensor.Catch(func() { RandomNormal(bad[0], bad[1]) }); !errors.As(err, &te) {
			t.Errorf("RandomNormal(%v, %v): %v, want a *tensor.Error", bad[0], bad[1], err)
		}
	}
}

// Each layer's gradient against finite differences, in float64.
func TestLayerGradients(t *testing.T) {
	rng := tensor.NewRNG(5)
	dense := NewDense("d", rng, 3, 4, DenseOpts{DType: tensor.Float64, Activation: ops.Tanh})
	conv := NewConv2D("c", rng, 2, 2, 2, 3, Conv2DOpts{DType: tensor.Float64, Conv2DOpts: ops.Conv2DOpts{Padding: ops.Same}})
	bn := NewBatchNorm("bn", 3, tensor.Float64)
	ln := NewLayerNorm("ln", 3, tensor.Float64)
	lstm := &RNN{Cell: NewLSTMCell("lstm", rng, 3, 4, tensor.Float64)}
	gru := &RNN{Cell: NewGRUCell("gru", rng, 3, 2, tensor.Float64), ReturnSequences: true}
	emb := NewEmbedding("e", rng, 5, 3, tensor.Float64)
	r2 := tensor.NewRNG(6) // the later layers' own: the draws above stay as they were
	conv1d := NewConv1D("c1", r2, 3, 2, 3, Conv1DOpts{DType: tensor.Float64, Causal: true, Dilation: 2, Activation: ops.Tanh})
	tconv := NewConv2DTranspose("ct", r2, 3, 2, 2, 3, Conv2DTransposeOpts{Conv2DOpts: Conv2DOpts{DType: tensor.Float64,
		Conv2DOpts: ops.Conv2DOpts{Strides: [2]int{2, 2}}}, OutputPadding: [2]int{1, 0}})
	depthwise := NewDepthwiseConv2D("dw", r2, 2, 2, 2, 2, Conv2DOpts{DType: tensor.Float64, Conv2DOpts: ops.Conv2DOpts{Padding: ops.Same, Strides: [2]int{2, 1}}})
	cases := []struct {
		name string
		m    Module
		x    *tensor.Tensor
	}{
		{"Dense", dense, tensor.RandNormal(rng, tensor.Float64, 2, 3)},
		{"Conv2D", conv, tensor.RandNormal(rng, tensor.Float64, 1, 3, 3, 2)},
		{"BatchNorm", bn, tensor.RandNormal(rng, tensor.Float64, 4, 3)},
		{"LayerNorm", ln, tensor.RandNormal(rng, tensor.Float64, 2, 3)},
		{"LSTM", lstm, tensor.RandNormal(rng, tensor.Float64, 2, 4, 3)},
		{"GRU", gru, tensor.RandNormal(rng, tensor.Float64, 2, 3, 3)},
		{"Conv1D", conv1d, tensor.RandNormal(r2, tensor.Float64, 2, 5, 2)},
		{"Conv2DTranspose", tconv, tensor.RandNormal(r2, tensor.Float64, 1, 2, 3, 2)},
		{"DepthwiseConv2D", depthwise, tensor.RandNormal(r2, tensor.Float64, 1, 3, 3, 2)},
	}
	for _, c := range cases {
		// The checker differentiates with respect to the variables' own
		// tensors (Values) and, for finite differences, writes each perturbed
		// copy into the variables.
		in := append([]*tensor.Tensor{c.x}, Values(c.m.Variables())...)
		saved := make([]*tensor.Tensor, len(in)-1)
		for i, v := range in[1:] {
			saved[i] = ops.Identity(v) // a snapshot: Identity copies variables
		}
		r := tape.CheckGradient(func(xs []*tensor.Tensor) *tensor.Tensor {
			for i, v := range c.m.Variables() {
				v.Assign(xs[i+1])
			}
			return c.m.Forward(xs[0])
		}, in, 0)
		for i, v := range c.m.Variables() {
			v.Assign(saved[i])
		}
		if r.MaxError > 1e-6 {
			t.Errorf("%s: %s", c.name, r)
		}
	}
	r := tape.CheckGradient(func(xs []*tensor.Tensor) *tensor.Tensor {
		emb.Table.Assign(xs[0])
		return emb.Forward(tensor.FromSlice([]int32{4, 0, 4}))
	}, []*tensor.Tensor{emb.Table.Value().Contiguous()}, 0)
	if r.MaxError > 1e-6 {
		t.Errorf("Embedding: %s", r)
	}
}

func TestBatchNormModes(t *testing.T) {
	bn := NewBatchNorm("bn", 2, tensor.Float64)
	x := tensor.FromSlice([]float64{1, 10, 3, 20}, 2, 2)
	y := f64(bn.Forward(x)) // batch statistics: means [2 15], variances [1 25]
	want := []float64{-1 / math.Sqrt(1+1e-3), -5 / math.Sqrt(25+1e-3), 1 / math.Sqrt(1+1e-3), 5 / math.Sqrt(25+1e-3)}
	if d := approx.Diff(y, want, 1e-12); d != "" {
		t.Error(d)
	}
	if d := approx.Diff(f64(bn.RunningMean.Value()), []float64{0.02, 0.15}, 1e-12); d != "" {
		t.Error("running mean:", d)
	}
	SetTraining(bn, false)
	got := f64(bn.Forward(x)) // running stats: mean .02/.15, var .99+.01
	if d := approx.Diff(got[:1], []float64{(1 - 0.02) / math.Sqrt(0.99*1+0.01*1+1e-3)}, 1e-12); d != "" {
		t.Error("inference:", d)
	}
	drop := NewDropout(0.5, tensor.NewRNG(1))
	ones := tensor.Ones(tensor.Float64, 100)
	SetTraining(drop, false)
	if drop.Forward(ones) != ones {
		t.Error("dropout in inference must pass the input through")
	}
}

func TestOptimizersFollowTheirRules(t *testing.T) {
	g := tensor.FromSlice([]float64{0.5, -1})
	run := func(o Optimizer, steps int) []float64 {
		v := tape.NewVariable("w", tensor.FromSlice([]float64{1, 2}))
		for range steps {
			if err := o.Apply([]*tape.Variable{v}, []*tensor.Tensor{g}); err != nil {
				t.Fatal(err)
			}
		}
		return f64(v.Value())
	}
	// Hand-unrolled updates for w0 = 1, g0 = 0.5 over three steps.
	w, vel := 1.0, 0.0
	for range 3 {
		vel = 0.9*vel + 0.5
		w -= 0.1 * vel
	}
	if got := run(&SGD{LR: Constant(0.1), Momentum: 0.9}, 3)[0]; !approx.Close(got, w, 1e-12) {
		t.Errorf("momentum: %v, want %v", got, w)
	}
	w, vel = 1.0, 0.0
	for range 3 {
		vel = 0.9*vel + 0.5
		w -= 0.1 * (0.5 + 0.9*vel)
	}
	if got := run(&SGD{LR: Constant(0.1), Momentum: 0.9, Nesterov: true}, 3)[0]; !approx.Close(got, w, 1e-12) {
		t.Errorf("nesterov: %v, want %v", got, w)
	}
	w, m, s := 1.0, 0.0, 0.0
	for k := 1; k <= 3; k++ {
		m = 0.9*m + 0.1*0.5
		s = 0.999*s + 0.001*0.25
		mh, vh := m/(1-math.Pow(0.9, float64(k))), s/(1-math.Pow(0.999, float64(k)))
		w -= 0.01 * (mh/(math.Sqrt(vh)+1e-7) + 0.1*w)
	}
	if got := run(NewAdamW(Constant(0.01), 0.1), 3)[0]; !approx.Close(got, w, 1e-12) {
		t.Errorf("adamw: %v, want %v", got, w)
	}
	// With DecayMatrices, a vector (a bias) steps as Adam's, a matrix as
	// AdamW's; both in one call.
	adamW := NewAdamW(Constant(0.01), 0.1)
	adamW.Decays = DecayMatrices
	bias, kernel := tape.NewVariable("b", tensor.FromSlice([]float64{1, 2})), tape.NewVariable("k", tensor.FromSlice([]float64{1, 2}, 1, 2))
	plain := NewAdam(Constant(0.01))
	plain.Eps = adamW.Eps
	ref := tape.NewVariable("r", tensor.FromSlice([]float64{1, 2}))
	for range 3 {
		if err := adamW.Apply([]*tape.Variable{bias, kernel}, []*tensor.Tensor{g, ops.Reshape(g, 1, 2)}); err != nil {
			t.Fatal(err)
		}
		if err := plain.Apply([]*tape.Variable{ref}, []*tensor.Tensor{g}); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := f64(bias.Value()), f64(ref.Value()); !approx.Close(got[0], want[0], 1e-12) || !approx.Close(got[1], want[1], 1e-12) {
		t.Errorf("a bias under DecayMatrices: %v, want Adam's %v", got, want)
	}
	if got := f64(kernel.Value())[0]; !approx.Close(got, w, 1e-12) {
		t.Errorf("a kernel under DecayMatrices: %v, want AdamW's %v", got, w)
	}
	w, s = 1.0, 0.0
	for range 2 {
		s = 0.9*s + 0.1*0.25
		w -= 0.01 * 0.5 / (math.Sqrt(s) + 1e-7)
	}
	if got := run(NewRMSProp(Constant(0.01)), 2)[0]; !approx.Close(got, w, 1e-12) {
		t.Errorf("rmsprop: %v, want %v", got, w)
	}
	if err := (&SGD{LR: Constant(1)}).Apply([]*tape.Variable{tape.NewVariable("w", tensor.Zeros(tensor.Float64, 3))}, []*tensor.Tensor{g}); err == nil {
		t.Error("a gradient of the wrong shape was accepted")
	}
}

func TestSchedulesAndClipping(t *testing.T) {
	if got := StepDecay(1, 10, 0.5)(25); got != 0.25 {
		t.Errorf("step decay %v", got)
	}
	c := Cosine(1, 100, 0.1)
	if c(0) != 1 || !approx.Close(c(50), 0.55, 1e-12) || c(100) != 0.1 || c(500) != 0.1 {
		t.Errorf("cosine %v %v %v", c(0), c(50), c(100))
	}
	w := Warmup(Constant(2), 4)
	if w(0) != 0.5 || w(3) != 2 || w(10) != 2 {
		t.Errorf("warmup %v %v %v", w(0), w(3), w(10))
	}
	grads := []*tensor.Tensor{tensor.FromSlice([]float64{3}), nil, tensor.FromSlice([]float64{4})}
	clipped, norm := ClipByGlobalNorm(grads, 1)
	if norm != 5 || clipped[1] != nil || !approx.Close(clipped[0].Float(), 0.6, 1e-12) || !approx.Close(clipped[2].Float(), 0.8, 1e-12) {
		t.Errorf("clip: norm %v, %v", norm, clipped)
	}
}

// ClipByGlobalNormTensor clips as ClipByGlobalNorm does, its norm a
// tensor: over the bound each gradient scaled (to rounding), within it
// every value as it was; float32 and float64 gradients together (the norm
// in float64), the half types summed in float32; no gradient is an
// error.
func TestClipByGlobalNormTensor(t *testing.T) {
	r := tensor.NewRNG(3)
	grads := []*tensor.Tensor{tensor.RandNormal(r, tensor.Float32, 4, 3), nil, tensor.RandNormal(r, tensor.Float64, 5),
		ops.Cast(tensor.RandNormal(r, tensor.Float32, 6), tensor.BFloat16)}
	for _, bound := range []float64{0.5, 1e6} {
		want, wantNorm := ClipByGlobalNorm(grads, bound)
		got, norm := ClipByGlobalNormTensor(grads, bound)
		if norm.DType() != tensor.Float64 || !approx.Close(norm.Float(), wantNorm, 1e-6) {
			t.Errorf("bound %v: norm %v (%v), want %v", bound, norm.Float(), norm.DType(), wantNorm)
		}
		if got[1] != nil {
			t.Errorf("bound %v: a nil gradient came back as %v", bound, got[1])
		}
		for i, g := range got {
			if g == nil {
				continue
			}
			gv, wv := tensor.ToSlice[float64](ops.Cast(g, tensor.Float64)), tensor.ToSlice[float64](ops.Cast(want[i], tensor.Float64))
			for j := range gv {
				tol := 1e-6 // the scale rounded in the gradients' dtype
				switch {
				case bound > 1:
					tol = 0 // within the bound: multiplied by exactly 1
				case g.DType() == tensor.BFloat16:
					tol = 1e-2
				}
				if !approx.Close(gv[j], wv[j], tol) {
					t.Fatalf("bound %v: gradient %d element %d: %v, want %v", bound, i, j, gv[j], wv[j])
				}
			}
		}
	}
	for what, fn := range map[string]func(){
		"no gradient": func() { ClipByGlobalNormTensor([]*tensor.Tensor{nil}, 1) },
	} {
		if err := tensor.Catch(fn); err == nil {
			t.Errorf("%s: no error", what)
		}
	}
}

func TestLossesAndMetrics(t *testing.T) {
	p, q := tensor.FromSlice([]float64{1, 2}), tensor.FromSlice([]float64{0, 4})
	if got := MeanSquaredError(p, q).Float(); got != 2.5 {
		t.Errorf("mse %v", got)
	}
	x, z := tensor.FromSlice([]float64{-2, 0.5, 30}), tensor.FromSlice([]float64{0, 1, 1})
	want := 0.0
	for i, xv := range f64(x) {
		s := 1 / (1 + math.Exp(-xv))
		zv := f64(z)[i]
		want -= zv*math.Log(s) + (1-zv)*math.Log(1-s)
	}
	if got := BinaryCrossEntropyWithLogits(x, z).Float(); !approx.Close(got, want/3, 1e-12) {
		t.Errorf("bce %v, want %v", got, want/3)
	}
	// The losses refuse shapes that would broadcast ([4 1] against [4]
	// averaged 16 differences), naming themselves.
	col, row := tensor.Zeros(tensor.Float64, 4, 1), tensor.Zeros(tensor.Float64, 4)
	for name, fn := range map[string]func(){
		"MeanSquaredError":             func() { MeanSquaredError(col, row) },
		"BinaryCrossEntropyWithLogits": func() { BinaryCrossEntropyWithLogits(col, row) },
		"SoftmaxCrossEntropy":          func() { SoftmaxCrossEntropy(col, row) },
	} {
		if err := tensor.Catch(fn); !errors.Is(err, tensor.ErrShape) || !strings.HasPrefix(err.Error(), "nn: "+name+": ") {
			t.Errorf("%s of [4 1] and [4]: %v", name, err)
		}
	}
	if err := tensor.Catch(func() { Orthogonal(tensor.NewRNG(1), tensor.Float32, 3) }); !errors.Is(err, tensor.ErrRank) ||
		!strings.HasPrefix(err.Error(), "nn: Orthogonal: ") {
		t.Errorf("Orthogonal of a rank-1 shape: %v", err)
	}
	if z := Orthogonal(tensor.NewRNG(1), tensor.Float32, 0, 3); !z.Shape().Equal(tensor.Shape{0, 3}) {
		t.Errorf("Orthogonal of [0 3]: %v", z.Shape())
	}
	// The logistic loss's gradient is σ(x) - z, also at x = 0 exactly.
	x0 := tensor.FromSlice([]float64{0, 0})
	tp := tape.New()
	tp.Watch(x0)
	g := f64(tp.Gradient(BinaryCrossEntropyWithLogits(x0, tensor.FromSlice([]float64{1, 0})), x0)[0])
	if !approx.Close(g[0], -0.25, 1e-15) || !approx.Close(g[1], 0.25, 1e-15) {
		t.Errorf("bce gradient at 0: %v, want [-0.25 0.25]", g)
	}
	logits := tensor.FromSlice([]float64{1, 2, 0, 5, 0, 1}, 2, 3)
	if got := Accuracy(logits, tensor.FromSlice([]int32{1, 2})); got != 0.5 {
		t.Errorf("accuracy %v", got)
	}
	// Labels [N, 1] and one-hot rows mean the same; other shapes (which
	// broadcast against the predictions once) are refused.
	for _, c := range []struct {
		labels *tensor.Tensor
		want   float64
	}{
		{tensor.FromSlice([]int64{1, 0}, 2, 1), 1},
		{tensor.FromSlice([]float32{0, 0}, 2), 0.5},
		{tensor.FromSlice([]float64{0, 1, 0, 1, 0, 0}, 2, 3), 1},
		{tensor.FromSlice([]float64{0.2, 0.7, 0.1, 0.1, 0.1, 0.8}, 2, 3), 0.5},
	} {
		if got := Accuracy(logits, c.labels); got != c.want {
			t.Errorf("accuracy against %v: %v, want %v", c.labels, got, c.want)
		}
	}
	if err := tensor.Catch(func() { SoftmaxCrossEntropy(logits, tensor.FromSlice([]int32{1, 2})) }); err == nil ||
		!strings.Contains(err.Error(), "are class indices: SparseSoftmaxCrossEntropy takes those") {
		t.Errorf("SoftmaxCrossEntropy of class indices: %v", err)
	}
	if err := tensor.Catch(func() { SparseSoftmaxCrossEntropy(logits, tensor.FromSlice([]float32{0, 1, 0, 0, 0, 1}, 2, 3)) }); err == nil ||
		!strings.Contains(err.Error(), "look like one-hot rows: SoftmaxCrossEntropy takes those") {
		t.Errorf("SparseSoftmaxCrossEntropy of one-hot rows: %v", err)
	}
	column, flat := SparseSoftmaxCrossEntropy(logits, tensor.FromSlice([]int32{1, 2}, 2, 1)), SparseSoftmaxCrossEntropy(logits, tensor.FromSlice([]int32{1, 2}))
	if column.Float() != flat.Float() {
		t.Errorf("SparseSoftmaxCrossEntropy of labels [2 1]: %v, of [2]: %v", column, flat)
	}
	for _, bad := range []*tensor.Tensor{tensor.FromSlice([]int32{1, 2, 0}), tensor.FromSlice([]int32{1, 0, 0, 1}, 2, 2), tensor.Zeros(tensor.Int32, 2, 3)} {
		if err := tensor.Catch(func() { Accuracy(logits, bad) }); err == nil || !strings.Contains(err.Error(), "fit neither logits [2 3] as class indices [2] nor as one-hot rows") {
			t.Errorf("accuracy against %v: %v", bad.Shape(), err)
		}
	}
	var m Mean
	m.Add(1, 2)
	m.Add(4, 1)
	if m.Value() != 2 {
		t.Errorf("mean %v", m.Value())
	}
}

// A pooling layer's zero Size pools 2x2 windows (Keras's default), and
// says so when printed.
func TestPoolingLayersDefaultTo2x2(t *testing.T) {
	x := tensor.RandNormal(tensor.NewRNG(5), tensor.Float32, 2, 6, 4, 3)
	two := ops.PoolOpts{Size: [2]int{2, 2}}
	for _, c := range []struct {
		layer Module
		want  *tensor.Tensor
	}{
		{MaxPool2D{}, ops.MaxPool2D(x, two)},
		{AvgPool2D{}, ops.AvgPool2D(x, two)},
	} {
		got := c.layer.Forward(x)
		if !got.Shape().Equal(tensor.Shape{2, 3, 2, 3}) || !slices.Equal(tensor.ToSlice[float32](got), tensor.ToSlice[float32](c.want)) {
			t.Errorf("%v: %v, want %v", c.layer, got, c.want)
		}
		if s := fmt.Sprint(c.layer); !strings.Contains(s, "2x2") {
			t.Errorf("%T{} prints %q, want its 2x2 window", c.layer, s)
		}
	}
}

// NewSGD is SGD at its rate, plain: one step moves w by -lr·g.
func TestNewSGD(t *testing.T) {
	w := tape.NewVariable("w", tensor.FromSlice([]float64{1, 2}))
	o := NewSGD(Constant(0.5))
	if o.Momentum != 0 || o.Nesterov {
		t.Fatalf("NewSGD: %+v", o)
	}
	if err := o.Apply([]*tape.Variable{w}, []*tensor.Tensor{tensor.FromSlice([]float64{2, -2})}); err != nil {
		t.Fatal(err)
	}
	if got := tensor.ToSlice[float64](w.Value()); !slices.Equal(got, []float64{0, 3}) {
		t.Errorf("after a step: %v, want [0 3]", got)
	}
}

// The cross-entropies' options: token logits [N, T, C] against labels
// [N, T], ignored rows out of the sum and the count (a label outside the
// classes listed is no error; one not listed is, named), a batch of
// ignored rows only a loss of 0 and no gradient, label smoothing's
// closed form; bad options are refused when the Loss is made.
func TestCrossEntropyOptions(t *testing.T) {
	logits := tensor.FromSlice([]float64{1, 2, 0, 5, 0, 1, -1, 3, 2, 0.5, 0.5, 0}, 2, 2, 3)
	labels := tensor.FromSlice([]int32{1, -100, 2, 0}, 2, 2)
	rows := f64(ops.SparseSoftmaxCrossEntropy(ops.Reshape(logits, 4, 3), tensor.FromSlice([]int32{1, 0, 2, 0})))
	ignore := SparseSoftmaxCrossEntropyWith(CrossEntropyOpts{Ignore: []int{-100}})
	if got, want := ignore(logits, labels).Float(), (rows[0]+rows[2]+rows[3])/3; !approx.Close(got, want, 1e-15) {
		t.Errorf("ignoring -100: %v, want %v", got, want)
	}
	if got, want := SparseSoftmaxCrossEntropy(logits, tensor.FromSlice([]int32{1, 0, 2, 0}, 2, 2)).Float(), (rows[0]+rows[1]+rows[2]+rows[3])/4; !approx.Close(got, want, 1e-15) {
		t.Errorf("token logits [2 2 3]: %v, want %v", got, want)
	}
	if err := tensor.Catch(func() { SparseSoftmaxCrossEntropy(logits, labels) }); err == nil || !strings.Contains(err.Error(), "-100") {
		t.Errorf("a label of -100 not ignored: %v", err)
	}
	all := tensor.FromSlice([]int32{-100, -100, -100, -100}, 2, 2)
	tp := tape.New()
	tp.Watch(logits)
	l := ignore(logits, all)
	g := tp.Gradient(l, logits)[0]
	if l.Float() != 0 || f64(ops.Sum(ops.Abs(g)))[0] != 0 {
		t.Errorf("every row ignored: loss %v, gradient %v; want 0 and zeros", l.Float(), g)
	}
	// Smoothing ε: (1-ε)·CE + ε·(LSE - mean), row by row.
	flat := ops.Reshape(logits, 4, 3)
	lse, mean := f64(ops.LogSumExp(flat, 1)), f64(ops.Mean(flat, 1))
	smooth := SparseSoftmaxCrossEntropyWith(CrossEntropyOpts{LabelSmoothing: 0.3})
	want := 0.0
	for i := range rows {
		want += (0.7*rows[i] + 0.3*(lse[i]-mean[i])) / 4
	}
	if got := smooth(logits, tensor.FromSlice([]int32{1, 0, 2, 0}, 2, 2)).Float(); !approx.Close(got, want, 1e-14) {
		t.Errorf("smoothing 0.3: %v, want %v", got, want)
	}
	// The dense loss's smoothing is its labels' mixing with 1/C.
	probs := ops.Softmax(tensor.FromSlice([]float64{0.1, 2, -1, 0, 0, 3}, 2, 3), -1)
	mixed := ops.Add(ops.Mul(probs, tensor.Scalar(0.8)), tensor.Scalar(0.2/3))
	if got, want := SoftmaxCrossEntropyWith(CrossEntropyOpts{LabelSmoothing: 0.2})(ops.Reshape(flat, 2, 2, 3), ops.Reshape(ops.Concatenate(0, probs, probs), 2, 2, 3)).Float(),
		SoftmaxCrossEntropy(ops.Reshape(flat, 2, 2, 3), ops.Reshape(ops.Concatenate(0, mixed, mixed), 2, 2, 3)).Float(); !approx.Close(got, want, 1e-15) {
		t.Errorf("dense smoothing 0.2: %v, want %v", got, want)
	}
	for name, fn := range map[string]func(){
		"smoothing 1":            func() { SparseSoftmaxCrossEntropyWith(CrossEntropyOpts{LabelSmoothing: 1}) },
		"smoothing NaN":          func() { SoftmaxCrossEntropyWith(CrossEntropyOpts{LabelSmoothing: math.NaN()}) },
		"ignoring dense labels":  func() { SoftmaxCrossEntropyWith(CrossEntropyOpts{Ignore: []int{0}}) },
		"negative smoothing":     func() { SparseSoftmaxCrossEntropyWith(CrossEntropyOpts{LabelSmoothing: -0.1}) },
		"the loss of nil logits": func() { ignore(nil, labels) },
	} {
		if err := tensor.Catch(fn); err == nil || !strings.HasPrefix(err.Error(), "nn: ") {
			t.Errorf("%s: %v", name, err)
		}
	}
}
