package cpu

import (
	"github.com/eagerflow/eagerflow/backend/move"
	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Kernels of Gather, ScatterAdd and Scatter (ops/gather.go).

func scatterAddKernel[T tensor.Num](c *eager.Call, outs []*tensor.Tensor) {
	axis := c.Attrs.(opattr.AxisAttrs).Axis
	base, idx, upd := c.Inputs[0], move.CheckIndexRange(c, 1, c.Inputs[0].Dim(axis)), c.Inputs[2]
	outer, n, inner := move.Split(base.Shape(), axis)
	ov, uv := data[T](outs[0]), data[T](upd)
	copy(ov, data[T](base))
	for o := 0; o < outer; o++ {
		for j, r := range idx {
			r = min(max(r, 0), int64(n-1))
			dst := ov[(o*n+int(r))*inner : (o*n+int(r)+1)*inner]
			src := uv[(o*len(idx)+j)*inner : (o*len(idx)+j+1)*inner]
			for k := range dst {
				dst[k] += src[k]
			}
		}
	}
}

func init() {
	kernels{
		f32: scatterAddKernel[float32], f64: scatterAddKernel[float64], i32: scatterAddKernel[int32],
		i64: scatterAddKernel[int64], u8: scatterAddKernel[uint8],
	}.register("ScatterAdd")
	anyDType("Gather", gatherKernel)
	anyDType("Scatter", scatterKernel)
}

func gatherKernel(c *eager.Call, outs []*tensor.Tensor) {
	p, idx := c.Inputs[0], move.CheckIndexRange(c, 1, c.Inputs[0].Dim(c.Attrs.(opattr.AxisAttrs).Axis))
	outer, n, inner := move.Split(p.Shape(), c.Attrs.(opattr.AxisAttrs).Axis)
	size := p.DType().Size() * inner
	pb, ob := p.HostBytes(), outs[0].HostBytes()
	for o := 0; o < outer; o++ {
		for j, r := range idx {
			r = min(max(r, 0), int64(n-1))
			copy(ob[(o*len(idx)+j)*size:(o*len(idx)+j+1)*size], pb[(o*n+int(r))*size:(o*n+int(r)+1)*size])
		}
	}
}

func scatterKernel(c *eager.Call, outs []*tensor.Tensor) {
	axis := c.Attrs.(opattr.AxisAttrs).Axis
	base, idx, upd := c.Inputs[0], move.CheckIndexRange(c, 1, c.Inputs[0].Dim(axis)), c.Inputs[2]
	outer, n, inner := move.Split(base.Shape(), axis)
	size := base.DType().Size() * inner
	ob, ub := outs[0].HostBytes(), upd.HostBytes()
	copy(ob, base.HostBytes())
	for o := 0; o < outer; o++ {
		for j, r := range idx {
			r = min(max(r, 0), int64(n-1))
			copy(ob[(o*n+int(r))*size:(o*n+int(r)+1)*size], ub[(o*len(idx)+j)*size:(o*len(idx)+j+1)*size])
		}
	}
}
