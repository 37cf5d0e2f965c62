package trace_test

import (
	"runtime"
	"slices"
	"testing"
	"weak"

	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/approx"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// cellUsingEveryDeclaredOp uses each op that declares it reads less than
// all its values (eager.Op.GradReads), each with the values it declares it
// reads read by nothing else, so that inside a stored loop they are let go
// when a declaration is too small and the rule's read panics.
func cellUsingEveryDeclaredOp(h, w, c T) T {
	u := ops.Add(h, c)                                                          // read only by MatMul
	m := ops.MatMul(u, w)                                                       // read by nothing: Add reads no values
	z := ops.Add(m, c)                                                          // read by nothing: Sigmoid reads its output, Sub and Identity nothing
	s := ops.Add(ops.Sigmoid(z), ops.Exp(ops.Sub(z, c)))                        // Sigmoid's and Exp's outputs read only by their own rules
	p := ops.Mul(s, ops.Identity(z))                                            // Mul reads both
	r := ops.Relu(ops.Reshape(ops.Transpose(ops.Reshape(p, 2, 2), 1, 0), 1, 4)) // Relu reads the reshape
	b := ops.BroadcastTo(ops.Reshape(ops.Sum(c), 1, 1), 1, 4)
	q := ops.Softplus(ops.Sub(p, c))                                                    // Softplus reads its input, read by nothing else
	q = ops.ToDevice(ops.ToDevice(q, device.SecondCPU()), q.Device())                   // a round trip: the copies read no values
	q = ops.Reshape(must(single.AllGather(must(single.Broadcast(q, 0)))), q.Shape()...) // collectives of one rank: read no values
	parts := ops.Split(ops.GeluTanh(r), 1, []int{3, 1})                                 // GeluTanh reads its input; Split nothing
	r = ops.Concatenate(1, parts[1], parts[0])
	// Max pooling that keeps its choices: its input read by nothing (its
	// rule reads the taps), the taps and the values unpooled read only by
	// the unpoolings' rules.
	pool := ops.PoolOpts{Size: [2]int{2, 2}}
	pooled, taps := ops.MaxPool2DWithArgmax(ops.Reshape(ops.Add(r, c), 1, 2, 2, 1), pool)
	un := ops.MaxUnpool2D(ops.Sub(pooled, ops.Reshape(ops.Sum(c), 1, 1, 1, 1)), taps, []int{1, 2, 2, 1}, pool)
	gathered := eager.Run1(eager.Lookup("MaxUnpool2DGather"), unpoolAttrs, ops.Add(un, un), taps)
	spread := ops.Add(ops.Reshape(un, 1, 4), ops.BroadcastTo(ops.Reshape(gathered, 1, 1), 1, 4))
	// The index ops' rules read the indices (or the predicate) and their
	// operands' shapes alone: each operand is read by nothing else.
	picked := ops.Add(ops.Gather(ops.Add(r, c), indices, 1), ops.TakeAlongAxis(ops.Sub(r, c), along, 1))
	picked = ops.Add(picked, ops.DynamicSlice(ops.Add(q, c), starts, 1, 4))
	picked = ops.Add(picked, ops.Where(ops.Gt(r, c), ops.Add(r, r), ops.Sub(c, q)))
	// The softmaxes' gradient ops read both their inputs, Gather's and
	// TakeAlongAxis's gradients (ScatterAddZeros, PutAlongAxisAddZeros)
	// their indices alone.
	picked = ops.Add(picked, eager.Run1(eager.Lookup("SoftmaxGrad"), nil, ops.Sigmoid(ops.Add(r, c)), ops.Sub(r, c)))
	picked = ops.Add(picked, eager.Run1(eager.Lookup("LogSoftmaxGrad"), nil, ops.Neg(ops.Add(q, c)), ops.Sub(q, c)))
	picked = ops.Add(picked, eager.Run1(eager.Lookup("ScatterAddZeros"), opattr.ScatterZerosAttrs{Axis: 1, Size: 4}, ops.Mul(r, c), indices))
	picked = ops.Add(picked, eager.Run1(eager.Lookup("PutAlongAxisAddZeros"), opattr.ScatterZerosAttrs{Axis: 1, Size: 4}, ops.Mul(q, c), along))
	picked = ops.Add(picked, ops.Gelu(ops.Sub(q, r)))                                  // Gelu reads its input, read by nothing else
	picked = ops.Add(picked, ops.Add(ops.Tan(ops.Sub(q, c)), ops.Exp2(ops.Sub(r, c)))) // Tan's and Exp2's outputs read only by their rules
	picked = ops.Add(picked, ops.Atan2(ops.Mul(q, r), ops.Add(c, c)))                  // Atan2 reads both inputs, read by nothing else
	picked = ops.Add(picked, ops.LogAddExp(ops.Sub(q, r), ops.Mul(c, c)))              // so does LogAddExp
	picked = ops.Add(picked, ops.Prelu(ops.Sub(q, c), ops.Mul(r, c)))                  // so does Prelu
	// The activations read their inputs, each read by nothing else.
	picked = ops.Add(picked, ops.Add(ops.Relu6(ops.Sub(r, q)), ops.HardSigmoid(ops.Mul(q, q))))
	picked = ops.Add(picked, ops.Add(ops.HardSwish(ops.Add(q, q)), ops.Elu(ops.Sub(c, r))))
	picked = ops.Add(picked, ops.Add(ops.Selu(ops.Mul(r, r)), ops.Silu(ops.Add(c, q))))
	picked = ops.Add(picked, ops.Add(ops.Mish(ops.Sub(c, q)), ops.Softsign(ops.Mul(q, r))))
	picked = ops.Add(picked, ops.Erfinv(ops.Tanh(ops.Sub(q, c)))) // Erfinv's output read only by its rule
	// The normal family reads its inputs (Ndtri its output, of a
	// probability through Sigmoid).
	picked = ops.Add(picked, ops.Add(ops.Erfc(ops.Mul(r, q)), ops.Erfcx(ops.Sub(c, q))))
	picked = ops.Add(picked, ops.Add(ops.Ndtr(ops.Add(r, c)), ops.LogNdtr(ops.Mul(c, q))))
	picked = ops.Add(picked, ops.Ndtri(ops.Sigmoid(ops.Sub(r, c))))
	picked = ops.Add(picked, ops.Add(ops.BesselI0(ops.Mul(q, c)), ops.BesselI1(ops.Sub(r, q))))   // the inputs
	picked = ops.Add(picked, ops.Add(ops.BesselI0e(ops.Add(q, r)), ops.BesselI1e(ops.Mul(r, r)))) // and the outputs
	// The gamma family reads its inputs (Polygamma's order a constant).
	picked = ops.Add(picked, ops.Add(ops.Lgamma(ops.Exp(ops.Sub(r, q))), ops.Digamma(ops.Exp(ops.Mul(c, r)))))
	zeta := ops.Zeta(ops.Add(ops.Exp(ops.Mul(q, q)), ops.Exp(ops.Mul(c, c))), ops.Exp(ops.Sub(c, q)))
	picked = ops.Add(picked, ops.Add(ops.Polygamma(1, ops.Exp(ops.Add(q, r))), zeta))
	picked = ops.Add(picked, ops.Add(ops.Igamma(ops.Exp(ops.Mul(c, q)), ops.Exp(ops.Sub(r, c))), ops.Igammac(ops.Exp(ops.Sub(q, q)), ops.Exp(ops.Mul(r, q)))))
	// Cholesky's input is read by nothing (Add reads no values), its
	// factor only by its rule; TriangularSolve reads both operands.
	v := ops.Reshape(ops.Add(q, c), 2, 2)
	factor := ops.Cholesky(ops.Add(ops.MatMulT(v, v, false, true), tensor.FromSlice([]float64{2, 0, 0, 2}, 2, 2)))
	solved := ops.TriangularSolve(ops.Add(ops.Reshape(r, 2, 2), tensor.FromSlice([]float64{3, 0, 0, 3}, 2, 2)), ops.Reshape(ops.Mul(q, c), 2, 2), ops.TriangularSolveOpts{})
	picked = ops.Add(picked, ops.Reshape(ops.Add(factor, solved), 1, 4))
	_, logAbs := ops.Slogdet(ops.Add(ops.Reshape(ops.Mul(r, c), 2, 2), tensor.FromSlice([]float64{3, 0, 0, 3}, 2, 2))) // Slogdet reads its input
	picked = ops.Add(picked, logAbs)
	// LU's and Solve's factors read only by their rules, Solve's input not at all.
	packed, _, _ := ops.LU(ops.Add(ops.Reshape(ops.Sub(r, c), 2, 2), tensor.FromSlice([]float64{0, 3, 3, 0}, 2, 2)))
	system := ops.Solve(ops.Add(ops.Reshape(ops.Mul(q, q), 2, 2), tensor.FromSlice([]float64{3, 0, 0, 3}, 2, 2)), ops.Reshape(ops.Add(r, q), 2, 2))
	picked = ops.Add(picked, ops.Reshape(ops.Add(packed, system), 1, 4))
	picked = ops.Add(picked, ops.Reshape(ops.MatrixExp(ops.Reshape(ops.Sub(q, r), 2, 2)), 1, 4)) // MatrixExp reads its input
	values, vectors := ops.Eigh(ops.Reshape(ops.Mul(q, r), 2, 2))                                // Eigh's outputs read only by its rule
	picked = ops.Add(picked, ops.Add(ops.Reshape(vectors, 1, 4), ops.Reshape(ops.Concatenate(0, values, values), 1, 4)))
	qf, rf := ops.QR(ops.Reshape(ops.Sub(q, r), 2, 2)) // QR's outputs read only by its rule
	picked = ops.Add(picked, ops.Reshape(ops.Add(qf, rf), 1, 4))
	su, ss, svt := ops.SVD(ops.Reshape(ops.Add(q, c), 2, 2)) // SVD's outputs read only by its rule
	picked = ops.Add(picked, ops.Add(ops.Reshape(ops.Add(su, svt), 1, 4), ops.Reshape(ops.Concatenate(0, ss, ss), 1, 4)))
	return ops.Mul(ops.Add(ops.Add(ops.Add(ops.Add(ops.Tanh(r), b), q), spread), picked), c) // Tanh's output read only by its rule
}

// The cell's indices: Gather's, TakeAlongAxis's and DynamicSlice's.
var (
	indices = tensor.FromSlice([]int64{3, 0, 0, 2})
	along   = tensor.FromSlice([]int64{1, 1, 3, 0}, 1, 4)
	starts  = tensor.FromSlice([]int64{0, 0})
)

// unpoolAttrs are the cell's MaxUnpool2DGather's: a 2x2 window over
// [1 2 2 1].
var unpoolAttrs = ops.PatchesAttrs{Operand: tensor.Shape{1, 2, 2, 1}, Window: ops.Window{Dims: []int{1, 2, 2, 1}, Strides: []int{1, 2, 2, 1},
	Padding: make([][2]int, 4), BaseDilation: []int{1, 1, 1, 1}, WindowDilation: []int{1, 1, 1, 1}}}

// declaredOps are the ops cellUsingEveryDeclaredOp covers.
var declaredOps = []string{"MatMul", "Add", "Sub", "Mul", "Sigmoid", "Exp", "Relu", "Identity", "Reshape", "Transpose", "BroadcastTo", "Tanh", "Softplus", "ToDevice", "GeluTanh", "Split",
	"Broadcast", "AllGather", "MaxPool2DWithArgmax", "MaxUnpool2D", "MaxUnpool2DGather", "Gather", "TakeAlongAxis", "DynamicSlice", "Select",
	"SoftmaxGrad", "LogSoftmaxGrad", "ScatterAddZeros", "PutAlongAxisAddZeros", "Gelu", "Tan", "Exp2", "Atan2", "LogAddExp",
	"Prelu", "Relu6", "HardSigmoid", "HardSwish", "Elu", "Selu", "Silu", "Mish", "Softsign", "Erfinv",
	"Erfc", "Erfcx", "Ndtr", "LogNdtr", "Ndtri", "BesselI0", "BesselI1", "BesselI0e", "BesselI1e",
	"Lgamma", "Digamma", "Polygamma", "Zeta", "Igamma", "Igammac", "Cholesky", "Slogdet", "LU", "Solve", "MatrixExp", "Eigh", "QR", "SVD"}

// single is the communicator of the cell's collectives.
var single = collective.Single()

// must is a collective's result, its error a panic.
func must(t T, err error) T {
	if err != nil {
		panic(err)
	}
	return t
}

// Every op that declares GradReads is exercised by the loop test below.
func TestEveryGradReadsDeclarationIsCovered(t *testing.T) {
	for _, op := range eager.Ops() {
		if op.GradReads != eager.ReadsAll && !slices.Contains(declaredOps, op.Name) {
			t.Errorf("op %s declares GradReads %d but cellUsingEveryDeclaredOp does not use it", op.Name, op.GradReads)
		}
	}
}

// A stored loop lets go of the values no gradient rule reads, and its
// gradients still equal those of the same steps unrolled by hand.
func TestStoredLoopDropsUnreadValues(t *testing.T) {
	rng := tensor.NewRNG(21)
	w := tensor.RandUniform(rng, tensor.Float64, -0.5, 0.5, 4, 4)
	c := tensor.RandUniform(rng, tensor.Float64, -0.5, 0.5, 1, 4)
	h0 := tensor.RandUniform(rng, tensor.Float64, -1, 1, 1, 4)
	const steps = 6

	tp := tape.New(tape.Options{Persistent: true})
	defer tp.Stop()
	tp.Watch(w, c, h0)
	var dropped []weak.Pointer[tensor.Tensor]
	out := control.Fori(0, steps, func(_ T, v []T) []T {
		m := ops.MatMul(v[0], w) // read by nothing: Add's rule reads no values
		dropped = append(dropped, weak.Make(m))
		return []T{cellUsingEveryDeclaredOp(v[0], w, c)}
	}, []T{h0}, control.WhileOptions{})
	g := tp.Gradient(ops.Sum(out[0]), w, c, h0)

	ref := tape.New()
	ref.Watch(w, c, h0)
	h := h0
	for range steps {
		h = cellUsingEveryDeclaredOp(h, w, c)
	}
	want := ref.Gradient(ops.Sum(h), w, c, h0)
	if d := approx.Diff(vals(out[0]), vals(h), 1e-12); d != "" {
		t.Fatal("values:", d)
	}
	for i, name := range []string{"w", "c", "h0"} {
		if d := approx.Diff(vals(g[i]), vals(want[i]), 1e-12); d != "" {
			t.Errorf("gradient of %s: %s", name, d)
		}
	}
	// The products that nothing reads are gone once nothing holds them,
	// though the tape that recorded the loop lives on.
	runtime.GC()
	runtime.GC()
	gone := 0
	for _, p := range dropped {
		if p.Value() == nil {
			gone++
		}
	}
	if gone == 0 {
		t.Errorf("none of the %d unread intermediates was collected", len(dropped))
	}
	runtime.KeepAlive(tp)
}

// A value the body hands out (here kept in a slice outside the loop) stays
// readable, and a gradient through a later use of it is still right.
func TestIntermediateHeldOutsideTheLoop(t *testing.T) {
	w := tensor.FromSlice([]float64{0.5, -0.25, 0.75, 0.1}, 2, 2)
	h0 := tensor.FromSlice([]float64{1, 2}, 1, 2)
	tp := tape.New()
	tp.Watch(w, h0)
	var kept []T
	out := control.Fori(0, 3, func(_ T, v []T) []T {
		m := ops.MatMul(v[0], w)
		kept = append(kept, m)
		return []T{ops.Tanh(ops.Add(m, v[0]))}
	}, []T{h0}, control.WhileOptions{})
	loss := ops.Add(ops.Sum(out[0]), ops.Sum(ops.Mul(kept[1], kept[1])))
	g := tp.Gradient(loss, w, h0)

	ref := tape.New()
	ref.Watch(w, h0)
	h, var1 := h0, T(nil)
	for i := range 3 {
		m := ops.MatMul(h, w)
		if i == 1 {
			var1 = m
		}
		h = ops.Tanh(ops.Add(m, h))
	}
	want := ref.Gradient(ops.Add(ops.Sum(h), ops.Sum(ops.Mul(var1, var1))), w, h0)
	if d := approx.Diff(vals(kept[1]), vals(var1), 1e-12); d != "" {
		t.Fatal("the held intermediate:", d)
	}
	for i, name := range []string{"w", "h0"} {
		if d := approx.Diff(vals(g[i]), vals(want[i]), 1e-12); d != "" {
			t.Errorf("gradient of %s: %s", name, d)
		}
	}
}
