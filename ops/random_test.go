package ops_test

import (
	"bytes"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// DropoutAt, its mask drawn from a block a tensor names, is Dropout bit
// for bit where Dropout's RNG drew from that block (a twin RNG's
// reservation gives it), in value and in gradient, for float32 and
// float64; and RngBernoulliAt refuses bad positions and attributes.
func TestDropoutAtFollowsDropout(t *testing.T) {
	for _, dt := range []tensor.DType{tensor.Float32, tensor.Float64} {
		r, twin := tensor.NewRNG(5), tensor.NewRNG(5)
		x := ops.Cast(tensor.RandNormal(tensor.NewRNG(6), tensor.Float64, 4, 9), dt)
		for step := range 2 {
			tp := tape.New()
			tp.Watch(x)
			want := ops.Dropout(x, 0.3, r)
			wantGrad := tp.Gradient(ops.Sum(ops.Mul(want, want)), x)[0]
			base := twin.Reserve(2 * x.NumElements())
			starts := tensor.FromSlice([]int64{99, int64(base) - 3}, 2)
			tp = tape.New()
			tp.Watch(x)
			got := ops.DropoutAt(x, 0.3, starts, 1, 3, twin.Key())
			gotGrad := tp.Gradient(ops.Sum(ops.Mul(got, got)), x)[0]
			if !bytes.Equal(got.HostBytes(), want.HostBytes()) || !bytes.Equal(gotGrad.HostBytes(), wantGrad.HostBytes()) {
				t.Errorf("%v, draw %d: DropoutAt differs from Dropout", dt, step)
			}
		}
	}
	starts := tensor.FromSlice([]int64{1, 2}, 2)
	for what, bad := range map[string]func(){
		"Int32 starts": func() { ops.RngBernoulliAt(tensor.FromSlice([]int32{1}, 1), 0, 0, [2]uint32{}, tensor.Float32, 0.5, 2) },
		"a matrix of starts": func() {
			ops.RngBernoulliAt(tensor.FromSlice([]int64{1, 2}, 1, 2), 0, 0, [2]uint32{}, tensor.Float32, 0.5, 2)
		},
		"a slot past starts": func() { ops.RngBernoulliAt(starts, 2, 0, [2]uint32{}, tensor.Float32, 0.5, 2) },
		"p of 2":             func() { ops.RngBernoulliAt(starts, 0, 0, [2]uint32{}, tensor.Float32, 2, 2) },
		"a negative dim":     func() { ops.RngBernoulliAt(starts, 0, 0, [2]uint32{}, tensor.Float32, 0.5, -2) },
		"a rate of 1":        func() { ops.DropoutAt(tensor.FromSlice([]float32{1}, 1), 1, starts, 0, 0, [2]uint32{}) },
		"integer x":          func() { ops.DropoutAt(tensor.FromSlice([]int32{1}, 1), 0.5, starts, 0, 0, [2]uint32{}) },
	} {
		if err := tensor.Catch(bad); err == nil {
			t.Errorf("%s: no error", what)
		}
	}
}
