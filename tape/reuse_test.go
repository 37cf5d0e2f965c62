package tape_test

import (
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// Every program of two ops over three watched tensors (a matrix, a row
// and a scalar, so that operands broadcast), its operands any earlier
// value, the ops pass their output's gradient on (Add, Sub, Identity),
// negate it or multiply (Neg, Mul): a one-shot tape, which recycles the
// gradients it made as soon as nothing holds them, gives what a
// persistent tape, which keeps them, gives, in one pass (Gradient) and in
// two (GradientSplit, the matrix's first). The release of a gradient
// still to be reduced for another operand crashed 12 of the one-pass
// programs before it was fixed (TestGradientPassedOnToAnOperandThatHasIt),
// and 24 of the two-pass ones (the first pass recycled a node's dy
// that the second still owed); the 450000 one-pass programs of three ops
// agreed too, run once (57 s), and 28224 two-op programs over more ops
// (Max, Div, Reshape, BroadcastTo, Cast, Where, Concatenate, Sum,
// StopGradient) both ways.
func TestGradientsOfReusedValuesAgreeWithAPersistentTape(t *testing.T) {
	r := tensor.NewRNG(1)
	leaves := []*tensor.Tensor{
		tensor.RandUniform(r, tensor.Float64, -1, 1, 3, 2),
		tensor.RandUniform(r, tensor.Float64, -1, 1, 1, 2),
		tensor.Scalar(0.3),
	}
	steps := []func(a, b *tensor.Tensor) *tensor.Tensor{
		ops.Add, ops.Sub, ops.Mul,
		func(a, _ *tensor.Tensor) *tensor.Tensor { return ops.Identity(a) },
		func(a, _ *tensor.Tensor) *tensor.Tensor { return ops.Neg(a) },
	}
	gradients := func(program []int, persistent, split bool) (out []float64, err error) {
		tp := tape.New(tape.Options{Persistent: persistent})
		defer tp.Stop() // a recording tape anywhere holds every gradient back
		tp.Watch(leaves...)
		vals := slices.Clone(leaves)
		for k := 0; k < len(program); k += 3 {
			vals = append(vals, steps[program[k]](vals[program[k+1]], vals[program[k+2]]))
		}
		var g []*tensor.Tensor
		err = tensor.Catch(func() {
			y := ops.Sum(ops.Square(vals[len(vals)-1]))
			if !split {
				g = tp.Gradient(y, leaves...)
				return
			}
			first, rest := tp.GradientSplit(y, nil, leaves, 1) // the matrix's first, as overlapped all-reduces take them
			g = append(first, rest()...)
		})
		for _, gi := range g {
			if gi != nil {
				out = append(out, tensor.ToSlice[float64](gi)...)
			}
		}
		return out, err
	}
	programs, failed := 0, 0
	for o1 := range steps {
		for a1 := range 3 {
			for b1 := range 3 {
				for o2 := range steps {
					for a2 := range 4 {
						for b2 := range 4 {
							program := []int{o1, a1, b1, o2, a2, b2}
							programs++
							want, _ := gradients(program, true, false)
							for _, split := range []bool{false, true} {
								got, err := gradients(program, false, split)
								if err != nil || !slices.Equal(got, want) {
									if failed++; failed <= 5 {
										t.Errorf("program %v, split %v: %v, %v; a persistent tape gives %v", program, split, got, err, want)
									}
								}
							}
						}
					}
				}
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d programs (each one way and two) differ", failed, programs)
	}
}
