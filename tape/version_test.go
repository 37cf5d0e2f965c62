package tape_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tape"
	"github.com/eagerflow/eagerflow/tensor"
)

// A gradient whose rule would read a variable assigned after its op ran
// refuses, naming the variable and the op (it used the new values,
// silently: dy/dx of w·x came out as the new w); one whose rules read
// no such value, or that is taken before the assignment, is unaffected.
func TestGradientRefusesVariablesAssignedSince(t *testing.T) {
	x := tensor.FromSlice([]float32{5, 7}, 2)
	newW := func() *tape.Variable { return tape.NewVariable("w", tensor.FromSlice([]float32{2, 3}, 2)) }
	hundreds := tensor.FromSlice([]float32{100, 100}, 2)

	w := newW()
	tp := tape.New()
	tp.Watch(x)
	y := ops.Sum(ops.Mul(w.Value(), x))
	w.Assign(hundreds)
	err := tensor.Catch(func() { tp.Gradient(y, x) })
	if err == nil || !strings.Contains(err.Error(), `variable "w", input 0 of Mul, was assigned after the op ran`) {
		t.Errorf("the product's gradient after assigning w: %v", err)
	}

	// An optimizer's in-place step counts as an assignment too.
	w = newW()
	tp = tape.New(tape.Options{Persistent: true})
	tp.Watch(x)
	y = ops.Sum(ops.Mul(w.Value(), x))
	g := tp.Gradient(y, w.Value())[0] // before: fine
	if got := tensor.ToSlice[float32](g); got[0] != 5 || got[1] != 7 {
		t.Errorf("dy/dw = %v, want [5 7]", got)
	}
	w.AssignScaled(-0.1, g)
	if err := tensor.Catch(func() { tp.Gradient(y, x) }); err == nil || !strings.Contains(err.Error(), `variable "w"`) {
		t.Errorf("a persistent tape asked again after the step: %v", err)
	}

	// A sum's gradient reads no values: the assignment changes nothing.
	w = newW()
	tp = tape.New()
	y = ops.Sum(ops.Add(w.Value(), x))
	w.Assign(hundreds)
	if got := tensor.ToSlice[float32](tp.Gradient(y, w.Value())[0]); got[0] != 1 || got[1] != 1 {
		t.Errorf("dy/dw of a sum = %v, want [1 1]", got)
	}

	// An op off the path from the target is not differentiated.
	w = newW()
	tp = tape.New()
	tp.Watch(x)
	_ = ops.Mul(w.Value(), w.Value())
	y = ops.Sum(ops.Square(x))
	w.Assign(hundreds)
	if got := tensor.ToSlice[float32](tp.Gradient(y, x)[0]); got[0] != 10 || got[1] != 14 {
		t.Errorf("dy/dx = %v, want [10 14]", got)
	}
}

// An embedding lookup's rule reads the indices, not the table: a table
// assigned (an optimizer's step) between the lookup and the gradient
// leaves the gradient right, and the tape takes it. A variable holding
// the indices is still refused: the rule would scatter by the new ones.
func TestGradientOfALookupAfterTheTableIsAssigned(t *testing.T) {
	table := tape.NewVariable("table", tensor.FromSlice([]float32{1, 2, 3, 4, 5, 6}, 3, 2))
	ids := tensor.FromSlice([]int64{2, 0, 2})
	tp := tape.New(tape.Options{Persistent: true})
	y := ops.Sum(ops.Gather(table.Value(), ids, 0))
	table.Assign(tensor.Zeros(tensor.Float32, 3, 2))
	var g *tensor.Tensor
	if err := tensor.Catch(func() { g = tp.Gradient(y, table.Value())[0] }); err != nil {
		t.Fatalf("the lookup's gradient after assigning the table: %v", err)
	}
	if got := tensor.ToSlice[float32](g); !slices.Equal(got, []float32{1, 1, 0, 0, 2, 2}) {
		t.Errorf("d/dtable = %v, want [1 1 0 0 2 2]", got)
	}

	which := tape.NewVariable("which", tensor.FromSlice([]int64{1, 1}))
	x := tensor.FromSlice([]float32{5, 7}, 2)
	tp = tape.New()
	tp.Watch(x)
	y = ops.Sum(ops.Gather(x, which.Value(), 0))
	which.Assign(tensor.FromSlice([]int64{0, 0}))
	if err := tensor.Catch(func() { tp.Gradient(y, x) }); err == nil || !strings.Contains(err.Error(), `variable "which", input 1 of Gather`) {
		t.Errorf("the lookup's gradient after assigning its indices: %v", err)
	}
}
