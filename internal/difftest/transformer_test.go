package difftest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

type blockCase struct {
	ID      int      `json:"id"`
	X       *Array   `json:"x"`
	W       *Array   `json:"w"`
	V       *Array   `json:"v"` // the direction of the Hessian-vector product
	Heads   int      `json:"heads"`
	Causal  bool     `json:"causal"`
	Names   []string `json:"names"`
	Weights []*Array `json:"weights"`
}

type blockResult struct {
	ID     int      `json:"id"`
	Out    *Array   `json:"out"`
	Grads  []*Array `json:"grads"`
	Second []*Array `json:"second"`
}

// nn.TransformerBlock (float64; LayerNorm, the joint projection split
// into heads, attention, GELU's tanh form) equals nanoGPT's block written
// in PyTorch from the same weights (transformer_block.py), in value and
// in the gradients of the input and of every weight, and in the gradients
// of v·∂loss/∂x (a gradient penalty's: the LayerNorm and attention rules
// differentiated in their turn): the heads' split and merge, the masks
// and every rule checked at once.
func TestTransformerBlockAgainstTorch(t *testing.T) {
	needTorch(t)
	type run struct {
		out           T
		grads, second []T
	}
	var cases []blockCase
	var runs []run
	for id, c := range []struct {
		n, t, c, heads int
		causal         bool
	}{{2, 5, 8, 2, true}, {1, 7, 12, 3, false}, {3, 4, 8, 4, true}} {
		rng := tensor.NewRNG(uint64(10 + id))
		b := nn.NewTransformerBlock("b", rng, c.c, c.heads, nn.MultiHeadAttentionOpts{DType: tensor.Float64, Causal: c.causal})
		vars := b.Variables()
		// Biases and gains away from their zeros and ones, so that each
		// rule shows.
		for _, v := range vars {
			v.Assign(ops.Add(v.Value(), tensor.RandUniform(rng, tensor.Float64, -0.3, 0.3, v.Value().Shape()...)))
		}
		x := tensor.RandNormal(rng, tensor.Float64, c.n, c.t, c.c)
		w := tensor.RandUniform(rng, tensor.Float64, -1, 1, c.n, c.t, c.c)
		tp := tape.New()
		tp.Watch(x)
		out := b.Forward(x)
		grads := tp.Gradient(ops.Sum(ops.Mul(out, w)), append([]T{x}, nn.Values(vars)...)...)
		v := tensor.RandUniform(rng, tensor.Float64, -1, 1, c.n, c.t, c.c)
		outer := tape.New()
		outer.Watch(x)
		inner := tape.New()
		inner.Watch(x)
		gx := inner.Gradient(ops.Sum(ops.Mul(b.Forward(x), w)), x)[0]
		second := outer.Gradient(ops.Sum(ops.Mul(gx, v)), append([]T{x}, nn.Values(vars)...)...)
		runs = append(runs, run{out, grads, second})
		bc := blockCase{ID: id, X: encode(x), W: encode(w), V: encode(v), Heads: c.heads, Causal: c.causal}
		for _, v := range vars {
			bc.Names = append(bc.Names, strings.TrimPrefix(v.Name(), "b/"))
			bc.Weights = append(bc.Weights, encode(v.Value()))
		}
		cases = append(cases, bc)
	}
	res := runCases(t, "transformer_block.py", cases, func(r *blockResult) int { return r.ID })
	for id, r := range runs {
		want := res[id]
		if want == nil {
			t.Fatalf("case %d: no result from PyTorch", id)
		}
		if d := compare(r.out, want.Out); d != "" {
			t.Errorf("case %d output: %s", id, d)
		}
		for i, g := range r.grads {
			what := "x"
			if i > 0 {
				what = cases[id].Names[i-1]
			}
			if d := compare(g, want.Grads[i]); d != "" {
				t.Errorf("case %d gradient of %s: %s", id, what, d)
			}
			if d := compareWithin(r.second[i], want.Second[i], secondTol); d != "" {
				t.Errorf("case %d Hessian-vector product, %s: %s", id, what, d)
			}
		}
	}
	t.Log(fmt.Sprintf("%d blocks compared with PyTorch's", len(runs)))
}
