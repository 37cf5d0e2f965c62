package ops

import (
	"slices"

	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Gathering and scattering by integer indices along one axis: Gather (an
// embedding lookup), its adjoint ScatterAdd, Scatter, and the per-element
// TakeAlongAxis with its adjoint. Indices are Int32 or Int64; their values
// are checked by the kernel, since shape rules read no values: on the CPU
// an index outside the axis panics with a *tensor.Error naming its
// position before anything is written (a device that runs kernels
// asynchronously reports it when the host next synchronises with it).

// GatherAttrs names the axis of Gather and Scatter.
type GatherAttrs = AxisAttrs

// gatherShape is params[:axis] + indices + params[axis+1:].
func gatherShape(params, indices tensor.Shape, axis int) tensor.Shape {
	s := slices.Clone([]int(params[:axis]))
	s = append(s, indices...)
	return append(s, params[axis+1:]...)
}

func inferScatter(c *eager.Call) []eager.Out {
	base, upd := c.Inputs[0], c.Inputs[2]
	checkIndexTensor(c, 1)
	axis := checkAxis(c, c.Attrs.(opattr.AxisAttrs).Axis, base.Rank())
	if base.DType() != upd.DType() {
		c.Fail(tensor.ErrDType, "base is %v, updates are %v", base.DType(), upd.DType())
	}
	if want := gatherShape(base.Shape(), c.Inputs[1].Shape(), axis); !want.Equal(upd.Shape()) {
		c.Fail(tensor.ErrShape, "updates have shape %v, want %v", upd.Shape(), want)
	}
	return c.Out1(base.DType(), base.Shape())
}

var gatherOp, scatterAddOp, scatterAddZerosOp, scatterOp *eager.Op

func init() {
	gatherOp = eager.Register(&eager.Op{
		Name: "Gather", Inputs: 2,
		// The rule reads the indices, and the params' shape alone.
		GradReads: eager.ReadsInputs, GradIgnores: []int{0},
		Infer: func(c *eager.Call) []eager.Out {
			p := c.Inputs[0]
			if p.Rank() == 0 {
				c.Fail(tensor.ErrRank, "params must have rank 1 or more")
			}
			checkIndexTensor(c, 1)
			axis := checkAxis(c, c.Attrs.(opattr.AxisAttrs).Axis, p.Rank())
			return c.Out1(p.DType(), gatherShape(p.Shape(), c.Inputs[1].Shape(), axis))
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			p, idx := g.Inputs[0], g.Inputs[1]
			axis := g.Attrs.(opattr.AxisAttrs).Axis
			return []*tensor.Tensor{eager.Run1(scatterAddZerosOp, opattr.ScatterZerosAttrs{Axis: axis, Size: p.Dim(axis)}, g.OutGrads[0], idx), nil}
		},
	})

	// ScatterAddZeros is ScatterAdd into zeros of the shape the updates
	// came from (Gather's gradient, an embedding table's): the zeros
	// written by the kernel, never made and copied. Inputs: updates [a...,
	// i..., b...], indices [i...]; output [a..., Size, b...].
	scatterAddZerosOp = eager.Register(&eager.Op{
		Name: "ScatterAddZeros", Inputs: 2, DTypes: numericTypes,
		GradReads: eager.ReadsInputs, GradIgnores: []int{0},
		Infer: func(c *eager.Call) []eager.Out {
			upd, idx, a := c.Inputs[0], c.Inputs[1], c.Attrs.(opattr.ScatterZerosAttrs)
			checkIndexTensor(c, 1)
			if a.Axis < 0 || a.Size < 0 || upd.Rank() < a.Axis+idx.Rank() || !upd.Shape()[a.Axis:a.Axis+idx.Rank()].Equal(idx.Shape()) {
				c.Fail(tensor.ErrShape, "updates %v do not hold indices %v at axis %d", upd.Shape(), idx.Shape(), a.Axis)
			}
			shape := slices.Concat(upd.Shape()[:a.Axis], tensor.Shape{a.Size}, upd.Shape()[a.Axis+idx.Rank():])
			return c.Out1(upd.DType(), shape)
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			return []*tensor.Tensor{Gather(g.OutGrads[0], g.Inputs[1], g.Attrs.(opattr.ScatterZerosAttrs).Axis), nil}
		},
	})

	scatterAddOp = eager.Register(&eager.Op{
		Name: "ScatterAdd", Inputs: 3, DTypes: numericTypes, Infer: inferScatter,
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			dy := g.OutGrads[0]
			return []*tensor.Tensor{dy, nil, when(g.Needs[2], func() *tensor.Tensor {
				return Gather(dy, g.Inputs[1], g.Attrs.(opattr.AxisAttrs).Axis)
			})}
		},
	})

	scatterOp = eager.Register(&eager.Op{
		Name: "Scatter", Inputs: 3, Infer: inferScatter,
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			// Replaced slices pass no gradient to base; updates get theirs.
			idx, upd, dy := g.Inputs[1], g.Inputs[2], g.OutGrads[0]
			axis := g.Attrs.(opattr.AxisAttrs).Axis
			return []*tensor.Tensor{
				when(g.Needs[0], func() *tensor.Tensor { return Scatter(dy, idx, ZerosLike(upd), axis) }),
				nil,
				when(g.Needs[2], func() *tensor.Tensor { return Gather(dy, idx, axis) }),
			}
		},
	})
}

// Gather picks slices of params along axis by indices (TensorFlow's gather;
// an embedding lookup when axis is 0): params: [a..., n, b...], indices:
// [i...] -> [a..., i..., b...]. Its gradient scatters back with ScatterAdd.
func Gather(params, indices *tensor.Tensor, axis int) *tensor.Tensor {
	return eager.Run1(gatherOp, opattr.AxisAttrs{Axis: axisOf(axis, rankOf(params))}, params, indices)
}

// ScatterAdd returns base with updates added at indices along axis (the
// adjoint of Gather; repeated indices accumulate): base: [a..., n, b...],
// indices: [i...], updates: [a..., i..., b...]. Numeric dtypes.
func ScatterAdd(base, indices, updates *tensor.Tensor, axis int) *tensor.Tensor {
	return eager.Run1(scatterAddOp, opattr.AxisAttrs{Axis: axisOf(axis, rankOf(base))}, base, indices, updates)
}

// Scatter returns base with the slices at indices along axis replaced by
// updates (shapes as ScatterAdd). With repeated indices the last update
// wins; the gradient then reaches every update of that slice.
func Scatter(base, indices, updates *tensor.Tensor, axis int) *tensor.Tensor {
	return eager.Run1(scatterOp, opattr.AxisAttrs{Axis: axisOf(axis, rankOf(base))}, base, indices, updates)
}
