package cpu

import (
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// An operand broadcast along the leading dims only (periodic) on either
// side of a non-commutative op, for periods shorter and longer than the
// tile and sizes that leave a partial last piece, against a plain loop.
func TestPeriodicBroadcast(t *testing.T) {
	rng := tensor.NewRNG(5)
	for _, c := range []struct{ full, part tensor.Shape }{
		{tensor.Shape{7, 5, 3}, tensor.Shape{3}},
		{tensor.Shape{7, 5, 3}, tensor.Shape{5, 3}},
		{tensor.Shape{3, 9000}, tensor.Shape{9000}},
		{tensor.Shape{4, 3, 6}, tensor.Shape{1, 1, 6}},
		{tensor.Shape{1000, 7}, tensor.Shape{7}},
	} {
		x := tensor.RandNormal(rng, tensor.Float32, c.full...)
		b := tensor.RandNormal(rng, tensor.Float32, c.part...)
		xv, bv := tensor.ToSlice[float32](x), tensor.ToSlice[float32](b)
		left := tensor.ToSlice[float32](ops.Sub(x, b))
		right := tensor.ToSlice[float32](ops.Sub(b, x))
		for i, v := range xv {
			w := bv[i%len(bv)]
			if left[i] != v-w || right[i] != w-v {
				t.Fatalf("%v - %v: element %d is %v and %v, want %v and %v", c.full, c.part, i, left[i], right[i], v-w, w-v)
			}
		}
	}
}
