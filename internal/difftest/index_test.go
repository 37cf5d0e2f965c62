package difftest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// indexItem is one item of an indexing case, as numpy_index.py reads it.
type indexItem struct {
	Int      *int    `json:"int,omitempty"`
	Slice    []*int  `json:"slice,omitempty"`
	Ellipsis bool    `json:"ellipsis,omitempty"`
	NewAxis  bool    `json:"newaxis,omitempty"`
	Array    []int64 `json:"array,omitempty"`
	Mask     []bool  `json:"mask,omitempty"` // a boolean mask of Shape
	Shape    []int   `json:"shape,omitempty"`
}

type indexCase struct {
	ID    int         `json:"id"`
	Shape []int       `json:"shape"`
	Items []indexItem `json:"items"`
}

type indexResult struct {
	ID     int       `json:"id"`
	Error  string    `json:"error"`
	Shape  []int     `json:"shape"`
	Values []float64 `json:"values"`
	Grad   []float64 `json:"grad"`
}

// extremes are bounds and steps at the ends of int's range.
var extremes = []int{math.MaxInt, -math.MaxInt, math.MinInt, 1 << 40, -(1 << 40), math.MaxInt - 1}

// randomIndex draws a tensor shape and an index into it: ints (some out of
// range), slices with bounds left out, negative, or past the ends, steps
// of either sign, an Ellipsis, new axes and at most one index array.
func randomIndex(r *rand.Rand, id int) indexCase {
	c := indexCase{ID: id, Shape: make([]int, 1+r.IntN(4))}
	for i := range c.Shape {
		c.Shape[i] = r.IntN(6)
	}
	bound := func() *int {
		if r.IntN(4) == 0 {
			return nil
		}
		v := r.IntN(15) - 7
		if r.IntN(8) == 0 { // far past the ends: lengths that overflow if computed naively
			v = extremes[r.IntN(len(extremes))]
		}
		return &v
	}
	rank, used := len(c.Shape), 0
	ellipsis, array := false, false
	for range r.IntN(rank + 2) {
		var it indexItem
		switch k := r.IntN(10); {
		case k < 2 && used < rank:
			v := r.IntN(12) - 6
			it.Int, used = &v, used+1
		case k < 6 && used < rank:
			step := bound()
			if step != nil && *step == 0 {
				step = nil
			}
			it.Slice, used = []*int{bound(), bound(), step}, used+1
		case k == 6 && !ellipsis:
			it.Ellipsis, ellipsis = true, true
		case k == 7:
			it.NewAxis = true
		case k == 8 && !array && used < rank && r.IntN(2) == 0:
			// a boolean mask over the next dims (of their shape, or another
			// one, which both sides refuse); counts vary, so do the results
			n := min(1+r.IntN(2), rank-used)
			it.Shape = append([]int{}, c.Shape[used:used+n]...)
			if ellipsis || r.IntN(8) == 0 {
				it.Shape[0] = r.IntN(4)
			}
			for range shapeSize(it.Shape) {
				it.Mask = append(it.Mask, r.IntN(2) == 0)
			}
			array, used = true, used+n
		case k >= 8 && !array && used < rank:
			// the dimension this array indexes is known only once the
			// ellipsis is placed: draw small indices and let out-of-range
			// ones be errors on both sides
			it.Shape = []int{1 + r.IntN(3)}
			if r.IntN(3) == 0 {
				it.Shape = append(it.Shape, 2)
			}
			for range shapeSize(it.Shape) {
				it.Array = append(it.Array, int64(r.IntN(3)))
			}
			array, used = true, used+1
		default:
			continue
		}
		c.Items = append(c.Items, it)
	}
	return c
}

func shapeSize(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// goItems is the case's items as ops.Index takes them.
func (c indexCase) goItems() []any {
	var out []any
	for _, it := range c.Items {
		switch {
		case it.Int != nil:
			out = append(out, *it.Int)
		case it.Slice != nil:
			var r ops.Range
			switch start, stop := it.Slice[0], it.Slice[1]; {
			case start != nil && stop != nil:
				r = ops.R(*start, *stop)
			case start != nil:
				r = ops.From(*start)
			case stop != nil:
				r = ops.Until(*stop)
			}
			if it.Slice[2] != nil {
				r = r.Step(*it.Slice[2])
			}
			out = append(out, r)
		case it.Ellipsis:
			out = append(out, ops.Ellipsis)
		case it.NewAxis:
			out = append(out, ops.NewAxis)
		case it.Mask != nil || (it.Array == nil && it.Shape != nil):
			m := make([]bool, shapeSize(it.Shape))
			copy(m, it.Mask)
			out = append(out, tensor.FromSlice(m).View(it.Shape, nil))
		default:
			out = append(out, tensor.FromSlice(slices.Clone(it.Array), it.Shape...))
		}
	}
	return out
}

// runNumPy evaluates the cases with numpy_index.py.
func runNumPy(t *testing.T, cases []indexCase) map[int]*indexResult {
	return runCases(t, "numpy_index.py", cases, func(r *indexResult) int { return r.ID })
}

// ops.Index agrees with NumPy's indexing on random indices: shape,
// values, which indices are errors, and the gradient (np.add.at).
func TestIndexAgainstNumPy(t *testing.T) {
	needNumPy(t)
	r := rand.New(rand.NewPCG(7, 11))
	cases := make([]indexCase, 3000)
	masks := 0
	for i := range cases {
		cases[i] = randomIndex(r, i)
		for _, it := range cases[i].Items {
			if it.Array == nil && it.Shape != nil {
				masks++
			}
		}
	}
	t.Logf("%d of %d cases index with a boolean mask", masks, len(cases))
	want := runNumPy(t, cases)
	failures := 0
	for _, c := range cases {
		if msg := checkIndex(c, want[c.ID]); msg != "" {
			failures++
			if failures <= 10 {
				t.Errorf("case %d: x of shape %v, items %s: %s", c.ID, c.Shape, c.python(), msg)
			}
		}
	}
	if failures > 10 {
		t.Errorf("%d of %d cases failed", failures, len(cases))
	}
}

// checkIndex runs case c with ops.Index under a tape and compares it with
// NumPy's result w.
func checkIndex(c indexCase, w *indexResult) string {
	if w == nil {
		return "NumPy gave no result"
	}
	x := ops.Cast(tensor.Arange(0, int64(shapeSize(c.Shape)), 1), tensor.Float64)
	x = ops.Reshape(x, c.Shape...)
	var y, g *tensor.Tensor
	err := tensor.Catch(func() {
		tp := tape.New()
		tp.Watch(x)
		y = ops.Index(x, c.goItems()...)
		weights := ops.Reshape(ops.Cast(tensor.Arange(1, int64(y.NumElements())+1, 1), tensor.Float64), y.Shape()...)
		g = tp.Gradient(ops.Sum(ops.Mul(y, weights)), x)[0]
	})
	if w.Error != "" {
		if err == nil {
			return fmt.Sprintf("NumPy raised %q, Index gave %v", w.Error, y.Shape())
		}
		if !errors.Is(err, tensor.ErrIndex) {
			return fmt.Sprintf("NumPy raised %q, Index failed with %v (want ErrIndex)", w.Error, err)
		}
		return ""
	}
	if err != nil {
		// NumPy checks an index array only where the result has
		// elements; Index checks it always.
		if errors.Is(err, tensor.ErrIndex) && shapeSize(w.Shape) == 0 && c.hasArray() {
			return ""
		}
		return fmt.Sprintf("Index failed: %v", err)
	}
	if !y.Shape().Equal(w.Shape) {
		return fmt.Sprintf("shape %v, NumPy's %v", y.Shape(), w.Shape)
	}
	if got := values(y); !slices.Equal(got, w.Values) {
		return fmt.Sprintf("values %v, NumPy's %v", got, w.Values)
	}
	if got := values(g); !slices.Equal(got, w.Grad) {
		return fmt.Sprintf("gradient %v, NumPy's %v", got, w.Grad)
	}
	return ""
}

func (c indexCase) hasArray() bool {
	return slices.ContainsFunc(c.Items, func(it indexItem) bool { return it.Shape != nil })
}

// python is c's index as Python source, for failure messages.
func (c indexCase) python() string {
	var parts []string
	str := func(v *int) string {
		if v == nil {
			return ""
		}
		return fmt.Sprint(*v)
	}
	for _, it := range c.Items {
		switch {
		case it.Int != nil:
			parts = append(parts, fmt.Sprint(*it.Int))
		case it.Slice != nil:
			s := str(it.Slice[0]) + ":" + str(it.Slice[1])
			if it.Slice[2] != nil {
				s += ":" + str(it.Slice[2])
			}
			parts = append(parts, s)
		case it.Ellipsis:
			parts = append(parts, "...")
		case it.NewAxis:
			parts = append(parts, "None")
		case it.Array == nil:
			parts = append(parts, fmt.Sprintf("mask(%v).reshape(%v)", it.Mask, it.Shape))
		default:
			parts = append(parts, fmt.Sprintf("array(%v).reshape(%v)", it.Array, it.Shape))
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}
