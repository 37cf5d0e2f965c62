package ops_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// Index is compared with NumPy on thousands of random indices by
// internal/difftest (TestIndexAgainstNumPy); these are its documented
// examples and its errors.
func TestIndexForms(t *testing.T) {
	x := ops.Reshape(tensor.Arange[int64](0, 8*28*28, 1), 8, 28, 28, 1)
	ids := tensor.FromSlice([]int64{3, 0, 7, 3})
	for _, c := range []struct {
		name  string
		got   *tensor.Tensor
		shape tensor.Shape
		first int64
	}{
		{"x[2:5]", ops.Index(x, ops.R(2, 5)), tensor.Shape{3, 28, 28, 1}, 2 * 784},
		{"x[0]", ops.Index(x, 0), tensor.Shape{28, 28, 1}, 0},
		{"x[..., 0]", ops.Index(x, ops.Ellipsis, 0), tensor.Shape{8, 28, 28}, 0},
		{"x[:, ::2, ::-1]", ops.Index(x, ":", "::2", "::-1"), tensor.Shape{8, 14, 28, 1}, 27},
		{"x[:, ::2, ::-1] typed", ops.Index(x, ops.Range{}, ops.Every(2), ops.Every(-1)), tensor.Shape{8, 14, 28, 1}, 27},
		{"x[-1, None]", ops.Index(x, -1, ops.NewAxis), tensor.Shape{1, 28, 28, 1}, 7 * 784},
		{"x[ids]", ops.Index(x, ids), tensor.Shape{4, 28, 28, 1}, 3 * 784},
		{"x[1:, -3]", ops.Index(x, ops.From(1), "-3"), tensor.Shape{7, 28, 1}, 784 + 25*28},
		{"x[:3, 1, 2:4, 0]", ops.Index(x, ops.Until(3), 1, ops.R(2, 4), 0), tensor.Shape{3, 2}, 28 + 2},
		{"x[5:1:-2]", ops.Index(x, ops.R(5, 1).Step(-2)), tensor.Shape{2, 28, 28, 1}, 5 * 784},
		{"x[100:]", ops.Index(x, "100:"), tensor.Shape{0, 28, 28, 1}, -1},
		{"x[0, :, ids]: the array's dimension goes first", ops.Index(x, 0, ":", ids), tensor.Shape{4, 28, 1}, 3},
		{"x[]", ops.Index(x), tensor.Shape{8, 28, 28, 1}, 0},
		// Steps at the ends of int's range (issue 31: the length overflowed).
		{"x[::maxsize]", ops.Index(x, ops.Every(math.MaxInt)), tensor.Shape{1, 28, 28, 1}, 0},
		{"x[::-maxsize]", ops.Index(x, ops.Every(-math.MaxInt)), tensor.Shape{1, 28, 28, 1}, 7 * 784},
		{"x[5::MinInt]", ops.Index(x, ops.From(5).Step(math.MinInt)), tensor.Shape{1, 28, 28, 1}, 5 * 784},
		{"x[maxsize-1::2]", ops.Index(x, ops.From(math.MaxInt-1).Step(math.MaxInt)), tensor.Shape{0, 28, 28, 1}, -1},
		{"x[1:maxsize:maxsize-1]", ops.Index(x, ops.R(1, math.MaxInt).Step(math.MaxInt-1)), tensor.Shape{1, 28, 28, 1}, 784},
		// An Ellipsis standing for no dimension still parts the advanced
		// items around it, so the array's dimension goes first (NumPy).
		{"x[:, ids, ..., 0, :]", ops.Index(x, ":", ids, ops.Ellipsis, 0, ":"), tensor.Shape{4, 8, 1}, 3 * 28},
	} {
		if !c.got.Shape().Equal(c.shape) {
			t.Errorf("%s: shape %v, want %v", c.name, c.got.Shape(), c.shape)
			continue
		}
		if c.first >= 0 && tensor.ToSlice[int64](c.got)[0] != c.first {
			t.Errorf("%s: first element %d, want %d", c.name, tensor.ToSlice[int64](c.got)[0], c.first)
		}
	}
	if got := ops.Index(x, "...", 0); !slices.Equal(tensor.ToSlice[int64](got), tensor.ToSlice[int64](ops.Index(x, ops.Ellipsis, 0))) {
		t.Error(`"..." differs from Ellipsis`)
	}
}

func TestIndexErrors(t *testing.T) {
	x := tensor.Zeros(tensor.Float32, 2, 3)
	for _, c := range []struct {
		name  string
		items []any
		kind  error
		text  string
	}{
		{"int past the end", []any{0, 3}, tensor.ErrIndex, "item 1: index 3 is outside dimension 1 of size 3"},
		{"negative past the start", []any{-3}, tensor.ErrIndex, "item 0: index -3 is outside dimension 0 of size 2"},
		{"zero step", []any{ops.Every(0)}, tensor.ErrAttr, "item 0: ::0 has a zero step"},
		{"zero step text", []any{"::0"}, tensor.ErrAttr, "::0 has a zero step"},
		{"two ellipses", []any{ops.Ellipsis, "..."}, tensor.ErrAttr, "2 Ellipses; at most one"},
		{"too many", []any{0, 0, 0}, tensor.ErrAttr, "3 items index dimensions of a rank-2 tensor"},
		{"float", []any{1.5}, tensor.ErrAttr, "item 0 has type float64; use an int"},
		{"bad text", []any{"a:b"}, tensor.ErrAttr, `"a:b": "a" is not an integer`},
		{"not a slice", []any{"x"}, tensor.ErrAttr, `"x" is not an index or a slice`},
		{"colons", []any{"1:2:3:4"}, tensor.ErrAttr, "more than two colons"},
		{"float tensor", []any{tensor.FromSlice([]float32{0})}, tensor.ErrAttr, "an index tensor must be int32, int64 or (a mask) bool, got float32"},
		{"two tensors", []any{tensor.FromSlice([]int32{0}), tensor.FromSlice([]int32{0})}, tensor.ErrAttr, "2 index tensors"},
		{"tensor out of range", []any{tensor.FromSlice([]int32{2})}, tensor.ErrIndex, "Index: Gather: index 2"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := catch(func() *tensor.Tensor { return ops.Index(x, c.items...) })
			wantErr(t, c.name, err, c.kind, c.text)
			if err != nil && !slices.Contains([]string{"tensor out of range"}, c.name) {
				if want := "ops: Index:"; len(err.Error()) < len(want) || err.Error()[:len(want)] != want {
					t.Errorf("error %q does not start with %q", err, want)
				}
			}
		})
	}
}

func ExampleIndex() {
	x := ops.Reshape(tensor.Arange[int64](0, 24, 1), 2, 3, 4)
	fmt.Println(ops.Index(x, 1, ops.R(0, 2), -1))                         // x[1, 0:2, -1]
	fmt.Println(ops.Index(x, ops.Ellipsis, "::2"))                        // x[..., ::2]
	fmt.Println(ops.Index(x, 0, ops.NewAxis).Shape())                     // x[0, None]
	fmt.Println(ops.Index(x, tensor.FromSlice([]int64{1, 1, 0})).Shape()) // x[[1, 1, 0]]
	// Output:
	// [15 19] int64[2]
	// [[[ 0  2]
	//   [ 4  6]
	//   [ 8 10]]
	//
	//  [[12 14]
	//   [16 18]
	//   [20 22]]] int64[2 3 2]
	// [1 3 4]
	// [3 3 4]
}
