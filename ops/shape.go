package ops

import (
	"slices"

	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Ops that move elements without looking at them: any dtype.

// ShapeAttrs carries a target shape (Reshape, Broadcast, BroadcastTo).
//
// Deprecated: a backend's (package backend/opattr); ops' own calls build it.
type ShapeAttrs = opattr.ShapeAttrs

var reshapeOp, transposeOp, broadcastToOp *eager.Op

func init() {
	reshapeOp = eager.Register(&eager.Op{
		Name: "Reshape", Inputs: 1,
		Infer: func(c *eager.Call) []eager.Out {
			x, want := c.Inputs[0], c.Attrs.(opattr.ShapeAttrs).Shape
			shape, infer := slices.Clone(want), -1
			for i, d := range shape {
				switch {
				case d == -1 && infer < 0:
					infer = i
					shape[i] = 1
				case d < 0:
					c.Fail(tensor.ErrShape, "size %d at dimension %d (only one -1 is allowed)", d, i)
				}
			}
			known, ok := shape.Size()
			if !ok {
				c.Fail(tensor.ErrShape, "cannot reshape %d elements into %v: more than an int can count", x.NumElements(), want)
			}
			if infer >= 0 && known > 0 && x.NumElements()%known == 0 {
				shape[infer] = x.NumElements() / known
			}
			if n, _ := shape.Size(); n != x.NumElements() || (infer >= 0 && known == 0) {
				c.Fail(tensor.ErrShape, "cannot reshape %d elements into %v", x.NumElements(), want)
			}
			return c.Out1(x.DType(), shape)
		},
		View: func(c *eager.Call, specs []eager.Out) []*tensor.Tensor {
			return []*tensor.Tensor{c.Inputs[0].View(specs[0].Shape, nil)}
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			return []*tensor.Tensor{Reshape(g.OutGrads[0], g.Inputs[0].Shape()...)}
		},
		GradReads: eager.ReadsNothing,
	})
}

// Reshape returns x's elements (row-major) with a new shape; one dimension
// may be -1 to be inferred. It shares x's buffer. Panics with a
// *tensor.Error if the sizes do not multiply out to x's element count.
func Reshape(x *tensor.Tensor, shape ...int) *tensor.Tensor {
	return eager.Run1(reshapeOp, opattr.ShapeAttrs{Shape: shape}, x)
}

// ReshapeDims is XLA's Reshape(operand, dimensions, new_sizes): x is first
// flattened visiting its dimensions in the order dims (slowest first), then
// shaped as sizes. It equals Reshape(Transpose(x, dims...), sizes...).
func ReshapeDims(x *tensor.Tensor, dims []int, sizes ...int) *tensor.Tensor {
	needInputs("ReshapeDims", x)
	defer asOp("ReshapeDims")
	return Reshape(Transpose(x, dims...), sizes...)
}

// PermAttrs is Transpose's permutation.
//
// Deprecated: a backend's (package backend/opattr); ops' own calls build it.
type PermAttrs = opattr.PermAttrs

func checkPerm(c *eager.Call, perm []int, rank int) {
	if len(perm) != rank {
		c.Fail(tensor.ErrAttr, "permutation %v has %d entries for rank %d", perm, len(perm), rank)
	}
	seen := make([]bool, rank)
	for _, p := range perm {
		if p < 0 || p >= rank || seen[p] {
			c.Fail(tensor.ErrAttr, "%v is not a permutation of 0..%d", perm, rank-1)
		}
		seen[p] = true
	}
}

func inversePerm(perm []int) []int {
	inv := make([]int, len(perm))
	for i, p := range perm {
		inv[p] = i
	}
	return inv
}

func init() {
	transposeOp = eager.Register(&eager.Op{
		Name: "Transpose", Inputs: 1, AnyLayout: true,
		Infer: func(c *eager.Call) []eager.Out {
			x, perm := c.Inputs[0], c.Attrs.(opattr.PermAttrs).Perm
			checkPerm(c, perm, x.Rank())
			shape := make(tensor.Shape, len(perm))
			for i, p := range perm {
				shape[i] = x.Dim(p)
			}
			return c.Out1(x.DType(), shape)
		},
		// The transpose is a layout change: dimension d of x becomes inv[d].
		View: func(c *eager.Call, specs []eager.Out) []*tensor.Tensor {
			x, perm := c.Inputs[0], c.Attrs.(opattr.PermAttrs).Perm
			src := x.Layout()
			if src == nil {
				src = tensor.RowMajor(x.Rank())
			}
			inv := inversePerm(perm)
			l := make(tensor.Layout, len(src))
			for i, d := range src {
				l[i] = inv[d]
			}
			return []*tensor.Tensor{x.View(specs[0].Shape, l)}
		},
		Grad: func(g *eager.Grad) []*tensor.Tensor {
			return []*tensor.Tensor{Transpose(g.OutGrads[0], inversePerm(g.Attrs.(opattr.PermAttrs).Perm)...)}
		},
		GradReads: eager.ReadsNothing,
	})
}

// Transpose permutes dimensions: output dimension i is input dimension
// perm[i] (XLA's Transpose). With no perm it reverses the dimensions. The
// result shares x's buffer under a new layout; kernels that need row-major
// input copy it then.
func Transpose(x *tensor.Tensor, perm ...int) *tensor.Tensor {
	if perm == nil {
		perm = make([]int, x.Rank())
		for i := range perm {
			perm[i] = x.Rank() - 1 - i
		}
	}
	return eager.Run1(transposeOp, opattr.PermAttrs{Perm: perm}, x)
}

func init() {
	broadcastToOp = eager.Register(&eager.Op{
		Name: "BroadcastTo", Inputs: 1,
		Infer: func(c *eager.Call) []eager.Out {
			x, shape := c.Inputs[0], c.Attrs.(opattr.ShapeAttrs).Shape
			if !shape.Equal(broadcastShapes(c, x.Shape(), shape)) || slices.ContainsFunc(shape, func(d int) bool { return d < 0 }) {
				c.Fail(tensor.ErrShape, "cannot broadcast %v to %v", x.Shape(), shape)
			}
			return c.Out1(x.DType(), slices.Clone(shape))
		},
		// The tape sums the output-shaped gradient back to x's shape.
		Grad:      func(g *eager.Grad) []*tensor.Tensor { return []*tensor.Tensor{g.OutGrads[0]} },
		GradReads: eager.ReadsNothing,
	})
}

// BroadcastTo repeats x along size-1 and missing leading dimensions to shape,
// NumPy style. Panics with a *tensor.Error if x does not broadcast to shape.
func BroadcastTo(x *tensor.Tensor, shape ...int) *tensor.Tensor {
	return eager.Run1(broadcastToOp, opattr.ShapeAttrs{Shape: shape}, x)
}

// Broadcast is XLA's Broadcast: it adds the dimensions sizes in front of
// x's, so output[i..., j...] = x[j...]. It is not NumPy's broadcasting:
// to repeat x to a shape (np.broadcast_to, torch.expand), use
// BroadcastTo; Broadcast(x, sizes...) is BroadcastTo(x, sizes+x's shape).
func Broadcast(x *tensor.Tensor, sizes ...int) *tensor.Tensor {
	needInputs("Broadcast", x)
	defer asOp("Broadcast")
	return BroadcastTo(x, append(slices.Clone(sizes), x.Shape()...)...)
}

// SumTo sums x down to shape, undoing a NumPy broadcast: leading dimensions
// are summed away and dimensions where shape has 1 are summed with keepdims.
// The tape uses it to fit gradients to their inputs.
func SumTo(x *tensor.Tensor, shape tensor.Shape) *tensor.Tensor {
	needInputs("SumTo", x)
	defer asOp("SumTo")
	if x.Shape().Equal(shape) {
		return x
	}
	lead := x.Rank() - len(shape)
	var dims []int
	for d := 0; d < x.Rank(); d++ {
		if d < lead || (shape[d-lead] == 1 && x.Dim(d) != 1) {
			dims = append(dims, d)
		}
	}
	sum := Sum(x, dims...)
	out := Reshape(sum, shape...)
	if out != sum {
		releaseTemp(sum) // the view holds its buffer
	}
	return out
}
