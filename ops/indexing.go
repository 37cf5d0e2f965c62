package ops

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/eagerflow/eagerflow/tensor"
)

// Range selects the positions start, start+step, ... before stop along one
// dimension, as a Python slice does: negative bounds count from the end,
// bounds beyond the dimension are clamped, a negative step walks
// backwards, and bounds left out mean "from the beginning" and "to the
// end" (in the step's direction). Make one with R, From, Until or Every
// and change its step with Step; the zero Range is the whole dimension
// (Python's ":").
type Range struct {
	start, stop, step          int
	hasStart, hasStop, hasStep bool
}

// R is the range start:stop.
func R(start, stop int) Range { return Range{start: start, stop: stop, hasStart: true, hasStop: true} }

// From is the range start: (to the end).
func From(start int) Range { return Range{start: start, hasStart: true} }

// Until is the range :stop (from the beginning).
func Until(stop int) Range { return Range{stop: stop, hasStop: true} }

// Every is the range ::step (the whole dimension, every step-th position;
// Every(-1) reverses it).
func Every(step int) Range { return Range{step: step, hasStep: true} }

// Step returns r taking every k-th position (k < 0 walks backwards; Index
// refuses 0).
func (r Range) Step(k int) Range {
	r.step, r.hasStep = k, true
	return r
}

// String is r in Python's slice syntax.
func (r Range) String() string {
	var b strings.Builder
	if r.hasStart {
		b.WriteString(strconv.Itoa(r.start))
	}
	b.WriteByte(':')
	if r.hasStop {
		b.WriteString(strconv.Itoa(r.stop))
	}
	if r.hasStep {
		b.WriteByte(':')
		b.WriteString(strconv.Itoa(r.step))
	}
	return b.String()
}

type marker int

const (
	// Ellipsis stands for as many whole dimensions as the other index
	// items leave (NumPy's "..."); at most one per Index call.
	Ellipsis marker = iota + 1
	// NewAxis inserts a dimension of size 1 (NumPy's np.newaxis).
	NewAxis
)

func (m marker) String() string {
	if m == Ellipsis {
		return "..."
	}
	return "NewAxis"
}

// Index selects from x as NumPy's basic indexing x[items...] does, one
// item per dimension from the first:
//
//   - an int picks one position and drops the dimension (negative counts
//     from the end; outside the dimension is ErrIndex);
//   - a Range (R, From, Until, Every) keeps a slice of it;
//   - a string in Python's slice syntax, for literal slices: ":", "1:",
//     ":-2", "::2", "3:0:-1", "..." (Ellipsis), "5" (an int);
//   - Ellipsis stands for as many whole dimensions as are left over;
//   - NewAxis inserts a dimension of size 1;
//   - one integer tensor (int32 or int64, any shape) picks positions
//     along its dimension as Gather does: that dimension is replaced by
//     the tensor's shape;
//   - or one bool tensor, a mask over as many dimensions as it has
//     (its shape theirs): those dimensions are replaced by one, of the
//     elements where the mask is true, in row-major order (NumPy's
//     x[mask]; see MaskedSelect, and Nonzero for the count's rules).
//
// Dimensions after the last item are kept whole. For example, with x of
// shape [8 28 28 1]:
//
//	Index(x, R(2, 5))               // x[2:5]       [3 28 28 1]
//	Index(x, 0)                     // x[0]         [28 28 1]
//	Index(x, Ellipsis, 0)           // x[..., 0]    [8 28 28]
//	Index(x, ":", "::2", "::-1")    // x[:, ::2, ::-1]  [8 14 28 1]
//	Index(x, -1, NewAxis)           // x[-1, None]  [1 28 28 1]
//	Index(x, ids)                   // x[ids] with ids int64 [4]: [4 28 28 1]
//	Index(x, keep)                  // x[keep] with keep bool [8], 5 true: [5 28 28 1]
//
// The result is differentiable (Slice, Rev, Reshape and Gather
// underneath, each run only when needed). Bad items (another type, a
// second Ellipsis or tensor, more items than dimensions, a zero step, a
// string that is not a slice) are ErrAttr.
func Index(x *tensor.Tensor, items ...any) *tensor.Tensor {
	defer asOp("Index")
	if x == nil {
		panic(tensor.NewError("ops", "Index", tensor.ErrArity, nil, "", "x is nil"))
	}
	for i, it := range items {
		if m, ok := it.(*tensor.Tensor); ok && m != nil && m.DType() == tensor.Bool {
			x, items = maskToIndex(x, items, i, m)
			break
		}
	}
	p := parseIndex(x, items)
	y := x
	if len(p.rev) > 0 {
		y = Rev(y, p.rev...)
	}
	if p.slices {
		y = Slice(y, p.start, p.limit, p.stride)
	}
	if !y.Shape().Equal(p.kept) {
		y = Reshape(y, p.kept...)
	}
	if p.take != nil {
		y = Gather(y, p.take, p.takeAxis)
		if p.takeFirst && p.takeAxis > 0 {
			r := p.take.Rank()
			perm := make([]int, 0, y.Rank())
			for i := range r {
				perm = append(perm, p.takeAxis+i)
			}
			for i := range y.Rank() {
				if i < p.takeAxis || i >= p.takeAxis+r {
					perm = append(perm, i)
				}
			}
			y = Transpose(y, perm...)
		}
	}
	return y
}

// indexPlan is how Index computes x[items]: reverse rev, slice the box,
// reshape to kept (dropping the int dimensions, inserting new axes), then
// gather take along takeAxis of kept, moving its dimensions to the front
// when takeFirst.
type indexPlan struct {
	rev                  []int
	start, limit, stride []int
	slices               bool // the box is not all of x
	kept                 tensor.Shape
	take                 *tensor.Tensor
	takeAxis             int
	takeFirst            bool
}

// parseIndex checks items against x and plans Index.
func parseIndex(x *tensor.Tensor, items []any) *indexPlan {
	fail := func(kind error, format string, args ...any) {
		panic(tensor.NewError("ops", "Index", kind, []*tensor.Tensor{x}, describeItems(items), format, args...))
	}
	// Normalise strings, count the items that consume a dimension.
	norm := make([]any, len(items))
	consumed, ellipses, tensors := 0, 0, 0
	for i, it := range items {
		if s, ok := it.(string); ok {
			v, err := parseSliceText(s)
			if err != nil {
				fail(tensor.ErrAttr, "item %d: %v", i, err)
			}
			it = v
		}
		switch v := it.(type) {
		case int, Range:
			consumed++
		case marker:
			if v == Ellipsis {
				ellipses++
			} else if v != NewAxis {
				fail(tensor.ErrAttr, "item %d: unknown marker %d", i, int(v))
			}
		case *tensor.Tensor:
			if v == nil {
				fail(tensor.ErrAttr, "item %d is a nil tensor", i)
			}
			if dt := v.DType(); dt != tensor.Int32 && dt != tensor.Int64 {
				fail(tensor.ErrAttr, "item %d: an index tensor must be int32, int64 or (a mask) bool, got %v", i, dt)
			}
			consumed++
			tensors++
		default:
			fail(tensor.ErrAttr, "item %d has type %T; use an int, a Range (R, From, Until, Every), a slice string, Ellipsis, NewAxis or an integer tensor", i, it)
		}
		norm[i] = it
	}
	if ellipses > 1 {
		fail(tensor.ErrAttr, "%d Ellipses; at most one", ellipses)
	}
	if tensors > 1 {
		fail(tensor.ErrAttr, "%d index tensors; Index takes one (use Gather or TakeAlongAxis for more)", tensors)
	}
	shape := x.Shape()
	if consumed > len(shape) {
		fail(tensor.ErrAttr, "%d items index dimensions of a rank-%d tensor", consumed, len(shape))
	}
	p := &indexPlan{kept: tensor.Shape{}}
	// With a tensor, ints are advanced indices too (NumPy): when the
	// advanced items are not next to each other in the expanded items,
	// the tensor's dimensions go first in the result.
	pos, advanced, lo, hi := 0, 0, -1, -1
	d := 0
	whole := func() {
		p.start, p.limit, p.stride = append(p.start, 0), append(p.limit, shape[d]), append(p.stride, 1)
		p.kept = append(p.kept, shape[d])
		d++
		pos++
	}
	for i, it := range norm {
		switch it.(type) {
		case int, *tensor.Tensor:
			advanced++
			if lo < 0 {
				lo = pos
			}
			hi = pos
		}
		switch v := it.(type) {
		case marker:
			if v == NewAxis {
				p.kept = append(p.kept, 1)
				pos++
				continue
			}
			for range len(shape) - consumed {
				whole()
			}
			if len(shape) == consumed {
				pos++ // even standing for no dimension, it parts advanced items (as in NumPy)
			}
		case int:
			n, k := shape[d], v
			if k < 0 {
				k += n
			}
			if k < 0 || k >= n {
				fail(tensor.ErrIndex, "item %d: index %d is outside dimension %d of size %d", i, v, d, n)
			}
			p.start, p.limit, p.stride = append(p.start, k), append(p.limit, k+1), append(p.stride, 1)
			p.slices = true
			d++
			pos++
		case Range:
			if v.hasStep && v.step == 0 {
				fail(tensor.ErrAttr, "item %d: %v has a zero step", i, v)
			}
			n := shape[d]
			first, count, step := v.positions(n)
			if step < 0 { // walk the reversed dimension forwards
				p.rev = append(p.rev, d)
				first = n - 1 - first
			}
			if count <= 1 {
				step = 1 // one position or none: any step takes it
			} else {
				step = min(max(step, -step), n) // |step| < n here, so -step cannot overflow
			}
			limit := first
			if count > 0 {
				limit = first + (count-1)*step + 1
			}
			p.start, p.limit, p.stride = append(p.start, first), append(p.limit, limit), append(p.stride, step)
			p.slices = p.slices || first != 0 || limit != n || step != 1
			p.kept = append(p.kept, count)
			d++
			pos++
		case *tensor.Tensor:
			p.take, p.takeAxis = v, len(p.kept)
			whole()
		}
	}
	for d < len(shape) {
		whole()
	}
	p.takeFirst = p.take != nil && hi-lo+1 != advanced
	return p
}

// describeItems is Index's items as its errors show them: tensors by
// dtype and shape, not their values (a mask of a million elements).
func describeItems(items []any) string {
	parts := make([]string, len(items))
	for i, it := range items {
		if t, ok := it.(*tensor.Tensor); ok {
			parts[i] = tensor.Describe(t)
			continue
		}
		parts[i] = fmt.Sprint(it)
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// positions resolves r against a dimension of size n as Python's
// slice.indices does: the first position, how many, and the step.
func (r Range) positions(n int) (first, count, step int) {
	step = 1
	if r.hasStep {
		step = r.step
	}
	clamp := func(v, lo, hi int) int { return min(max(v, lo), hi) }
	resolve := func(v, lo, hi int) int {
		if v < 0 {
			v += n
		}
		return clamp(v, lo, hi)
	}
	if step > 0 {
		start, stop := 0, n
		if r.hasStart {
			start = resolve(r.start, 0, n)
		}
		if r.hasStop {
			stop = resolve(r.stop, 0, n)
		}
		return start, stridedCount(stop-start, uint(step)), step
	}
	start, stop := n-1, -1
	if r.hasStart {
		start = resolve(r.start, -1, n-1)
	}
	if r.hasStop {
		stop = resolve(r.stop, -1, n-1)
	}
	// uint(-step) is the step's magnitude even for math.MinInt.
	return start, stridedCount(start-stop, uint(-step)), step
}

// stridedCount is how many of the positions 0, step, 2*step, ... lie
// below span (span is at most a dimension's size; step is any positive
// size, however large: nothing here can overflow).
func stridedCount(span int, step uint) int {
	if span <= 0 {
		return 0
	}
	return 1 + int(uint(span-1)/step)
}

// parseSliceText reads Python's slice syntax: "a:b:c" (each part
// optional), "..." or an integer.
func parseSliceText(s string) (any, error) {
	t := strings.TrimSpace(s)
	if t == "..." {
		return Ellipsis, nil
	}
	parts := strings.Split(t, ":")
	if len(parts) == 1 {
		n, err := strconv.Atoi(t)
		if err != nil {
			return nil, fmt.Errorf("%q is not an index or a slice (\"a:b\", \"a:b:c\", \"...\")", s)
		}
		return n, nil
	}
	if len(parts) > 3 {
		return nil, fmt.Errorf("%q has more than two colons", s)
	}
	var r Range
	fields := []struct {
		v   *int
		has *bool
	}{{&r.start, &r.hasStart}, {&r.stop, &r.hasStop}, {&r.step, &r.hasStep}}
	for i, part := range parts {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		n, err := strconv.Atoi(part)
		if err != nil {
			return nil, fmt.Errorf("%q: %q is not an integer", s, part)
		}
		*fields[i].v, *fields[i].has = n, true
	}
	return r, nil
}
