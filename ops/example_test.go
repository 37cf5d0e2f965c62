package ops_test

import (
	"fmt"
	"math"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Elementwise ops broadcast as NumPy does; a Go number becomes a scalar of
// the tensor's dtype.
func Example_elementwise() {
	x := tensor.FromSlice([]float32{1, -2, 3, -4, 5, -6}, 2, 3)
	bias := tensor.FromSlice([]float32{10, 20, 30})
	fmt.Println(ops.Add(x, bias))                                      // [2 3] + [3]
	fmt.Println(ops.Mul(x, tensor.Scalar(0.5)))                        // a weak scalar takes float32
	fmt.Println(ops.Where(ops.Gt(x, tensor.Scalar(0)), x, ops.Neg(x))) // |x|
	fmt.Println(ops.Maximum(x, tensor.Scalar(0)))                      // ReLU
	// Output:
	// [[11. 18. 33.]
	//  [ 6. 25. 24.]] float32[2 3]
	// [[ 0.5 -1.   1.5]
	//  [-2.   2.5 -3. ]] float32[2 3]
	// [[1. 2. 3.]
	//  [4. 5. 6.]] float32[2 3]
	// [[1. 0. 3.]
	//  [0. 5. 0.]] float32[2 3]
}

// Reductions take the dims to reduce (none: all); KeepDims keeps them as
// size 1, so the result broadcasts back against x.
func Example_reductions() {
	x := tensor.FromSlice([]float64{1, 5, 3, 4, 2, 6}, 2, 3)
	fmt.Println(ops.Sum(x))                               // everything
	fmt.Println(ops.Mean(x, 1))                           // per row
	fmt.Println(ops.Amax(x, 0))                           // per column
	fmt.Println(ops.ArgMax(x, 1))                         // where each row's maximum is
	fmt.Println(ops.Sub(x, ops.KeepDims(ops.Mean, x, 1))) // rows centred
	fmt.Println(ops.Cumsum(x, 1, false, false))           // running sums along rows
	// Output:
	// 21.0 float64[]
	// [3. 4.] float64[2]
	// [4. 5. 6.] float64[3]
	// [1 2] int64[2]
	// [[-2.  2.  0.]
	//  [ 0. -2.  2.]] float64[2 3]
	// [[ 1.  6.  9.]
	//  [ 4.  6. 12.]] float64[2 3]
}

// Shapes change without copying where they can (Reshape, Transpose are
// views); tensors join and split along an axis.
func Example_shape() {
	x := ops.Reshape(tensor.Arange[int32](0, 6, 1), 2, 3)
	fmt.Println(ops.Transpose(x, 1, 0))
	fmt.Println(ops.Concatenate(0, x, x).Shape()) // the axis first, then the list
	fmt.Println(ops.Stack(0, x, x).Shape())
	parts := ops.Split(x, 1, []int{1, 2}) // the tensor first, then the axis
	fmt.Println(parts[0].Shape(), parts[1].Shape())
	fmt.Println(ops.ExpandDims(x, -1).Shape(), ops.BroadcastTo(tensor.FromSlice([]int32{7, 8, 9}), 2, 3))
	// Output:
	// [[0 3]
	//  [1 4]
	//  [2 5]] int32[3 2]
	// [4 3]
	// [2 2 3]
	// [2 1] [2 2]
	// [2 3 1] [[7 8 9]
	//  [7 8 9]] int32[2 3]
}

// Indexing beyond Index: Gather picks rows (an embedding lookup), OneHot
// turns labels into vectors, and a boolean mask selects elements.
func Example_indexing() {
	table := tensor.FromSlice([]float32{0, 0, 1, 1, 2, 2}, 3, 2)
	fmt.Println(ops.Gather(table, tensor.FromSlice([]int64{2, 0, 2}), 0))
	fmt.Println(ops.OneHot(tensor.FromSlice([]int32{1, 0}), 3, tensor.Float32))
	x := tensor.FromSlice([]float64{3, -1, 4, -1, 5})
	positive := ops.Gt(x, tensor.Scalar(0))
	fmt.Println(ops.MaskedSelect(x, positive))                                   // x[x > 0]
	fmt.Println(ops.Nonzero(positive))                                           // where they are
	fmt.Println(ops.MaskedFill(x, ops.LogicalNot(positive), tensor.Scalar(0.0))) // x[x <= 0] = 0
	// Output:
	// [[2. 2.]
	//  [0. 0.]
	//  [2. 2.]] float32[3 2]
	// [[0. 1. 0.]
	//  [1. 0. 0.]] float32[2 3]
	// [3. 4. 5.] float64[3]
	// [[0]
	//  [2]
	//  [4]] int64[3 1]
	// [3. 0. 4. 0. 5.] float64[5]
}

// Matrix products: MatMul batches over leading dims (and broadcasts a
// shared matrix); DotGeneral names the contracting and batch dims as XLA
// does.
func Example_linearAlgebra() {
	a := tensor.FromSlice([]float64{1, 2, 3, 4}, 2, 2)
	b := tensor.FromSlice([]float64{5, 6, 7, 8}, 2, 2)
	fmt.Println(ops.MatMul(a, b))
	batch := ops.Stack(0, a, b)                 // [2 2 2]
	fmt.Println(ops.MatMul(batch, a).Shape())   // each matrix times a
	fmt.Println(ops.MatMulT(a, b, false, true)) // a·bᵀ
	fmt.Println(ops.Dot(tensor.FromSlice([]float64{1, 2}), tensor.FromSlice([]float64{3, 4})))
	// Output:
	// [[19. 22.]
	//  [43. 50.]] float64[2 2]
	// [2 2 2]
	// [[17. 23.]
	//  [39. 53.]] float64[2 2]
	// 11.0 float64[]
}

// Factorizations and what they solve: a symmetric positive-definite
// system through its Cholesky factor, a general one by LU, a
// least-squares fit by QR, and a symmetric matrix's eigenvalues. Each
// batches over leading dimensions and differentiates.
func Example_factorizations() {
	a := tensor.FromSlice([]float64{4, 2, 2, 3}, 2, 2)
	b := tensor.FromSlice([]float64{2, 1}, 2, 1)
	l := ops.Cholesky(a)
	fmt.Println(l)
	fmt.Println(ops.CholeskySolve(l, b)) // a·x = b
	fmt.Println(ops.Solve(a, b))         // the same by LU
	fmt.Println(ops.Det(a))
	// The line through (0, 1), (1, 3), (2, 5) (c0 + c1·t), exactly.
	design := tensor.FromSlice([]float64{1, 0, 1, 1, 1, 2}, 3, 2)
	fmt.Println(ops.Lstsq(design, tensor.FromSlice([]float64{1, 3, 5}, 3, 1)))
	values, _ := ops.Eigh(tensor.FromSlice([]float64{2, 1, 1, 2}, 2, 2))
	fmt.Println(values)
	// Output:
	// [[2.         0.        ]
	//  [1.         1.41421356]] float64[2 2]
	// [[0.5]
	//  [0. ]] float64[2 1]
	// [[0.5]
	//  [0. ]] float64[2 1]
	// 8.0 float64[]
	// [[1.]
	//  [2.]] float64[2 1]
	// [1. 3.] float64[2]
}

// LU once, solves many: the factors, then systems with them (aᵀ's too);
// and the exponential of a rotation generator.
func Example_luAndMatrixExp() {
	a := tensor.FromSlice([]float64{1, 2, 3, 4}, 2, 2)
	lu, pivots, perm := ops.LU(a)
	fmt.Println(lu, pivots, perm)
	b := tensor.FromSlice([]float64{5, 6}, 2, 1)
	fmt.Println(ops.LUSolve(lu, perm, b, ops.LUSolveOpts{}))                // a·x = b
	fmt.Println(ops.LUSolve(lu, perm, b, ops.LUSolveOpts{Transpose: true})) // aᵀ·x = b
	// exp([[0, θ], [-θ, 0]]) turns the plane by θ: cos θ on the diagonal.
	fmt.Println(ops.MatrixExp(tensor.FromSlice([]float64{0, math.Pi / 3, -math.Pi / 3, 0}, 2, 2)))
	// Output:
	// [[3.         4.        ]
	//  [0.33333333 0.66666667]] float64[2 2] [1 1] int32[2] [1 0] int32[2]
	// [[-4. ]
	//  [ 4.5]] float64[2 1]
	// [[-1.]
	//  [ 2.]] float64[2 1]
	// [[ 0.5        0.8660254]
	//  [-0.8660254  0.5      ]] float64[2 2]
}

// The gamma family: ln Γ (a log-likelihood's normalizer), ψ (its
// derivative, as the tape finds it too), ψ's derivatives, ζ.
func Example_gammaFunctions() {
	x := tensor.FromSlice([]float64{0.5, 1, 5})
	fmt.Println(ops.Lgamma(x)) // ln √π, 0, ln 24
	fmt.Println(ops.Digamma(x))
	fmt.Println(ops.Polygamma(1, tensor.FromSlice([]float64{1}))) // π²/6
	fmt.Println(ops.Zeta(tensor.FromSlice([]float64{2, 4}), tensor.FromSlice([]float64{1})))
	// A chi-square statistic of 7.81 on 3 degrees of freedom: its p-value
	// Q(3/2, 7.81/2); and a Poisson(2) count below 3: Q(3, 2).
	fmt.Println(ops.Igammac(tensor.FromSlice([]float64{1.5, 3}), tensor.FromSlice([]float64{7.81 / 2, 2})))
	// Output:
	// [0.57236494 0.         3.17805383] float64[3]
	// [-1.96351003 -0.57721566  1.50611767] float64[3]
	// [1.64493407] float64[1]
	// [1.64493407 1.08232323] float64[2]
	// [0.05010606 0.67667642] float64[2]
}

// The normal distribution: a z-score's two-sided p-value 2Φ(-|z|), the
// 97.5% quantile, and the log-likelihood of a probit model's far tail,
// where Φ itself underflows; a probit's gradient at that tail stays
// finite (about -x).
func Example_normalDistribution() {
	z := tensor.FromSlice([]float64{1.96, 3.5})
	fmt.Println(ops.Mul(ops.Ndtr(ops.Neg(z)), tensor.Scalar(2.0)))
	fmt.Printf("%.6v\n", ops.Ndtri(tensor.FromSlice([]float64{0.975})))
	x := tensor.FromSlice([]float64{-40})
	fmt.Println(ops.Ndtr(x), ops.LogNdtr(x))
	tp := tape.New()
	tp.Watch(x)
	fmt.Printf("%.6v\n", tp.Gradient(ops.LogNdtr(x), x)[0])
	// Output:
	// [0.04999579 0.00046526] float64[2]
	// [1.959964] float64[1]
	// [0.] float64[1] [-804.60844201] float64[1]
	// [40.024969] float64[1]
}

// A von Mises distribution's log-normalizer ln(2π·I₀(κ)), for a large
// concentration κ through the scaled function (I₀ itself overflows
// past 714): ln 2π + κ + ln I₀e(κ).
func Example_besselFunctions() {
	kappa := tensor.FromSlice([]float64{0.5, 10, 1000})
	twoPi := tensor.Scalar(2 * math.Pi)
	fmt.Println(ops.BesselI0(kappa))
	fmt.Println(ops.Add(ops.Add(ops.Log(twoPi), kappa), ops.Log(ops.BesselI0e(kappa))))
	// Output:
	// [1.06348337e+00 2.81571663e+03            inf] float64[3]
	// [  1.89942679   9.78084915 997.46518596] float64[3]
}

// An entropy and a KL divergence of distributions with zeros (0·log 0 =
// 0 by Xlogy), Python's floor division and modulo, and log-odds.
func Example_logarithmsAndModulo() {
	p := tensor.FromSlice([]float64{0.5, 0.5, 0})
	q := tensor.FromSlice([]float64{0.25, 0.25, 0.5})
	fmt.Printf("%.4v\n", ops.Neg(ops.Sum(ops.Xlogy(p, p))))    // ln 2
	fmt.Printf("%.4v\n", ops.Sum(ops.Xlogy(p, ops.Div(p, q)))) // KL(p‖q) = ln 2
	i := tensor.FromSlice([]int32{-7, -1, 0, 6})
	fmt.Println(ops.FloorDiv(i, tensor.Scalar(3)), ops.Mod(i, tensor.Scalar(3)))
	fmt.Println(ops.Logit(tensor.FromSlice([]float64{0.5, 0.75})))
	// Output:
	// 0.6931 float64[]
	// 0.6931 float64[]
	// [-3 -1  0  2] int32[4] [2 2 0 0] int32[4]
	// [0.         1.09861229] float64[2]
}

// A 2-D convolution (NHWC images, HWIO filters) and max pooling.
func Example_convolution() {
	img := ops.Reshape(tensor.Arange[float32](0, 16, 1), 1, 4, 4, 1) // one 4x4 image, one channel
	edge := tensor.FromSlice([]float32{1, -1}, 1, 2, 1, 1)           // x[j] - x[j+1]
	fmt.Println(ops.Reshape(ops.Conv2D(img, edge, ops.Conv2DOpts{}), 4, 3))
	pooled := ops.MaxPool2D(img, ops.PoolOpts{Size: [2]int{2, 2}, Strides: [2]int{2, 2}})
	fmt.Println(ops.Reshape(pooled, 2, 2))
	// Output:
	// [[-1. -1. -1.]
	//  [-1. -1. -1.]
	//  [-1. -1. -1.]
	//  [-1. -1. -1.]] float32[4 3]
	// [[ 5.  7.]
	//  [13. 15.]] float32[2 2]
}

// The functions of neural networks: Softmax along an axis and the
// cross-entropy of integer labels.
func Example_neuralNet() {
	logits := tensor.FromSlice([]float64{0, 0, 0, 2, 0, 0}, 2, 3)
	fmt.Printf("%.4v\n", ops.Softmax(logits, -1))
	fmt.Printf("%.4v\n", ops.SparseSoftmaxCrossEntropy(logits, tensor.FromSlice([]int32{1, 0})))
	// Output:
	// [[0.3333 0.3333 0.3333]
	//  [0.7870 0.1065 0.1065]] float64[2 3]
	// [1.0986 0.2395] float64[2]
}

// A recurrent layer's steps as one op: LSTMSequence runs an LSTM over
// every step from the input's gate terms (x·W + b for the whole
// sequence, one product), the recurrent kernel and the initial state. Its
// last output is the final state's h, and a loop of LSTMCell steps gives
// the same values.
func ExampleLSTMSequence() {
	r := tensor.NewRNG(1)
	const n, t, h = 2, 3, 4
	xz := tensor.RandUniform(r, tensor.Float64, -1, 1, n, t, 4*h) // the input's gate terms
	u := tensor.RandUniform(r, tensor.Float64, -0.5, 0.5, h, 4*h) // the recurrent kernel
	h0, c0 := tensor.Zeros(tensor.Float64, n, h), tensor.Zeros(tensor.Float64, n, h)
	ys, hT, cT := ops.LSTMSequence(xz, u, h0, c0)
	fmt.Println(ys.Shape(), hT.Shape(), cT.Shape())
	last := ops.Reshape(ops.Slice(ys, []int{0, t - 1, 0}, []int{n, t, h}, nil), n, h)
	fmt.Println(ops.Amax(ops.Abs(ops.Sub(last, hT))).Float())

	hs, cs := h0, c0
	for s := range t {
		x := ops.Reshape(ops.Slice(xz, []int{0, s, 0}, []int{n, s + 1, 4 * h}, nil), n, 4*h)
		hs, cs = ops.LSTMCell(x, ops.MatMul(hs, u), cs)
	}
	fmt.Println(ops.Amax(ops.Abs(ops.Sub(hs, hT))).Float() < 1e-12, ops.Amax(ops.Abs(ops.Sub(cs, cT))).Float() < 1e-12)
	// Output:
	// [2 3 4] [2 4] [2 4]
	// 0
	// true true
}
