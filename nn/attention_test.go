package nn_test

import (
	"errors"
	"math"
	"testing"

	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// MultiHeadAttention equals its definition written out head by head:
// the joint projection, each head's softmax(q·kᵀ/√d)·v, the merge and the
// output projection; causal, a position sees nothing after it.
func TestMultiHeadAttention(t *testing.T) {
	r := tensor.NewRNG(3)
	const n, tt, c, h = 2, 5, 8, 2
	m := nn.NewMultiHeadAttention("attn", r, c, h, nn.MultiHeadAttentionOpts{DType: tensor.Float64, Causal: true})
	for _, v := range m.Variables() { // nonzero biases, so that they count
		v.Assign(tensor.RandUniform(r, tensor.Float64, -0.5, 0.5, v.Value().Shape()...))
	}
	x := tensor.RandNormal(r, tensor.Float64, n, tt, c)
	got := m.Forward(x)

	w, b := tensor.ToSlice[float64](m.In.Kernel.Value()), tensor.ToSlice[float64](m.In.Bias.Value())
	wo, bo := tensor.ToSlice[float64](m.Out.Kernel.Value()), tensor.ToSlice[float64](m.Out.Bias.Value())
	xs := tensor.ToSlice[float64](x)
	want := make([]float64, n*tt*c)
	d := c / h
	for bi := range n {
		qkv := make([][]float64, tt) // [t][3c]
		for p := range tt {
			qkv[p] = make([]float64, 3*c)
			for o := range 3 * c {
				s := b[o]
				for i := range c {
					s += xs[(bi*tt+p)*c+i] * w[i*3*c+o]
				}
				qkv[p][o] = s
			}
		}
		merged := make([][]float64, tt)
		for p := range tt {
			merged[p] = make([]float64, c)
			for hi := range h {
				scores := make([]float64, p+1) // causal: keys 0..p
				mx := math.Inf(-1)
				for j := range p + 1 {
					s := 0.0
					for e := range d {
						s += qkv[p][hi*d+e] * qkv[j][c+hi*d+e]
					}
					scores[j] = s / math.Sqrt(float64(d))
					mx = math.Max(mx, scores[j])
				}
				sum := 0.0
				for j := range scores {
					scores[j] = math.Exp(scores[j] - mx)
					sum += scores[j]
				}
				for e := range d {
					for j := range scores {
						merged[p][hi*d+e] += scores[j] / sum * qkv[j][2*c+hi*d+e]
					}
				}
			}
			for o := range c {
				s := bo[o]
				for i := range c {
					s += merged[p][i] * wo[i*c+o]
				}
				want[(bi*tt+p)*c+o] = s
			}
		}
	}
	diff(t, "output", got, tensor.FromSlice(want, n, tt, c), 1e-10)

	// The gradient reaches every variable.
	tp := tape.New()
	grads := tp.Gradient(ops.Sum(ops.Square(m.Forward(x))), nn.Values(m.Variables())...)
	for i, g := range grads {
		if g == nil || ops.Sum(ops.Abs(g)).Float() == 0 {
			t.Errorf("variable %s has no gradient", m.Variables()[i].Name())
		}
	}
	if s := m.String(); s != "MultiHeadAttention attn: 8 wide, 2 heads, causal" {
		t.Errorf("described as %q", s)
	}
}

func TestRMSNorm(t *testing.T) {
	x := tensor.FromSlice([]float32{3, 4, 0, -2}, 2, 2)
	rn := nn.NewRMSNorm("rms", 2, tensor.Float32)
	rn.Gamma.Assign(tensor.FromSlice([]float32{1, 2}))
	got := rn.Forward(x)
	rms := []float64{math.Sqrt(12.5 + 1e-6), math.Sqrt(2 + 1e-6)}
	want := tensor.FromSlice([]float32{float32(3 / rms[0]), float32(8 / rms[0]), 0, float32(-4 / rms[1])}, 2, 2)
	diff(t, "RMSNorm", got, want, 1e-6)
	if y := rn.Forward(ops.Cast(x, tensor.BFloat16)); y.DType() != tensor.BFloat16 {
		t.Errorf("a bfloat16 input gives %v", y.DType())
	}
}

// A small decoder (attention, a transformer block, RMSNorm, a dense
// layer) learns a sequence task, in float32 and in mixed bfloat16.
func TestAttentionModelLearns(t *testing.T) {
	for _, p := range []nn.Policy{{}, nn.MixedBFloat16} {
		r := tensor.NewRNG(7)
		m := nn.NewSequential(nn.NewDense("embed", r, 4, 16, nn.DenseOpts{}),
			nn.NewMultiHeadAttention("attn", r, 16, 4, nn.MultiHeadAttentionOpts{Causal: true}),
			nn.NewTransformerBlock("block", r, 16, 2, nn.MultiHeadAttentionOpts{Causal: true}),
			nn.NewRMSNorm("norm", 16, tensor.Float32), nn.NewDense("head", r, 16, 1, nn.DenseOpts{}))
		m.Policy = p
		// Predict at each position the running mean of the first feature.
		x := tensor.RandUniform(r, tensor.Float32, -1, 1, 8, 6, 4)
		xs := tensor.ToSlice[float32](x)
		y := make([]float32, 8*6)
		for b := range 8 {
			s := float32(0)
			for q := range 6 {
				s += xs[(b*6+q)*4]
				y[b*6+q] = s / float32(q+1)
			}
		}
		step := nn.TrainStep(m, nn.MeanSquaredError, nn.NewAdam(nn.Constant(0.01)))
		batch := data.Element{x, tensor.FromSlice(y, 8, 6, 1)}
		first, _, err := step(batch)
		if err != nil {
			t.Fatal(err)
		}
		var last float64
		for range 150 {
			if last, _, err = step(batch); err != nil {
				t.Fatal(err)
			}
		}
		if !(last < first/5) {
			t.Errorf("%v: loss %g -> %g", p, first, last)
		}
	}
}

// A block run over a sequence a few positions at a time with a KV cache
// gives what it gives over the sequence so far at once, causal or not.
func TestTransformerBlockKVCache(t *testing.T) {
	x := tensor.RandNormal(tensor.NewRNG(4), tensor.Float64, 2, 7, 8)
	for _, causal := range []bool{true, false} {
		b := nn.NewTransformerBlock("b", tensor.NewRNG(2), 8, 2, nn.MultiHeadAttentionOpts{DType: tensor.Float64, Causal: causal})
		var cache nn.KVCache
		at := 0
		for _, chunk := range []int{3, 1, 1, 2} {
			got := b.ForwardCached(ops.Slice(x, []int{0, at, 0}, []int{2, at + chunk, 8}, nil), &cache)
			at += chunk
			if cache.Len() != at {
				t.Fatalf("causal=%v: the cache holds %d positions after %d", causal, cache.Len(), at)
			}
			want := b.Forward(ops.Slice(x, []int{0, 0, 0}, []int{2, at, 8}, nil))
			diff(t, "cached", got, ops.Slice(want, []int{0, at - chunk, 0}, []int{2, at, 8}, nil), 1e-12)
		}
		err := tensor.Catch(func() { b.ForwardCached(tensor.Zeros(tensor.Float64, 3, 1, 8), &cache) })
		if !errors.Is(err, tensor.ErrShape) {
			t.Errorf("a cache of 2 sequences given 3: %v", err)
		}
	}
}

func TestMultiHeadAttentionBadInputs(t *testing.T) {
	err := tensor.Catch(func() { nn.NewMultiHeadAttention("a", tensor.NewRNG(1), 10, 3, nn.MultiHeadAttentionOpts{}) })
	if !errors.Is(err, tensor.ErrAttr) {
		t.Errorf("3 heads of 10: %v", err)
	}
	m := nn.NewMultiHeadAttention("a", tensor.NewRNG(1), 8, 2, nn.MultiHeadAttentionOpts{})
	if err := tensor.Catch(func() { m.Forward(tensor.Zeros(tensor.Float32, 2, 8)) }); !errors.Is(err, tensor.ErrRank) {
		t.Errorf("a matrix input: %v", err)
	}
}

// diff fails t where got and want (same shape) differ by more than tol
// times max(1, |want|) anywhere.
func diff(t *testing.T, what string, got, want *tensor.Tensor, tol float64) {
	t.Helper()
	if !got.Shape().Equal(want.Shape()) {
		t.Fatalf("%s: shape %v, want %v", what, got.Shape(), want.Shape())
	}
	g := tensor.ToSlice[float64](ops.Cast(got, tensor.Float64))
	w := tensor.ToSlice[float64](ops.Cast(want, tensor.Float64))
	for i := range w {
		if d := math.Abs(g[i] - w[i]); !(d <= tol*math.Max(1, math.Abs(w[i]))) {
			t.Fatalf("%s: element %d is %g, want %g", what, i, g[i], w[i])
		}
	}
}

// A block with dropout drops in training (two calls differ, and differ
// from inference) and not in inference (where it equals the same block
// without dropout); a traced step draws the masks the eager step does.
func TestTransformerBlockDropout(t *testing.T) {
	x := tensor.RandNormal(tensor.NewRNG(5), tensor.Float64, 2, 6, 8)
	opts := nn.MultiHeadAttentionOpts{DType: tensor.Float64, Causal: true, Dropout: 0.5}
	b := nn.NewTransformerBlock("b", tensor.NewRNG(2), 8, 2, opts)
	opts.Dropout = 0
	plain := nn.NewTransformerBlock("b", tensor.NewRNG(2), 8, 2, opts)
	first, second := b.Forward(x), b.Forward(x)
	nn.SetTraining(b, false)
	inference := b.Forward(x)
	diff(t, "inference", inference, plain.Forward(x), 0)
	same := func(a, c *tensor.Tensor) bool { return ops.Amax(ops.Abs(ops.Sub(a, c))).Float() == 0 }
	if same(first, second) || same(first, inference) {
		t.Error("training calls do not drop (or drop alike)")
	}
	nn.SetTraining(b, true)
	tp := tape.New()
	tp.Watch(x)
	if g := tp.Gradient(ops.Sum(b.Forward(x)), x)[0]; g == nil || math.IsNaN(ops.Sum(g).Float()) {
		t.Errorf("gradient through dropout: %v", g)
	}
	// A traced step draws the block's masks (attention and residual) as
	// the eager step does, from the same RNG.
	var losses [2][]float64
	for i, traced := range []bool{false, true} {
		blk := nn.NewTransformerBlock("b", tensor.NewRNG(3), 8, 2, nn.MultiHeadAttentionOpts{DType: tensor.Float64, Causal: true, Dropout: 0.5})
		m := &nn.Sequential{Layers: []nn.Module{blk}}
		mean := func(y, _ *tensor.Tensor) *tensor.Tensor { return ops.Mean(ops.Square(y)) }
		step := nn.TrainStep(m, mean, &nn.SGD{LR: nn.Constant(0.1)})
		if traced {
			step = nn.TracedTrainStep(m, mean, &nn.SGD{LR: nn.Constant(0.1)})
		}
		for range 3 {
			l, _, err := step(data.Element{x, x})
			if err != nil {
				t.Fatal(err)
			}
			losses[i] = append(losses[i], l)
		}
	}
	for k := range losses[0] {
		if d := math.Abs(losses[0][k] - losses[1][k]); d > 1e-12 {
			t.Errorf("a traced step over dropout: losses %v, eager %v", losses[1], losses[0])
			break
		}
	}
	if err := tensor.Catch(func() { nn.NewTransformerBlock("c", tensor.NewRNG(1), 8, 2, nn.MultiHeadAttentionOpts{Dropout: 1}) }); !errors.Is(err, tensor.ErrValue) {
		t.Errorf("dropout 1: %v", err)
	}
}

// ForwardMasked leaves a sequence's padding out of every position's
// attention: the kept positions of a padded sequence come out as the
// unpadded sequence's do, causal or not, in a MultiHeadAttention and a
// TransformerBlock; a sequence keeping everything is Forward's; one that
// keeps no key is NaN; the input's gradient flows; keep must be bool [N,
// T].
func TestForwardMaskedLeavesPaddingOut(t *testing.T) {
	r := tensor.NewRNG(7)
	const n, tt, c, h, real = 2, 6, 8, 2, 4
	x := tensor.RandNormal(r, tensor.Float32, n, tt, c)
	keep := make([]bool, n*tt)
	for i := range keep {
		keep[i] = i < tt || i%tt < real // sequence 0 whole, sequence 1 padded after real
	}
	keepT := tensor.FromSlice(keep, n, tt)
	for _, causal := range []bool{false, true} {
		o := nn.MultiHeadAttentionOpts{Causal: causal}
		m := nn.NewMultiHeadAttention("a", tensor.NewRNG(1), c, h, o)
		b := nn.NewTransformerBlock("b", tensor.NewRNG(2), c, h, o)
		for _, layer := range []struct {
			name          string
			plain, masked func(x *tensor.Tensor) *tensor.Tensor
		}{
			{"MultiHeadAttention", m.Forward, func(x *tensor.Tensor) *tensor.Tensor { return m.ForwardMasked(x, keepT) }},
			{"TransformerBlock", b.Forward, func(x *tensor.Tensor) *tensor.Tensor { return b.ForwardMasked(x, keepT) }},
		} {
			y := layer.masked(x)
			whole := ops.Slice(x, []int{0, 0, 0}, []int{1, tt, c}, nil)
			diff(t, layer.name+": the unpadded sequence", ops.Slice(y, []int{0, 0, 0}, []int{1, tt, c}, nil), layer.plain(whole), 1e-5)
			short := ops.Slice(x, []int{1, 0, 0}, []int{2, real, c}, nil)
			diff(t, layer.name+": the padded sequence's kept positions", ops.Slice(y, []int{1, 0, 0}, []int{2, real, c}, nil), layer.plain(short), 1e-5)
		}
	}
	m := nn.NewMultiHeadAttention("a", tensor.NewRNG(1), c, h, nn.MultiHeadAttentionOpts{})
	none := tensor.FromSlice(make([]bool, n*tt), n, tt)
	if v := tensor.ToSlice[float32](m.ForwardMasked(x, none)); !math.IsNaN(float64(v[0])) {
		t.Errorf("a sequence keeping no key gave %v, want NaN", v[0])
	}
	tp := tape.New()
	tp.Watch(x)
	g := tp.Gradient(ops.Sum(m.ForwardMasked(x, keepT)), x)[0]
	for i, v := range tensor.ToSlice[float32](g) {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("gradient element %d is %v", i, v)
		}
	}
	for _, bad := range []*tensor.Tensor{tensor.FromSlice(keep[:tt], 1, tt), tensor.Ones(tensor.Float32, n, tt)} {
		if err := tensor.Catch(func() { m.ForwardMasked(x, bad) }); !errors.Is(err, tensor.ErrShape) {
			t.Errorf("keep %s: %v, want a shape error", tensor.Describe(bad), err)
		}
	}
	if err := tensor.Catch(func() { m.ForwardMasked(x, nil) }); !errors.Is(err, tensor.ErrArity) {
		t.Errorf("a nil keep: %v", err)
	}
}

// ForwardCross attends x's positions to memory's: with memory x it is
// Forward; with another memory it is the projections and the attention
// written out (the joint projection's query part of x, its key and value
// parts of memory); memory's padding (keep) is as a shorter memory; the
// gradients reach both parts of the projection and memory; shapes that
// do not fit are errors.
func TestForwardCross(t *testing.T) {
	r := tensor.NewRNG(11)
	const n, tq, tk, c, h = 2, 3, 5, 8, 2
	x, mem := tensor.RandNormal(r, tensor.Float64, n, tq, c), tensor.RandNormal(r, tensor.Float64, n, tk, c)
	m := nn.NewMultiHeadAttention("a", tensor.NewRNG(1), c, h, nn.MultiHeadAttentionOpts{DType: tensor.Float64})
	diff(t, "memory x", m.ForwardCross(x, x, nil), m.Forward(x), 1e-12)

	w, b := m.In.Kernel.Value(), m.In.Bias.Value()
	proj := func(y *tensor.Tensor, from, to int) *tensor.Tensor {
		return ops.Add(ops.MatMul(y, ops.Slice(w, []int{0, from}, []int{c, to}, nil)), ops.Slice(b, []int{from}, []int{to}, nil))
	}
	heads := func(y *tensor.Tensor) *tensor.Tensor {
		return ops.Transpose(ops.Reshape(y, n, y.Dim(1), h, c/h), 0, 2, 1, 3)
	}
	q, k, v := heads(proj(x, 0, c)), heads(proj(mem, c, 2*c)), heads(proj(mem, 2*c, 3*c))
	att := ops.Reshape(ops.Transpose(attentionByOps(q, k, v, nil), 0, 2, 1, 3), n, tq, c)
	diff(t, "another memory", m.ForwardCross(x, mem, nil), m.Out.Forward(att), 1e-12)

	const real = 3 // sequence 1's memory padded after real positions
	keep := make([]bool, n*tk)
	for i := range keep {
		keep[i] = i < tk || i%tk < real
	}
	y := m.ForwardCross(x, mem, tensor.FromSlice(keep, n, tk))
	short := m.ForwardCross(ops.Slice(x, []int{1, 0, 0}, []int{2, tq, c}, nil), ops.Slice(mem, []int{1, 0, 0}, []int{2, real, c}, nil), nil)
	diff(t, "padded memory", ops.Slice(y, []int{1, 0, 0}, []int{2, tq, c}, nil), short, 1e-12)

	tp := tape.New()
	tp.Watch(mem)
	g := tp.Gradient(ops.Sum(m.ForwardCross(x, mem, nil)), m.In.Kernel.Value(), mem)
	for i, part := range [][2]int{{0, c}, {c, 3 * c}} { // the query part (x's), the key and value parts (memory's)
		if ops.Amax(ops.Abs(ops.Slice(g[0], []int{0, part[0]}, []int{c, part[1]}, nil))).Float() == 0 {
			t.Errorf("projection part %d has no gradient", i)
		}
	}
	if g[1] == nil || ops.Amax(ops.Abs(g[1])).Float() == 0 {
		t.Error("memory has no gradient")
	}
	// A half x with a float32 memory (a mixed model's decoder over its
	// encoder's float32 output): memory is taken in x's dtype.
	m32 := nn.NewMultiHeadAttention("a", tensor.NewRNG(1), c, h, nn.MultiHeadAttentionOpts{})
	if y := m32.ForwardCross(ops.Cast(x, tensor.BFloat16), ops.Cast(mem, tensor.Float32), nil); y.DType() != tensor.BFloat16 || !y.Shape().Equal(tensor.Shape{n, tq, c}) {
		t.Errorf("bfloat16 x, float32 memory: %s", tensor.Describe(y))
	}
	for _, c := range []struct {
		name      string
		x, mem, k *tensor.Tensor
		kind      error
	}{
		{"memory of other features", x, tensor.Zeros(tensor.Float64, n, tk, c+1), nil, tensor.ErrShape},
		{"memory of other sequences", x, tensor.Zeros(tensor.Float64, n+1, tk, c), nil, tensor.ErrShape},
		{"a matrix memory", x, tensor.Zeros(tensor.Float64, tk, c), nil, tensor.ErrRank},
		{"keep of queries", x, mem, tensor.FromSlice(make([]bool, n*tq), n, tq), tensor.ErrShape},
	} {
		if err := tensor.Catch(func() { m.ForwardCross(c.x, c.mem, c.k) }); !errors.Is(err, c.kind) {
			t.Errorf("%s: %v, want %v", c.name, err, c.kind)
		}
	}
}

// attentionByOps is softmax(q·kᵀ/√d [+ mask])·v over heads, written out.
func attentionByOps(q, k, v, mask *tensor.Tensor) *tensor.Tensor {
	s := ops.Mul(ops.MatMulT(q, k, false, true), ops.ScalarLike(q, 1/math.Sqrt(float64(q.Dim(-1)))))
	if mask != nil {
		s = ops.Where(mask, s, ops.ScalarLike(s, math.Inf(-1)))
	}
	return ops.MatMul(ops.Softmax(s, -1), v)
}
