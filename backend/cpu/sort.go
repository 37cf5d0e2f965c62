package cpu

import (
	"cmp"
	"slices"

	"github.com/eagerflow/eagerflow/backend/move"
	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernels of sorting and its relatives (ops/sort.go).

// compareNaNLast orders numbers with NaN after everything (NumPy's rule).
func compareNaNLast[T tensor.Num](a, b T) int {
	an, bn := a != a, b != b
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	}
	return cmp.Compare(a, b)
}

// lines calls fn for every line along axis with its element offsets.
func lines(shape tensor.Shape, axis int, fn func(at func(k int) int)) {
	outer, n, inner := move.Split(shape, axis)
	for o := 0; o < outer; o++ {
		for i := 0; i < inner; i++ {
			base := o*n*inner + i
			fn(func(k int) int { return base + k*inner })
		}
	}
}

// lineShards calls fn for shards [lo, hi) of the lines along axis (line
// l: outer index l / inner, inner index l % inner), spread over the
// device's workers at cost (about nanoseconds) a line; at(l, k) is the
// offset of line l's element k.
func lineShards(c *eager.Call, shape tensor.Shape, axis int, cost float64, fn func(lo, hi int, at func(l, k int) int)) {
	outer, n, inner := move.Split(shape, axis)
	at := func(l, k int) int { return (l/inner)*n*inner + l%inner + k*inner }
	deviceOf(c).Parallel(outer*inner, cost, func(lo, hi int) { fn(lo, hi, at) })
}

// keyed is an element with its place along the line, so that an unstable
// sort that breaks ties by place sorts stably.
type keyed[T tensor.Num] struct {
	v T
	k int64
}

func argSortKernel[T tensor.Num](c *eager.Call, outs []*tensor.Tensor) {
	x, a := c.Inputs[0], c.Attrs.(opattr.SortAttrs)
	xv, ov := data[T](x), data[int64](outs[0])
	line := make([]keyed[T], x.Dim(a.Axis))
	lines(x.Shape(), a.Axis, func(at func(int) int) {
		for k := range line {
			line[k] = keyed[T]{xv[at(k)], int64(k)}
		}
		// pdqsort on (value, place): O(n log n), where the stable sort of
		// places through a closure was O(n log² n) and read x scattered.
		slices.SortFunc(line, func(p, q keyed[T]) int {
			r := compareNaNLast(p.v, q.v)
			if a.Descending { // the ascending order reversed: NaN first
				r = -r
			}
			if r != 0 {
				return r
			}
			return cmp.Compare(p.k, q.k)
		})
		for k, e := range line {
			ov[at(k)] = e.k
		}
	})
}

// argExtremeKernel finds the first maximum (or minimum) along the axis; a
// NaN counts as the extreme, as in NumPy.
func argExtremeKernel[T tensor.Num](c *eager.Call, outs []*tensor.Tensor) {
	x, a := c.Inputs[0], c.Attrs.(opattr.SortAttrs)
	xv, ov := data[T](x), data[int64](outs[0])
	n := x.Dim(a.Axis)
	j := 0
	lines(x.Shape(), a.Axis, func(at func(int) int) {
		best := 0
		for k := 1; k < n; k++ {
			v, b := xv[at(k)], xv[at(best)]
			if b != b {
				break
			}
			if v != v || (a.Descending && v > b) || (!a.Descending && v < b) {
				best = k
			}
		}
		ov[j] = int64(best)
		j++
	})
}

// putAlongZerosKernel is PutAlongAxisAddZeros': putAlong onto zeros.
func putAlongZerosKernel[T tensor.Num](c *eager.Call, outs []*tensor.Tensor) {
	a := c.Attrs.(opattr.ScatterZerosAttrs)
	idx := move.CheckIndexRange(c, 1, a.Size)
	putAlong(c, data[T](outs[0]), nil, idx, data[T](c.Inputs[0]), outs[0].Shape(), c.Inputs[1].Dim(a.Axis), a.Axis)
}

// putAlong sets ov (shape) to bv (zeros where nil) with upd added at idx
// along axis (idx and upd m long there; bv nil for PutAlongAxisAddZeros). Each outer slab is set and
// added into on its own (its indices reach only it): slabs spread over
// the workers.
func putAlong[T tensor.Num](c *eager.Call, ov, bv []T, idx []int64, upd []T, shape tensor.Shape, m, axis int) {
	outer, n, inner := move.Split(shape, axis)
	deviceOf(c).Parallel(outer, float64(n*inner+2*m*inner), func(lo, hi int) {
		setOrClear(ov[lo*n*inner:hi*n*inner], bv, lo*n*inner)
		for o := lo; o < hi; o++ {
			for k := 0; k < m; k++ {
				for i := 0; i < inner; i++ {
					at := (o*m+k)*inner + i
					ov[(o*n+int(idx[at]))*inner+i] += upd[at]
				}
			}
		}
	})
}

func init() {
	kernels{
		f32: packedArgSort[float32], f64: argSortKernel[float64], i32: packedArgSort[int32],
		i64: argSortKernel[int64], u8: packedArgSort[uint8],
	}.register("ArgSort")
	kernels{
		f32: argExtremeKernel[float32], f64: argExtremeKernel[float64], i32: argExtremeKernel[int32],
		i64: argExtremeKernel[int64], u8: argExtremeKernel[uint8],
	}.register("ArgMaxMin")
	kernels{
		f32: putAlongZerosKernel[float32], f64: putAlongZerosKernel[float64], i32: putAlongZerosKernel[int32],
		i64: putAlongZerosKernel[int64], u8: putAlongZerosKernel[uint8],
	}.register("PutAlongAxisAddZeros")
	anyDType("TakeAlongAxis", takeAlongAxisKernel)
}

func takeAlongAxisKernel(c *eager.Call, outs []*tensor.Tensor) {
	axis := c.Attrs.(opattr.AxisAttrs).Axis
	x, idx, out := c.Inputs[0], move.CheckIndexRange(c, 1, c.Inputs[0].Dim(axis)), outs[0]
	mv := elemCopier(x.DType())
	outer, n, inner := move.Split(x.Shape(), axis)
	m := out.Dim(axis)
	xb, ob := x.HostBytes(), out.HostBytes()
	deviceOf(c).Parallel(outer, float64(m*inner)*2, func(lo, hi int) {
		for o := lo; o < hi; o++ {
			for k := 0; k < m; k++ {
				for i := 0; i < inner; i++ {
					at := (o*m+k)*inner + i
					r := int(min(max(idx[at], 0), int64(n-1)))
					mv(ob, at, xb, (o*n+r)*inner+i)
				}
			}
		}
	})
}
