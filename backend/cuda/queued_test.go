package cuda

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/device"
	gpt "github.com/eagerflow/eagerflow/examples/gpt/model"
	"github.com/eagerflow/eagerflow/internal/benchmodels"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// An eager training step queues what its ops need and no more: on a
// GPU every call the host makes costs it a few microseconds, which is
// most of a small model's step, and every wait for the device a round
// trip. The counts are the emulator's (kernel launches, library calls,
// copies and fills, emu.Context.Queued; waits, Waits) for a warm step; a
// change that adds calls fails here and says how many.
func TestTrainStepQueuedCalls(t *testing.T) {
	d := testGPU(t)
	ctx, ok := d.ctx.(*emu.Context)
	if !ok {
		t.Skip("counts the emulator's calls")
	}
	cnn := func(f ops.DataFormat) func() (nn.Module, *tensor.Tensor, *tensor.Tensor) {
		return func() (nn.Module, *tensor.Tensor, *tensor.Tensor) { return smallCNN(f) }
	}
	gptBlock := func(compute tensor.DType) func() (nn.Module, *tensor.Tensor, *tensor.Tensor) {
		return func() (nn.Module, *tensor.Tensor, *tensor.Tensor) {
			c := gpt.Config{Layers: 1, Heads: 2, Dim: 16, Context: 8, Compute: compute}
			v := make([]int32, 2*c.Context)
			for i := range v {
				v[i] = int32(32 + (i*7+i/5)%90)
			}
			return gpt.New(tensor.NewRNG(1), c), tensor.FromSlice(v, 2, c.Context), tensor.FromSlice(append(v[1:], 32), 2, c.Context)
		}
	}
	for _, c := range []struct {
		name  string
		build func() (nn.Module, *tensor.Tensor, *tensor.Tensor)
		want  int
		opt   func(nn.Optimizer) nn.Optimizer // nil: Adam alone
	}{
		// Three GEMMs with their bias (and Relu) in the epilogue, a
		// Tanh; the loss and its mean; the mean's gradient (a division
		// and the broadcast's copy) and the loss's; per layer the
		// gradients' GEMMs (the weights' summing the bias's in its
		// epilogue: ops' FusedMatMulWeightsGrad, a column fold fewer),
		// the Relu's or Tanh's gradient; one Adam launch; the loss's read
		// and the label check's (no reset: nothing failed). No fill: the
		// scalars (the seed, the mean's count) are shared constants.
		{"MLP", smallMLP, 19, nil},
		// The same in mixed bfloat16: the input's cast, the output's and
		// its gradient's; the weights' casts kept from the last step
		// (Adam's launch writes them) and their gradients left in
		// bfloat16 for Adam to widen (tape.Options.HalfGradients).
		{"MLP mixed_bfloat16", func() (nn.Module, *tensor.Tensor, *tensor.Tensor) {
			model, x, y := smallMLP()
			model.(*nn.Sequential).Policy = nn.MixedBFloat16
			return model, x, y
		}, 22, nil},
		// In mixed float16 behind a LossScaleOptimizer: mixed bfloat16's
		// calls, the loss scaled (a product and its gradient's), the
		// finiteness check on the float16 gradients as they are (their
		// products by 0 a pass, the sum of squares, its fold and two
		// casts) and its read; the unscaling is Adam's launch's
		// (ops.AdamParams.GradScale), which writes the half copies too.
		{"MLP mixed_float16, scaled", func() (nn.Module, *tensor.Tensor, *tensor.Tensor) {
			model, x, y := smallMLP()
			model.(*nn.Sequential).Policy = nn.MixedFloat16
			return model, x, y
		}, 31, func(o nn.Optimizer) nn.Optimizer { return nn.NewLossScaleOptimizer(o) }},
		// cuDNN's first convolution (its filter permuted, its fused bias
		// and Relu one kernel, its bias gradient a column fold of two
		// launches: cuDNN's one call took 284 µs on an H200), the
		// strided SAME one by patches and GEMMs (cuDNN takes no uneven
		// padding; its gradients' patches zero-filled before the
		// scatter; its bias gradient in the filter GEMM's epilogue), max
		// and average pooling (their gradients a launch each: the kept
		// choices' unpooling, the windows' spread), the classifier, their
		// gradients, Adam, the reads. NCHW adds the filters' and patches'
		// permuted copies; its first layer's bias gradient folds rows,
		// then columns, reading the gradient once.
		{"NHWC CNN", cnn(ops.NHWC), 35, nil},
		{"NCHW CNN", cnn(ops.NCHW), 39, nil},
		// A BatchNorm after the first convolution, in mixed bfloat16:
		// the norm takes the half x with its float32 parameters (its
		// sums and elementwise passes on bfloat16, its statistics
		// float32), no casts around it (78 calls with them).
		{"NHWC CNN with BatchNorm, mixed_bfloat16", func() (nn.Module, *tensor.Tensor, *tensor.Tensor) {
			model, x, y, _ := normedCNN(ops.NHWC)
			model.(*nn.Sequential).Policy = nn.MixedBFloat16
			return model, x, y
		}, 72, nil},
		// examples/gpt's model, one block: no fill either (the tape's
		// zeros for the layer norms' statistics are shared constants), no
		// copy of the positions (kept on the GPU). The joint projection's
		// queries, keys and values become heads by one transposed copy
		// and one Split of three stretches, their gradients likewise
		// (11 calls fewer than a Split along the features and a copy of
		// each piece each way). The embeddings' gradients write their
		// zeros themselves (ScatterAddZeros: a fill each, no copy).
		{"GPT block", gptBlock(tensor.Invalid), 66, nil},
		// The same block in bfloat16 (the model's Compute): its three
		// norms take the half x with their float32 parameters, no casts
		// around them (104 calls with them); the weights' casts kept
		// from the last step, which Adam's launch wrote.
		{"GPT block, bfloat16", gptBlock(tensor.BFloat16), 74, nil},
		// Clipped to a global norm (nn.ClippedOptimizer, examples/gpt's
		// step): the half gradients' and the float32 ones' sums of
		// squares in float64 (a launch and a fold each), their sum, its
		// rounding and root, the factor (a maximum and a division), which
		// Adam's launch multiplies in: 9 calls more, where the float32
		// gradients' widening and clipping passes took 24.
		{"GPT block, bfloat16, clipped", gptBlock(tensor.BFloat16), 83, func(o nn.Optimizer) nn.Optimizer { return nn.NewClippedOptimizer(o, 1) }},
		// The charrnn LSTM (32 steps): the input's gate terms for the
		// whole sequence in one GEMM, every step in one launch of the
		// sequence kernel (ops.LSTMSequence) each way (the recurrent
		// kernel transposed for the backward's reads), the recurrent
		// kernel's gradient one GEMM over the steps' incoming states and
		// gate gradients; the embedding's gradient by sorted runs. A loop
		// of steps (a slice, a GEMM and the fused cell forward, the
		// cell's gradient, a GEMM and an add back, a step) queued 206.
		{"charrnn LSTM", func() (nn.Module, *tensor.Tensor, *tensor.Tensor) {
			model, _, x, y := benchmodels.CharLSTM(65)
			return model, x, y
		}, 30, nil},
		// Its layers in mixed bfloat16: the sequence kernels read and
		// write the half values (64 calls where they were cast around a
		// float32 kernel); the embedding's output and the logits cast
		// each way, the weights' casts kept from the last step.
		{"charrnn LSTM, mixed_bfloat16", func() (nn.Module, *tensor.Tensor, *tensor.Tensor) {
			r := tensor.NewRNG(6)
			m := nn.NewSequential(nn.NewEmbedding("e", r, 65, 16, tensor.Float32),
				&nn.RNN{Cell: nn.NewLSTMCell("l", r, 16, 96, tensor.Float32), ReturnSequences: true}, nn.NewDense("o", r, 96, 65, nn.DenseOpts{}))
			m.Policy = nn.MixedBFloat16
			ids := make([]int32, 16*32)
			for i := range ids {
				ids[i] = int32((i*7 + i/5) % 65)
			}
			return m, tensor.FromSlice(ids, 16, 32), tensor.FromSlice(ids, 16, 32)
		}, 37, nil},
	} {
		onDevice(d, func() {
			model, x, y := c.build()
			loss := nn.SparseSoftmaxCrossEntropy
			if strings.HasPrefix(c.name, "GPT block") {
				loss = gpt.Loss
			}
			var opt nn.Optimizer = nn.NewAdam(nn.Constant(0.01))
			wantWaits := 1
			if c.opt != nil {
				opt = c.opt(opt)
			}
			if _, scaled := opt.(*nn.LossScaleOptimizer); scaled {
				wantWaits = 2 // its finiteness check's read
			}
			step := nn.TrainStep(model, loss, opt)
			batch := data.Element{onGPU(t, d, x), onGPU(t, d, y)}
			for range 3 {
				if _, _, err := step(batch); err != nil {
					t.Fatal(err)
				}
			}
			// One wait: the loss's read, the labels' check read with it
			// (a LossScaleOptimizer's finiteness check is read before).
			// The count is the context's: the collector's release of a
			// recording an earlier test dropped waits too, whenever it
			// runs, so a step gets three tries at showing one wait.
			waited := 0
			for try := range 3 {
				before, waits, uploads := ctx.Queued, ctx.Waits, ctx.Uploads
				if _, _, err := step(batch); err != nil {
					t.Fatal(err)
				}
				if n := ctx.Queued - before; try == 0 && n != c.want {
					t.Errorf("%s: a step queued %d calls, want %d", c.name, n, c.want)
				}
				// Nothing computed on the host and copied over: the batch
				// is on the GPU already.
				if n := ctx.Uploads - uploads; try == 0 && n != 0 {
					t.Errorf("%s: a step copied %d times from host memory, want none", c.name, n)
				}
				if waited = ctx.Waits - waits; waited == wantWaits {
					break
				}
			}
			if waited != wantWaits {
				t.Errorf("%s: a step waited for the device %d times, want %d", c.name, waited, wantWaits)
			}
		})
	}
}

// ScalarLike off the host is a view of a shared constant: the same
// buffer for the same device, dtype and value (one fill, ever), a tensor
// of its own each call (a tape watching one sees nothing of the others;
// releasing one leaves the constant whole); while the device records, a
// fresh one (the recording's memory); on the host, fresh.
func TestScalarsAreSharedConstants(t *testing.T) {
	d := testGPU(t)
	x := onGPU(t, d, tensor.FromSlice([]float32{1, 2}, 2))
	a, b := ops.ScalarLike(x, 0.5), ops.ScalarLike(x, 0.5)
	if a == b || a.Buffer() != b.Buffer() {
		t.Error("two ScalarLike(x, 0.5): want two tensors over one buffer")
	}
	if c := ops.ScalarLike(x, -0.5); c.Buffer() == a.Buffer() {
		t.Error("ScalarLike of another value shares the buffer")
	}
	if c := ops.ScalarLike(ops.Cast(x, tensor.Float64), 0.5); c.Buffer() == a.Buffer() {
		t.Error("ScalarLike of another dtype shares the buffer")
	}
	if z := ops.ZerosLike(ops.Sum(x)); z.Buffer() != ops.ScalarLike(x, 0).Buffer() {
		t.Error("ZerosLike of a scalar is not the shared zero")
	}
	tp := tape.New()
	tp.Watch(a)
	y := ops.Mul(x, ops.ScalarLike(x, 0.5)) // the constant, not the watched tensor
	if g := tp.Gradient(ops.Sum(y), a)[0]; g != nil {
		t.Errorf("a tape watching one view took the gradient of another: %v", onHost(t, g))
	}
	a.Release()
	b.Release()
	if got := ops.ScalarLike(x, 0.5); onHost(t, got).Float() != 0.5 {
		t.Error("released views lost the constant")
	}
	var inCapture *tensor.Tensor
	rec, err := d.Capture(func() error { inCapture = ops.ScalarLike(x, 0.25); return nil })
	if err != nil {
		t.Fatal(err)
	}
	rec.Release()
	if inCapture.Buffer() == ops.ScalarLike(x, 0.25).Buffer() {
		t.Error("a scalar made while the device recorded was shared")
	}
	if h := tensor.FromSlice([]float32{1}, 1); ops.ScalarLike(h, 3).Buffer() == ops.ScalarLike(h, 3).Buffer() {
		t.Error("host scalars share a buffer")
	}
}

// A copy from the host does not wait for the device: its bytes are taken
// at once (the caller may overwrite its slice on return), the copy
// queued, and only the read after waits; past maxPending bytes of such
// copies, the next one waits first, which frees their blocks. The waits
// are the context's: the collector's release of a recording an earlier
// test dropped waits too, whenever it runs, so each count gets three
// tries (waitsOf).
func TestCopiesFromTheHostDoNotWait(t *testing.T) {
	d := testGPU(t)
	ctx, ok := d.ctx.(*emu.Context)
	if !ok {
		t.Skip("counts the emulator's waits")
	}
	buf, err := tensor.Empty(d, tensor.Float32, tensor.Shape{4})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Synchronize(); err != nil {
		t.Fatal(err)
	}
	if n := waitsOf(ctx, 0, func() {
		src := []byte{1, 2, 3, 4, 5, 6, 7, 8}
		for i := range 3 {
			if err := d.CopyFromHost(buf.Buffer(), 4*i, src); err != nil {
				t.Fatal(err)
			}
			src[0] += 10 // the next copy's bytes: the queued one has its own
		}
	}); n != 0 {
		t.Errorf("three copies from the host waited %d times", n)
	}
	got := make([]byte, 16)
	if n := waitsOf(ctx, 1, func() {
		if err := d.CopyToHost(got, buf.Buffer(), 0); err != nil {
			t.Fatal(err)
		}
	}); n != 1 {
		t.Errorf("the read after the copies waited %d times, want 1", n)
	}
	if want := []byte{1, 2, 3, 4, 11, 2, 3, 4, 21, 2, 3, 4, 5, 6, 7, 8}; string(got) != string(want) {
		t.Errorf("the copies left %v, want %v", got, want)
	}
	big, err := tensor.Empty(d, tensor.Uint8, tensor.Shape{maxPending / 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Synchronize(); err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, maxPending/2)
	if n := waitsOf(ctx, 2, func() {
		for range 3 {
			if err := d.CopyFromHost(big.Buffer(), 0, chunk); err != nil {
				t.Fatal(err)
			}
		}
		if err := d.Synchronize(); err != nil { // the next try starts as this one did
			t.Fatal(err)
		}
	}); n != 2 {
		t.Errorf("three copies of half maxPending and a wait waited %d times, want 2 (before the third, and the wait)", n)
	}
}

// waitsOf runs fn up to three times, until it waits for the emulated
// device want times, and returns the last count.
func waitsOf(ctx *emu.Context, want int, fn func()) int {
	n := 0
	for range 3 {
		before := ctx.Waits
		fn()
		if n = ctx.Waits - before; n == want {
			break
		}
	}
	return n
}

// An index check that found a bad index is reported at the next read and
// its slots are reset (only then: clean slots stay clean), so the checks
// after it report nothing.
func TestIndexChecksAfterAFailure(t *testing.T) {
	d := testGPU(t)
	x := onGPU(t, d, tensor.FromSlice([]float32{1, 2, 3}, 3))
	bad, good := onGPU(t, d, tensor.FromSlice([]int32{0, 7}, 2)), onGPU(t, d, tensor.FromSlice([]int32{2, 1}, 2))
	for round := range 2 {
		if _, err := ops.Gather(x, bad, 0).To(device.Host()); !errors.Is(err, tensor.ErrIndex) {
			t.Fatalf("round %d: a bad index read back: %v, want ErrIndex", round, err)
		}
		for i := range 3 {
			got := tensor.ToSlice[float32](onHost(t, ops.Gather(x, good, 0)))
			if !slices.Equal(got, []float32{3, 2}) {
				t.Errorf("round %d, read %d after the failure: %v", round, i, got)
			}
		}
	}
}
