package model

import (
	"fmt"
	"math"

	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Generation as one traced graph: a control.While over the positions
// whose loop state is the position, the sequence so far ([1, Context]
// Int32, the prompt written first) and every block's keys and values
// ([1, Heads, Context, Dim/Heads], written a position at a time:
// nn.TransformerBlock.ForwardStep). Each step runs the model on one
// byte; while inside the prompt it keeps the prompt's next byte, after it
// the sample: the logits divided by the temperature, kept among the top
// k, plus Gumbel noise (drawn before the loop, an argument, so that a
// call with another seed reuses the graph), their argmax. A temperature
// of 0 takes the likeliest byte. The graph runs on the model's device;
// on a GPU it is recorded (trace.Function.Record), the loop a CUDA
// graph's conditional node: a generation is one launch.

// sampling is a traced generation's static choices (a graph each).
type sampling struct {
	greedy bool
	topK   int
}

// Generate continues prompt with n bytes (prompt plus n at most the
// context), sampled at temperature among the topK likeliest (0 or 256 or
// more: all) with Gumbel noise from seed, in one traced graph per model
// and sampling (see above). The model must be in inference mode where it
// has dropout (nn.SetTraining).
func (g *GPT) Generate(prompt []byte, n int, temperature float64, topK int, seed uint64) ([]byte, error) {
	ctx := g.Context()
	if len(prompt) == 0 || n < 0 || len(prompt)+n > ctx {
		return nil, fmt.Errorf("model: Generate: a prompt of %d bytes and %d more need 1 to %d positions", len(prompt), n, ctx)
	}
	if temperature < 0 || math.IsNaN(temperature) {
		return nil, fmt.Errorf("model: Generate: temperature %v is negative", temperature)
	}
	s := sampling{greedy: temperature == 0, topK: topK}
	if topK <= 0 || topK >= Vocab {
		s.topK = 0
	}
	traced := trace.NewFunction(func(a []*tensor.Tensor) []*tensor.Tensor { return g.generateLoop(a, s) })
	traced.Record = true
	fn, _ := g.generators.LoadOrStore(s, traced)

	dev := g.device()
	seq := make([]int32, ctx)
	for i, b := range prompt {
		seq[i] = int32(b)
	}
	noise := tensor.FullOn(dev, tensor.Float32, 0, ctx, Vocab)
	if !s.greedy {
		// Gumbel noise -log(-log u), u uniform in (0, 1), drawn on the
		// host (the same bytes for a seed on every device).
		u := tensor.RandUniform(tensor.NewRNG(seed), tensor.Float32, 1e-7, 1, ctx, Vocab)
		noise = ops.Neg(ops.Log(ops.Neg(ops.Log(u))))
	}
	inv := 1.0
	if !s.greedy {
		inv = 1 / temperature
	}
	var out []*tensor.Tensor
	err := tensor.Catch(func() {
		noise, err := noise.To(dev)
		if err != nil {
			panic(err)
		}
		out, err = fn.(*trace.Function).Call(tensor.FromSliceOn(dev, seq, 1, ctx), noise,
			tensor.FullOn(dev, tensor.Int32, float64(len(prompt))), tensor.FullOn(dev, tensor.Int32, float64(len(prompt)+n)),
			tensor.FullOn(dev, tensor.Float32, inv))
		if err != nil {
			panic(err)
		}
	})
	if err != nil {
		return nil, err
	}
	got := tensor.ToSlice[int32](out[0])
	bytes := make([]byte, len(prompt)+n)
	for i := range bytes {
		bytes[i] = byte(got[i])
	}
	return bytes, nil
}

// device is where the model's variables are.
func (g *GPT) device() device.Device { return g.Tok.Table.Value().Device() }

// generateLoop is the traced function: arguments the sequence [1,
// Context], the noise [Context, Vocab], the prompt's length, the end and
// 1/temperature; result the sequence.
func (g *GPT) generateLoop(a []*tensor.Tensor, s sampling) []*tensor.Tensor {
	seq, noise, promptLen, end, invT := a[0], a[1], a[2], a[3], a[4]
	ctx, dev := g.Context(), g.device()
	vars := []*tensor.Tensor{tensor.FullOn(dev, tensor.Int32, 0), seq}
	for _, b := range g.Blocks {
		k, v := b.Attn.NewStepCache(1, ctx, tensor.Float32)
		vars = append(vars, k, v)
	}
	one, zero := tensor.FullOn(dev, tensor.Int32, 1), tensor.FullOn(dev, tensor.Int32, 0, 1)
	at := func(pos *tensor.Tensor) *tensor.Tensor { // [2] starts (0, pos)
		return ops.Concatenate(0, zero, ops.Reshape(pos, 1))
	}
	out := control.While(func(v []*tensor.Tensor) *tensor.Tensor {
		return ops.Lt(ops.Add(v[0], one), end)
	}, func(v []*tensor.Tensor) []*tensor.Tensor {
		pos, seq := v[0], v[1]
		tok := ops.DynamicSlice(seq, at(pos), 1, 1)
		x := ops.Add(g.Tok.Forward(tok), ops.Reshape(g.Pos.Forward(ops.Reshape(pos, 1)), 1, 1, -1))
		next := []*tensor.Tensor{nil, nil}
		for i, b := range g.Blocks {
			var k, vv *tensor.Tensor
			x, k, vv = b.ForwardStep(x, v[2+2*i], v[3+2*i], pos)
			next = append(next, k, vv)
		}
		logits := ops.Reshape(g.Head.Forward(g.Norm.Forward(x)), Vocab)
		if !s.greedy {
			logits = ops.Mul(logits, invT)
			if s.topK > 0 {
				top, _ := ops.TopK(logits, s.topK)
				kth := ops.Slice(top, []int{s.topK - 1}, []int{s.topK}, nil)
				logits = ops.Where(ops.Ge(logits, kth), logits, ops.ScalarLike(logits, math.Inf(-1)))
			}
			logits = ops.Add(logits, ops.Reshape(ops.DynamicSlice(noise, ops.Concatenate(0, ops.Reshape(pos, 1), zero), 1, Vocab), Vocab))
		}
		choice := ops.Reshape(ops.Cast(ops.ArgMax(logits, 0), tensor.Int32), 1, 1)
		nextPos := ops.Add(pos, one)
		given := ops.DynamicSlice(seq, at(nextPos), 1, 1)
		write := ops.Where(ops.Lt(nextPos, promptLen), given, choice)
		next[0], next[1] = nextPos, ops.DynamicUpdateSlice(seq, write, at(nextPos))
		return next
	}, vars)
	return []*tensor.Tensor{out[1]}
}
