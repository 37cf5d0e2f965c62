package collective_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// One process: every collective returns a fresh copy of its input (the
// input untouched), Send/Recv pair up by tag in order, and bad arguments
// are errors as the engines give them.
func TestSingle(t *testing.T) {
	c := collective.Single()
	if c.Rank() != 0 || c.Size() != 1 {
		t.Fatalf("rank %d of %d", c.Rank(), c.Size())
	}
	x := tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 2, 3)
	check := func(name string, got *tensor.Tensor, err error, shape tensor.Shape, want []float32) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got == x || !slices.Equal(got.Shape(), shape) || !slices.Equal(tensor.ToSlice[float32](got), want) {
			t.Errorf("%s = %v %v, want a copy %v %v", name, got.Shape(), tensor.ToSlice[float32](got), shape, want)
		}
	}
	vals := tensor.ToSlice[float32](x)
	for _, op := range []collective.Op{collective.Sum, collective.Mean, collective.Max, collective.Min} {
		got, err := c.AllReduce(x, op)
		check("AllReduce "+op.String(), got, err, tensor.Shape{2, 3}, vals)
	}
	got, err := c.Broadcast(x, 0)
	check("Broadcast", got, err, tensor.Shape{2, 3}, vals)
	got, err = c.AllGather(x)
	check("AllGather", got, err, tensor.Shape{1, 2, 3}, vals)
	got, err = c.ReduceScatter(x, collective.Sum)
	check("ReduceScatter", got, err, tensor.Shape{2, 3}, vals)
	tr := x.View(tensor.Shape{3, 2}, tensor.Layout{0, 1})
	got, err = c.AllReduce(tr, collective.Sum)
	check("AllReduce of a transposed view", got, err, tensor.Shape{3, 2}, []float32{1, 4, 2, 5, 3, 6})

	if err := c.Send(x, 0, 7); err != nil {
		t.Fatal(err)
	}
	if err := c.Send(tensor.FromSlice([]float32{9, 8, 7, 6, 5, 4}), 0, 7); err != nil {
		t.Fatal(err)
	}
	got, err = c.Recv(tensor.Zeros(tensor.Float32, 3, 2), 0, 7)
	check("Recv 1", got, err, tensor.Shape{3, 2}, vals)
	got, err = c.Recv(tensor.Zeros(tensor.Float32, 6), 0, 7)
	check("Recv 2", got, err, tensor.Shape{6}, []float32{9, 8, 7, 6, 5, 4})
	if err := c.Barrier(); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tensor.ToSlice[float32](x), []float32{1, 2, 3, 4, 5, 6}) {
		t.Errorf("the input changed: %v", tensor.ToSlice[float32](x))
	}

	bad := []struct {
		name, want string
		err        error
	}{
		{"Mean of ints", "a mean needs floats", second(c.AllReduce(tensor.FromSlice([]int32{1}), collective.Mean))},
		{"bool", "cannot be reduced", second(c.AllReduce(tensor.FromSlice([]bool{true}), collective.Max))},
		{"op", "unknown op", second(c.AllReduce(x, collective.Op(9)))},
		{"nil", "nil tensor", second(c.AllGather(nil))},
		{"root", "root 1 outside", second(c.Broadcast(x, 1))},
		{"scalar scatter", "no first dimension", second(c.ReduceScatter(tensor.Scalar(float32(1)), collective.Sum))},
		{"send to 1", "rank 1 (of 1)", c.Send(x, 1, 0)},
		{"nothing sent", "nothing was sent with tag 3", second(c.Recv(x, 0, 3))},
		{"wrong size", "the receiver expects", func() error {
			_ = c.Send(x, 0, 4)
			return second(c.Recv(tensor.Zeros(tensor.Float32, 5), 0, 4))
		}()},
	}
	for _, b := range bad {
		if b.err == nil || !errors.Is(b.err, collective.ErrCollective) || !strings.Contains(b.err.Error(), b.want) {
			t.Errorf("%s: error %v, want ErrCollective saying %q", b.name, b.err, b.want)
		}
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Barrier(); err == nil {
		t.Error("Barrier after Close: no error")
	}
	if _, err := c.AllReduce(x, collective.Sum); err == nil {
		t.Error("AllReduce after Close: no error")
	}
}

func second[T any](_ T, err error) error { return err }

// The half types go through the collectives as float32, rounded once:
// on one rank each is the identity (AllGather adds the rank dimension),
// the dtype kept, and a tape differentiates through them.
func TestHalfCollectives(t *testing.T) {
	c := collective.Single()
	for _, dt := range []tensor.DType{tensor.BFloat16, tensor.Float16} {
		x := ops.Cast(tensor.FromSlice([]float32{1.5, -2, 0.25, 3}, 2, 2), dt)
		for name, f := range map[string]func() (*tensor.Tensor, error){
			"AllReduce sum":  func() (*tensor.Tensor, error) { return c.AllReduce(x, collective.Sum) },
			"AllReduce mean": func() (*tensor.Tensor, error) { return c.AllReduce(x, collective.Mean) },
			"Broadcast":      func() (*tensor.Tensor, error) { return c.Broadcast(x, 0) },
			"ReduceScatter":  func() (*tensor.Tensor, error) { return c.ReduceScatter(x, collective.Sum) },
		} {
			got, err := f()
			if err != nil {
				t.Fatalf("%v %s: %v", dt, name, err)
			}
			if got.DType() != dt || !slices.Equal(tensor.ToSlice[float32](ops.Cast(got, tensor.Float32)), []float32{1.5, -2, 0.25, 3}) {
				t.Errorf("%v %s: %v", dt, name, got)
			}
		}
		g, err := c.AllGather(x)
		if err != nil || g.DType() != dt || !g.Shape().Equal(tensor.Shape{1, 2, 2}) {
			t.Errorf("%v AllGather: %v, %v", dt, g, err)
		}
		tp := tape.New()
		tp.Watch(x)
		y, err := c.AllReduce(x, collective.Sum)
		if err != nil {
			t.Fatal(err)
		}
		if gr := tp.Gradient(ops.Sum(y), x)[0]; gr == nil || gr.DType() != dt {
			t.Errorf("%v: gradient %v", dt, gr)
		}
	}
}
