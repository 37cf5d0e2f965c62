package cpu

import (
	"github.com/eagerflow/eagerflow/backend/move"
	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/internal/hostmem"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernels of Gather, ScatterAdd and Scatter (ops/gather.go).

func scatterAddKernel[T tensor.Num](c *eager.Call, outs []*tensor.Tensor) {
	axis := c.Attrs.(opattr.AxisAttrs).Axis
	base, idx, upd := c.Inputs[0], move.CheckIndexRange(c, 1, c.Inputs[0].Dim(axis)), c.Inputs[2]
	addRows(c, data[T](outs[0]), data[T](base), idx, data[T](upd), base.Shape(), axis)
}

// scatterAddZerosKernel is ScatterAddZeros': addRows onto zeros.
func scatterAddZerosKernel[T tensor.Num](c *eager.Call, outs []*tensor.Tensor) {
	a := c.Attrs.(opattr.ScatterZerosAttrs)
	idx := move.CheckIndexRange(c, 1, a.Size)
	addRows(c, data[T](outs[0]), nil, idx, data[T](c.Inputs[0]), outs[0].Shape(), a.Axis)
}

// addRows sets ov (shape, picked along axis by idx) to bv (zeros where
// nil) with the updates uv added in, the destination rows split among
// the workers: each worker reads every index and adds the updates of the
// rows it owns, in the indices' order, so that repeated indices sum in
// the same order whatever the split.
func addRows[T tensor.Num](c *eager.Call, ov, bv []T, idx []int64, uv []T, shape tensor.Shape, axis int) {
	outer, n, inner := move.Split(shape, axis)
	rows := outer * n
	cost := float64(inner) + float64(len(idx)*(inner+2))/float64(max(n, 1))
	deviceOf(c).Parallel(rows, cost, func(lo, hi int) {
		setOrClear(ov[lo*inner:hi*inner], bv, lo*inner)
		if inner == 1 { // single elements (a mask's selection's gradient)
			for o := lo / n; o <= (hi-1)/n; o++ {
				us := uv[o*len(idx):][:len(idx)]
				for j, r := range idx {
					if row := o*n + int(r); row >= lo && row < hi {
						ov[row] += us[j]
					}
				}
			}
			return
		}
		for o := lo / n; o <= (hi-1)/n; o++ {
			for j, r := range idx {
				row := o*n + int(r)
				if row < lo || row >= hi {
					continue
				}
				dst := ov[row*inner : (row+1)*inner]
				src := uv[(o*len(idx)+j)*inner : (o*len(idx)+j+1)*inner]
				for k := range dst {
					dst[k] += src[k]
				}
			}
		}
	})
}

func init() {
	kernels{
		f32: scatterAddKernel[float32], f64: scatterAddKernel[float64], i32: scatterAddKernel[int32],
		i64: scatterAddKernel[int64], u8: scatterAddKernel[uint8],
	}.register("ScatterAdd")
	kernels{
		f32: scatterAddZerosKernel[float32], f64: scatterAddZerosKernel[float64], i32: scatterAddZerosKernel[int32],
		i64: scatterAddZerosKernel[int64], u8: scatterAddZerosKernel[uint8],
	}.register("ScatterAddZeros")
	anyDType("Gather", gatherKernel)
	anyDType("Scatter", scatterKernel)
}

// gatherKernel copies the picked rows, the output's rows split among
// the workers.
func gatherKernel(c *eager.Call, outs []*tensor.Tensor) {
	p, idx := c.Inputs[0], move.CheckIndexRange(c, 1, c.Inputs[0].Dim(c.Attrs.(opattr.AxisAttrs).Axis))
	outer, n, inner := move.Split(p.Shape(), c.Attrs.(opattr.AxisAttrs).Axis)
	size := p.DType().Size() * inner
	pb, ob := p.HostBytes(), outs[0].HostBytes()
	deviceOf(c).Parallel(outer*len(idx), float64(size)/8+4, func(lo, hi int) {
		switch size { // single elements (a mask's selection) by word
		case 4:
			gatherWords(hostmem.View32(ob), hostmem.View32(pb), idx, n, lo, hi)
		case 8:
			gatherWords(hostmem.View64(ob), hostmem.View64(pb), idx, n, lo, hi)
		default:
			for at := lo; at < hi; at++ {
				o, r := at/len(idx), int(idx[at%len(idx)])
				copy(ob[at*size:(at+1)*size], pb[(o*n+r)*size:(o*n+r+1)*size])
			}
		}
	})
}

// gatherWords is gatherKernel's copy of single words: out[at] for at in
// [lo, hi) from p[o·n + idx[at mod len(idx)]], o = at / len(idx).
func gatherWords[U uint32 | uint64](out, p []U, idx []int64, n, lo, hi int) {
	for at := lo; at < hi; {
		o, j := at/len(idx), at%len(idx)
		end := min(hi, (o+1)*len(idx))
		row := p[o*n:]
		for _, r := range idx[j : j+end-at] {
			out[at] = row[r]
			at++
		}
	}
}

func scatterKernel(c *eager.Call, outs []*tensor.Tensor) {
	axis := c.Attrs.(opattr.AxisAttrs).Axis
	base, idx, upd := c.Inputs[0], move.CheckIndexRange(c, 1, c.Inputs[0].Dim(axis)), c.Inputs[2]
	outer, n, inner := move.Split(base.Shape(), axis)
	size := base.DType().Size() * inner
	ob, ub := outs[0].HostBytes(), upd.HostBytes()
	if err := deviceOf(c).Copy(outs[0].Buffer(), 0, []int{1}, base.Buffer(), 0, []int{1}, []int{base.NumElements()}, base.DType().Size()); err != nil {
		c.Fail(tensor.ErrDeviceFailed, "%v", err)
	}
	for o := 0; o < outer; o++ {
		for j, r := range idx {
			r = min(max(r, 0), int64(n-1))
			copy(ob[(o*n+int(r))*size:(o*n+int(r)+1)*size], ub[(o*len(idx)+j)*size:(o*len(idx)+j+1)*size])
		}
	}
}

// setOrClear sets dst to base's elements from at on, or to zeros where
// base is nil (the scatters into zeros: ScatterAddZeros,
// PutAlongAxisAddZeros).
func setOrClear[T tensor.Num](dst, base []T, at int) {
	if base == nil {
		clear(dst)
		return
	}
	copy(dst, base[at:at+len(dst)])
}
