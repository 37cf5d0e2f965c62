package cuda

import (
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/backend/move"
	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// ArgSort (ops/sort.go): a thread merge-sorts a column (argsort_<d>);
// where the columns are few and long (fewLongColumns), each pass of the
// merge sort is a launch of its own whose threads merge maxSegment
// outputs each, found by the merge path (argsort_merge_<d>).

// maxSegment is the outputs a thread of a merge pass writes, at most.
const maxSegment = 32

func argsort(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		x, a, out := c.Inputs[0], c.Attrs.(opattr.SortAttrs), outs[0]
		if out.NumElements() == 0 {
			return
		}
		outer, n, inner := move.Split(x.Shape(), a.Axis)
		argsortInto(c, d, x, outer, n, inner, a.Descending, out)
	}
}

// argTopK is ArgTopK's kernel (ops/sort.go's TopK): the lines sorted
// whole (argsortInto) into a temporary, their first k places copied out.
func argTopK(d kernels.DType) eager.Kernel {
	return func(c *eager.Call, outs []*tensor.Tensor) {
		x, k, out := c.Inputs[0], c.Attrs.(opattr.TopKAttrs).K, outs[0]
		if out.NumElements() == 0 {
			return
		}
		n := x.Dim(-1)
		rows := x.NumElements() / n
		if k == n {
			argsortInto(c, d, x, rows, n, 1, true, out)
			return
		}
		perm := temporary(c, tensor.Int64, x.Shape(), "TopK's sorted places")
		defer perm.Release()
		argsortInto(c, d, x, rows, n, 1, true, perm)
		check(c, gpu(c).Copy(out.Buffer(), 0, []int{k, 1}, perm.Buffer(), 0, []int{n, 1}, []int{rows, k}, 8))
	}
}

// argsortInto writes into out (int64, as many elements as x) the stable
// sorting permutation of x (dtype d) viewed as [outer, n, inner], along
// n.
func argsortInto(c *eager.Call, d kernels.DType, x *tensor.Tensor, outer, n, inner int, descending bool, out *tensor.Tensor) {
	tmp := temporary(c, tensor.Int64, out.Shape(), "the sort's permutations")
	defer tmp.Release()
	g := gpu(c)
	if !fewLongColumns(outer*inner, n) {
		args := divisorArg(newArgs().Ptr(ptr(out)).Ptr(ptr(tmp)).Ptr(ptr(x)).U64(uint64(outer)).U64(uint64(n)), inner, outer*inner).U64(flag(descending))
		check(c, g.launch("along", kernels.Name("argsort", string(d)), outer*inner, args))
		return
	}
	passes := 0
	for w := 1; w < n; w *= 2 {
		passes++
	}
	// The passes alternate between out and tmp, the last writing out.
	dst, src := tmp, out
	if passes%2 == 1 {
		dst, src = out, tmp
	}
	for width, first := 1, true; width < n; width, first = 2*width, false {
		per := min(maxSegment, 2*width)
		segs := (n + per - 1) / per
		runs := outer * segs * inner
		args := newArgs().Ptr(ptr(dst)).Ptr(ptr(src)).Ptr(ptr(x)).U64(uint64(outer)).U64(uint64(n)).
			U64(uint64(width)).U64(uint64(per)).U64(flag(first)).U64(flag(descending))
		args = divisorArg(divisorArg(args, segs, outer*segs), inner, runs)
		check(c, g.launch("along", kernels.Name("argsort_merge", string(d)), runs, args))
		dst, src = src, dst
	}
}
