package nn_test

import (
	"bytes"
	"errors"
	"math"
	"path/filepath"
	"testing"

	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// An AccumulatedOptimizer over Every calls takes Inner's step with the
// mean of their gradients (summed in order, then scaled, as ops would),
// bit for bit, and leaves the variables alone between; a variable with
// no gradient in a round is not stepped (its Adam moments stay), one
// with a gradient in some of its calls sums those.
func TestAccumulatedOptimizer(t *testing.T) {
	r := tensor.NewRNG(5)
	mk := func() []*tape.Variable {
		return []*tape.Variable{
			tape.NewVariable("w", tensor.FromSlice([]float32{1, -2, 3, 0.5}, 2, 2)),
			tape.NewVariable("b", tensor.FromSlice([]float32{0.1, 0.2})),
			tape.NewVariable("idle", tensor.FromSlice([]float32{7})),
		}
	}
	var rounds [][][]*tensor.Tensor // round, call, variable
	for range 2 {
		var calls [][]*tensor.Tensor
		for c := range 3 {
			g := []*tensor.Tensor{tensor.RandNormal(r, tensor.Float32, 2, 2), tensor.RandNormal(r, tensor.Float32, 2), nil}
			if c == 1 {
				g[1] = nil // b: no gradient in this call
			}
			calls = append(calls, g)
		}
		rounds = append(rounds, calls)
	}
	acc, ref := mk(), mk()
	opt := nn.NewAccumulatedOptimizer(nn.NewAdam(nn.Constant(0.01)), 3)
	adam := nn.NewAdam(nn.Constant(0.01))
	for k, calls := range rounds {
		for c, g := range calls {
			before := tensor.ToSlice[float32](acc[0].Value())
			if err := opt.Apply(acc, g); err != nil {
				t.Fatal(err)
			}
			if c < 2 {
				if got := tensor.ToSlice[float32](acc[0].Value()); got[0] != before[0] || opt.Pending() != c+1 {
					t.Fatalf("round %d, call %d: the variables moved (%v -> %v) or %d calls pending", k, c, before, got, opt.Pending())
				}
			}
		}
		means := make([]*tensor.Tensor, 3)
		for i := range 2 {
			var sum *tensor.Tensor
			for _, g := range calls {
				switch {
				case g[i] == nil:
				case sum == nil:
					sum = g[i]
				default:
					sum = ops.Add(sum, g[i])
				}
			}
			means[i] = ops.Mul(sum, tensor.Scalar(float32(1.0/3)))
		}
		if err := adam.Apply(ref, means); err != nil {
			t.Fatal(err)
		}
		for i, v := range acc {
			if !bytes.Equal(v.Value().HostBytes(), ref[i].Value().HostBytes()) {
				t.Errorf("round %d: %s is %v, the mean's step gives %v", k, v.Name(), v.Value(), ref[i].Value())
			}
		}
	}
	if opt.Steps() != 2 || opt.Pending() != 0 {
		t.Errorf("%d steps, %d calls pending; want 2 and 0", opt.Steps(), opt.Pending())
	}
	if got := tensor.ToSlice[float32](acc[2].Value()); got[0] != 7 {
		t.Errorf("a variable without gradients moved: %v", got)
	}
	for name, fn := range map[string]func(){
		"a nil inner":   func() { nn.NewAccumulatedOptimizer(nil, 2) },
		"every 0 calls": func() { nn.NewAccumulatedOptimizer(nn.NewAdam(nn.Constant(1)), 0) },
	} {
		if err := tensor.Catch(fn); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if err := opt.Apply(acc[:1], []*tensor.Tensor{tensor.Zeros(tensor.Float32, 3)}); err == nil || opt.Pending() != 0 {
		t.Errorf("a gradient of another shape: %v, %d calls pending", err, opt.Pending())
	}
}

// TrainStep over two halves of a batch through an AccumulatedOptimizer
// takes the step of the whole batch (a mean loss's gradient is the mean
// of the halves'), to float32's rounding; a checkpoint saved in the middle
// of a round (four micro-batches in turn, two a round) resumes it: the
// model, the optimizer's slots and sums, the count and the variables
// summed, so the resumed run takes the uninterrupted run's steps to the
// bit. Behind a LossScaleOptimizer in mixed float16, its state and the
// sums are saved alike.
func TestAccumulatedSteps(t *testing.T) {
	b := toyBatch()
	halves := []data.Element{
		{ops.Slice(b[0], []int{0, 0}, []int{32, 8}, nil), ops.Slice(b[1], []int{0}, []int{32}, nil)},
		{ops.Slice(b[0], []int{32, 0}, []int{64, 8}, nil), ops.Slice(b[1], []int{32}, []int{64}, nil)},
	}
	whole, halved := mlp(nn.Policy{}, &spy{}), mlp(nn.Policy{}, &spy{})
	wholeStep := nn.TrainStep(whole, nn.SparseSoftmaxCrossEntropy, nn.NewAdam(nn.Constant(0.01)))
	halfStep := nn.TrainStep(halved, nn.SparseSoftmaxCrossEntropy, nn.NewAccumulatedOptimizer(nn.NewAdam(nn.Constant(0.01)), 2))
	for range 3 {
		if _, _, err := wholeStep(b); err != nil {
			t.Fatal(err)
		}
		for _, h := range halves {
			if _, _, err := halfStep(h); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i, v := range whole.Variables() {
		w, h := tensor.ToSlice[float32](v.Value()), tensor.ToSlice[float32](halved.Variables()[i].Value())
		for j := range w {
			if math.Abs(float64(w[j]-h[j])) > 1e-5 {
				t.Fatalf("%s[%d]: %v from the whole batch, %v from its halves accumulated", v.Name(), j, w[j], h[j])
			}
		}
	}
	// Four micro-batches in turn, so that each round sums others.
	var quarters []data.Element
	for q := range 4 {
		quarters = append(quarters, data.Element{ops.Slice(b[0], []int{16 * q, 0}, []int{16*q + 16, 8}, nil), ops.Slice(b[1], []int{16 * q}, []int{16*q + 16}, nil)})
	}
	for _, p := range []nn.Policy{{}, nn.MixedFloat16} {
		make := func() (*nn.Sequential, nn.Optimizer) {
			var o nn.Optimizer = nn.NewAccumulatedOptimizer(nn.NewClippedOptimizer(nn.NewAdam(nn.Constant(0.01)), 0.5), 2)
			if p.Compute == tensor.Float16 {
				o = nn.NewLossScaleOptimizer(o)
			}
			return mlp(p, &spy{}), o
		}
		run := func(m *nn.Sequential, o nn.Optimizer, from, to int) {
			step := nn.TrainStep(m, nn.SparseSoftmaxCrossEntropy, o)
			for k := from; k < to; k++ {
				if _, _, err := step(quarters[k%4]); err != nil {
					t.Fatal(err)
				}
			}
		}
		m0, o0 := make()
		run(m0, o0, 0, 5)
		if ls, ok := o0.(*nn.LossScaleOptimizer); o0.Steps() != 2 || ok && ls.Skipped() > 0 {
			t.Fatalf("%v: %d steps in 5 calls (%T), want 2, none skipped", p.Compute, o0.Steps(), o0)
		}
		m1, o1 := make()
		run(m1, o1, 0, 3) // a round and a half
		path := filepath.Join(t.TempDir(), "ck.safetensors")
		if err := nn.SaveCheckpoint(path, m1.Variables(), o1, nil); err != nil {
			t.Fatal(err)
		}
		m2, o2 := make()
		if _, err := nn.RestoreCheckpoint(path, m2.Variables(), o2); err != nil {
			t.Fatal(err)
		}
		run(m2, o2, 3, 5)
		for i, v := range m0.Variables() {
			if !bytes.Equal(v.Value().HostBytes(), m2.Variables()[i].Value().HostBytes()) {
				t.Errorf("%v: %s after resuming mid-round differs from the uninterrupted run's", p.Compute, v.Name())
			}
		}
	}
	// A checkpoint's count beyond Every is refused, nothing restored.
	m, o := mlp(nn.Policy{}, &spy{}), nn.NewAccumulatedOptimizer(nn.NewAdam(nn.Constant(0.01)), 4)
	step := nn.TrainStep(m, nn.SparseSoftmaxCrossEntropy, o)
	for range 3 {
		if _, _, err := step(halves[0]); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "three.safetensors")
	if err := nn.SaveCheckpoint(path, m.Variables(), o, nil); err != nil {
		t.Fatal(err)
	}
	small := nn.NewAccumulatedOptimizer(nn.NewAdam(nn.Constant(0.01)), 2)
	if _, err := nn.RestoreCheckpoint(path, m.Variables(), small); !errors.Is(err, nn.ErrCheckpoint) {
		t.Errorf("a count of 3 into a round of 2: %v", err)
	}
}
