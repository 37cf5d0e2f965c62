package trace_test

import (
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/control"
	"github.com/eagerflow/eagerflow/control/trace"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// CallOwned owns nothing on the tracing call; afterwards it owns exactly
// the fresh results: not the argument handed back, not a captured value,
// not a result listed twice. Releasing what it owns leaves the next call
// right, in a straight-line graph and in one with a loop frame.
func TestCallOwnedOwnsFreshResultsOnly(t *testing.T) {
	captured := f32(7, 8)
	loop := func(x T) T {
		return control.While(
			func(v []T) T { return ops.Lt(v[0], tensor.Scalar(int64(3))) },
			func(v []T) []T { return []T{ops.Add(v[0], tensor.Scalar(int64(1))), ops.Mul(v[1], f32(2, 2))} },
			[]T{tensor.Scalar(int64(0)), x}, control.WhileOptions{})[1]
	}
	for _, c := range []struct {
		name string
		body func(x T) T
		want []float32
	}{
		{"straight", func(x T) T { return ops.Add(x, f32(1, 1)) }, []float32{2, 3}},
		{"loop", loop, []float32{8, 16}},
	} {
		f := trace.NewFunction(func(a []T) []T {
			y := c.body(a[0])
			return []T{y, a[0], captured, y}
		})
		x := f32(1, 2)
		_, owned, err := f.CallOwned(x)
		if err != nil {
			t.Fatal(err)
		}
		if slices.Contains(owned, true) {
			t.Errorf("%s: the tracing call owns %v", c.name, owned)
		}
		for i := range 3 {
			out, owned, err := f.CallOwned(x)
			if err != nil {
				t.Fatal(err)
			}
			if want := []bool{true, false, false, false}; !slices.Equal(owned, want) {
				t.Fatalf("%s: owned %v, want %v", c.name, owned, want)
			}
			if got := tensor.ToSlice[float32](out[0]); !slices.Equal(got, c.want) {
				t.Errorf("%s, call %d: %v, want %v", c.name, i, got, c.want)
			}
			if out[1] != x {
				t.Errorf("%s: the argument was not handed back", c.name)
			}
			if got := tensor.ToSlice[float32](out[2]); !slices.Equal(got, []float32{7, 8}) {
				t.Errorf("%s: the captured value came back as %v", c.name, got)
			}
			out[0].Release()
		}
		if got := tensor.ToSlice[float32](captured); !slices.Equal(got, []float32{7, 8}) {
			t.Errorf("%s: the captured tensor now holds %v", c.name, got)
		}
	}
}
