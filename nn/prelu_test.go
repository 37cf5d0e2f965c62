package nn_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/nn"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// PReLU's slopes apply per feature in both layouts (and one for all),
// learn from the gradient of min(x, 0), and a count of features that is
// not the slopes' is an error naming both.
func TestPReLU(t *testing.T) {
	x := tensor.FromSlice([]float32{-1, 2, -3, -4, 5, -6, -7, 8}, 1, 2, 2, 2) // NHWC: two features
	for _, c := range []struct {
		format ops.DataFormat
		want   []float32
		dalpha []float32 // Σ min(x, 0) over each feature
	}{
		{ops.NHWC, []float32{-0.1, 2, -0.3, -0.8, 5, -1.2, -0.7, 8}, []float32{-11, -10}},
		{ops.NCHW, []float32{-0.1, 2, -0.3, -0.4, 5, -1.2, -1.4, 8}, []float32{-8, -13}},
	} {
		p := nn.NewPReLU("act", 2, 0.25, c.format, tensor.Float32)
		p.Alpha.Assign(tensor.FromSlice([]float32{0.1, 0.2}))
		tp := tape.New()
		y := p.Forward(x)
		got := tensor.ToSlice[float32](y)
		for i := range got {
			if d := got[i] - c.want[i]; d > 1e-6 || d < -1e-6 {
				t.Fatalf("%v: %v, want %v", c.format, got, c.want)
			}
		}
		g := tensor.ToSlice[float32](tp.Gradient(ops.Sum(y), p.Alpha.Value())[0])
		if g[0] != c.dalpha[0] || g[1] != c.dalpha[1] {
			t.Errorf("%v: alpha's gradient %v, want %v", c.format, g, c.dalpha)
		}
	}
	one := nn.NewPReLU("act", 1, 0.25, ops.NHWC, tensor.Float32)
	if got := tensor.ToSlice[float32](one.Forward(tensor.FromSlice([]float32{-4, 4}))); got[0] != -1 || got[1] != 4 {
		t.Errorf("one slope: %v, want [-1 4]", got)
	}
	if s := one.String(); s != "PReLU act: 1 slopes" {
		t.Errorf("String() = %q", s)
	}
	err := tensor.Catch(func() { nn.NewPReLU("act", 3, 0.25, ops.NHWC, tensor.Float32).Forward(x) })
	if !errors.Is(err, tensor.ErrShape) || !strings.Contains(err.Error(), "3 slopes") {
		t.Errorf("3 slopes over 2 features: %v", err)
	}
	if err := tensor.Catch(func() { nn.NewPReLU("act", 0, 0.25, ops.NHWC, tensor.Float32) }); !errors.Is(err, tensor.ErrValue) {
		t.Errorf("no slopes: %v", err)
	}
}
