package ops_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// The internal ops public functions reach (TopK's ArgTopK, Gather's and
// TakeAlongAxis's gradients ScatterAddZeros and PutAlongAxisAddZeros, the
// softmaxes' gradients) refuse bad inputs
// with typed errors naming what is wrong, as a direct call (a graph's,
// a rewrite's) would meet them.
func TestInternalOpsBadInput(t *testing.T) {
	m := tensor.RandNormal(tensor.NewRNG(1), tensor.Float32, 2, 3)
	run := func(name string, attrs any, in ...*tensor.Tensor) func() {
		return func() { eager.Run(eager.Lookup(name), attrs, in...) }
	}
	for _, c := range []struct {
		name string
		fn   func()
		kind error
		msg  string
	}{
		{"ArgTopK k above the line", run("ArgTopK", opattr.TopKAttrs{K: 4}, m), tensor.ErrValue, "k 4 is outside [0, last dimension 3]"},
		{"ArgTopK negative k", run("ArgTopK", opattr.TopKAttrs{K: -1}, m), tensor.ErrValue, "k -1"},
		{"ArgTopK scalar", run("ArgTopK", opattr.TopKAttrs{K: 0}, tensor.Scalar(float32(1))), tensor.ErrRank, "rank 1 or more"},
		{"ArgTopK bool", run("ArgTopK", opattr.TopKAttrs{K: 1}, tensor.Zeros(tensor.Bool, 3)), tensor.ErrDType, ""},
		{"ScatterAddZeros indices not in the updates", run("ScatterAddZeros", opattr.ScatterZerosAttrs{Axis: 1, Size: 5}, m, tensor.FromSlice([]int64{0, 1})),
			tensor.ErrShape, "do not hold indices [2] at axis 1"},
		{"ScatterAddZeros float indices", run("ScatterAddZeros", opattr.ScatterZerosAttrs{Axis: 0, Size: 5}, m, tensor.FromSlice([]float32{0, 1})), tensor.ErrDType, ""},
		{"ScatterAddZeros index past the size", run("ScatterAddZeros", opattr.ScatterZerosAttrs{Axis: 0, Size: 2}, m, tensor.FromSlice([]int64{0, 2})),
			tensor.ErrIndex, "index 2 at position 1 is outside [0, 2)"},
		{"PutAlongAxisAddZeros shapes", run("PutAlongAxisAddZeros", opattr.ScatterZerosAttrs{Axis: 1, Size: 4}, m, tensor.FromSlice([]int64{0, 1}, 1, 2)),
			tensor.ErrShape, "indices [1 2] and updates [2 3] must match"},
		{"PutAlongAxisAddZeros index past the size", run("PutAlongAxisAddZeros", opattr.ScatterZerosAttrs{Axis: 1, Size: 2}, m, tensor.FromSlice([]int64{0, 1, 2, 1, 1, 0}, 2, 3)),
			tensor.ErrIndex, "index 2 at position 2 is outside [0, 2)"},
		{"SoftmaxGrad shapes", run("SoftmaxGrad", nil, m, tensor.Zeros(tensor.Float32, 3, 2)), tensor.ErrShape, "y [2 3] and dy [3 2] differ"},
		{"LogSoftmaxGrad dtypes", run("LogSoftmaxGrad", nil, m, tensor.Zeros(tensor.Float64, 2, 3)), tensor.ErrDType, ""},
		{"LogSoftmaxGrad scalar", run("LogSoftmaxGrad", nil, tensor.Scalar(float32(1)), tensor.Scalar(float32(1))), tensor.ErrRank, "rank 1 or more"},
		{"SoftmaxGrad integers", run("SoftmaxGrad", nil, tensor.Zeros(tensor.Int32, 2), tensor.Zeros(tensor.Int32, 2)), tensor.ErrDType, ""},
	} {
		before := tensor.ToSlice[float32](m)
		err := tensor.Catch(c.fn)
		if !errors.Is(err, c.kind) || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: %v, want %v containing %q", c.name, err, c.kind, c.msg)
		}
		if after := tensor.ToSlice[float32](m); !slices.Equal(after, before) {
			t.Errorf("%s changed its input", c.name)
		}
	}
}
