package peers

import (
	"math/rand/v2"
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// BenchmarkGorgoniaMLPStep is eagerflow's BenchmarkMLPStep in Gorgonia: a
// 784->256->10 ReLU network with biases, softmax cross-entropy against
// one-hot labels, batch 64, float32, forward + backward + SGD on a
// TapeMachine.
func BenchmarkGorgoniaMLPStep(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	randT := func(scale float32, shape ...int) *tensor.Dense {
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64()) * scale
		}
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(v))
	}
	g := G.NewGraph()
	x := G.NewMatrix(g, tensor.Float32, G.WithShape(64, 784), G.WithName("x"), G.WithValue(randT(1, 64, 784)))
	onehot := make([]float32, 64*10)
	for i := 0; i < 64; i++ {
		onehot[i*10+i%10] = 1
	}
	y := G.NewMatrix(g, tensor.Float32, G.WithShape(64, 10), G.WithName("y"),
		G.WithValue(tensor.New(tensor.WithShape(64, 10), tensor.WithBacking(onehot))))
	w1 := G.NewMatrix(g, tensor.Float32, G.WithShape(784, 256), G.WithName("w1"), G.WithValue(randT(0.05, 784, 256)))
	b1 := G.NewMatrix(g, tensor.Float32, G.WithShape(1, 256), G.WithName("b1"), G.WithValue(randT(0, 1, 256)))
	w2 := G.NewMatrix(g, tensor.Float32, G.WithShape(256, 10), G.WithName("w2"), G.WithValue(randT(0.09, 256, 10)))
	b2 := G.NewMatrix(g, tensor.Float32, G.WithShape(1, 10), G.WithName("b2"), G.WithValue(randT(0, 1, 10)))

	h := G.Must(G.Rectify(G.Must(G.BroadcastAdd(G.Must(G.Mul(x, w1)), b1, nil, []byte{0}))))
	logits := G.Must(G.BroadcastAdd(G.Must(G.Mul(h, w2)), b2, nil, []byte{0}))
	logp := G.Must(G.Log(G.Must(G.SoftMax(logits))))
	loss := G.Must(G.Neg(G.Must(G.Mean(G.Must(G.Sum(G.Must(G.HadamardProd(logp, y)), 1))))))
	params := G.Nodes{w1, b1, w2, b2}
	if _, err := G.Grad(loss, params...); err != nil {
		b.Fatal(err)
	}
	vm := G.NewTapeMachine(g, G.BindDualValues(params...))
	defer vm.Close()
	solver := G.NewVanillaSolver(G.WithLearnRate(0.01))
	step := func() {
		if err := vm.RunAll(); err != nil {
			b.Fatal(err)
		}
		if err := solver.Step(G.NodesToValueGrads(params)); err != nil {
			b.Fatal(err)
		}
		vm.Reset()
	}
	step()
	b.ReportAllocs()
	for b.Loop() {
		step()
	}
}
