// Package opattr holds the attributes of ops' calls as kernels read them
// (eager.Call.Attrs): Cast's dtype, an axis, a shape, a permutation, a
// slice's box... Package ops builds them when it dispatches a call; a
// backend's kernels type-assert them. A program does not need them: the
// options it passes are ops' own types (ops.Window, ops.PadDim,
// ops.Conv2DOpts, ops.Reduction...).
package opattr

import (
	"fmt"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/tensor"
)

// CastAttrs are Cast's attributes.
type CastAttrs struct{ To tensor.DType }

func (a CastAttrs) String() string { return "to=" + a.To.String() }

// CumsumAttrs configure Cumsum: the axis, whether each sum leaves out its
// own element (exclusive), and whether sums run from the end (reverse).
type CumsumAttrs struct {
	Axis               int
	Exclusive, Reverse bool
}

func (a CumsumAttrs) String() string {
	return fmt.Sprintf("axis=%d exclusive=%v reverse=%v", a.Axis, a.Exclusive, a.Reverse)
}

// DeviceAttrs names the device ToDevice copies to.
type DeviceAttrs struct{ Device device.Device }

// TargetDevice is the device the op copies to (graph passes ask it).
func (a DeviceAttrs) TargetDevice() device.Device { return a.Device }

func (a DeviceAttrs) String() string {
	if a.Device == nil {
		return "device=<nil>"
	}
	return "device=" + a.Device.Name()
}

// SizesAttrs carries slice sizes (DynamicSlice).
type SizesAttrs struct{ Sizes []int }

func (a SizesAttrs) String() string { return fmt.Sprintf("sizes=%v", a.Sizes) }

// MatMulAttrs says whether to transpose the last two dimensions of each
// operand before multiplying.
type MatMulAttrs struct{ TransposeA, TransposeB bool }

func (a MatMulAttrs) String() string {
	return fmt.Sprintf("transpose_a=%v transpose_b=%v", a.TransposeA, a.TransposeB)
}

// Dims returns the product's sizes for operands of shapes x and y (rank 2
// or more, as MatMul checks): m and k from x, n from y, after the
// transposes.
func (a MatMulAttrs) Dims(x, y tensor.Shape) (m, k, n int) {
	m, k = MatrixDims(x, a.TransposeA)
	_, n = MatrixDims(y, a.TransposeB)
	return m, k, n
}

// MatrixDims returns the rows and columns of a matrix operand of shape s
// (its last two dims), swapped when transposed. It panics with a
// *tensor.Error for a shape of rank under 2.
func MatrixDims(s tensor.Shape, transposed bool) (rows, cols int) {
	if len(s) < 2 {
		panic(tensor.NewError("opattr", "MatrixDims", tensor.ErrRank, nil, "", "shape %v is not a matrix's", s))
	}
	r, c := s[len(s)-2], s[len(s)-1]
	if transposed {
		return c, r
	}
	return r, c
}

// ShapeAttrs carries a target shape (Reshape, Broadcast, BroadcastTo).
type ShapeAttrs struct{ Shape tensor.Shape }

func (a ShapeAttrs) String() string { return "shape=" + a.Shape.String() }

// PermAttrs is Transpose's permutation.
type PermAttrs struct{ Perm []int }

func (a PermAttrs) String() string { return fmt.Sprintf("perm=%v", a.Perm) }

// SliceAttrs are Slice's start (inclusive), limit (exclusive) and strides
// per dimension; nil Strides means 1.
type SliceAttrs struct{ Start, Limit, Strides []int }

func (a SliceAttrs) String() string {
	return fmt.Sprintf("start=%v limit=%v strides=%v", a.Start, a.Limit, a.Strides)
}

// Stride is the step along dimension d (1 when Strides is nil).
func (a SliceAttrs) Stride(d int) int {
	if a.Strides == nil {
		return 1
	}
	return a.Strides[d]
}

// AxisAttrs names one dimension (Concatenate, LogSoftmax).
type AxisAttrs struct{ Axis int }

func (a AxisAttrs) String() string { return fmt.Sprintf("axis=%d", a.Axis) }

// SplitAttrs configure Split: the axis and the pieces' sizes along it.
type SplitAttrs struct {
	Axis  int
	Sizes []int
}

func (a SplitAttrs) String() string { return fmt.Sprintf("axis=%d sizes=%v", a.Axis, a.Sizes) }

// SortAttrs configure ArgSort and ArgMax/ArgMin.
type SortAttrs struct {
	Axis       int
	Descending bool
}

func (a SortAttrs) String() string { return fmt.Sprintf("axis=%d descending=%v", a.Axis, a.Descending) }

// ScatterZerosAttrs configure ScatterAddZeros (Gather's gradient) and
// PutAlongAxisAddZeros (TakeAlongAxis's): the axis of the output the
// indices pick along, and its size there.
type ScatterZerosAttrs struct{ Axis, Size int }

func (a ScatterZerosAttrs) String() string { return fmt.Sprintf("axis=%d size=%d", a.Axis, a.Size) }

// TopKAttrs configure ArgTopK: the K first places of the last axis's
// stable descending order.
type TopKAttrs struct{ K int }

func (a TopKAttrs) String() string { return fmt.Sprintf("k=%d", a.K) }

// RevAttrs lists the dimensions Rev reverses.
type RevAttrs struct{ Dims []int }

func (a RevAttrs) String() string { return fmt.Sprintf("dims=%v", a.Dims) }

// TriangularSolveAttrs configure TriangularSolve, which solves a·x = b
// (aᵀ·x = b where Transpose) for a triangular: its upper triangle read
// where Upper, else its lower; its diagonal taken as ones, and not read,
// where UnitDiagonal.
type TriangularSolveAttrs struct {
	Upper, Transpose, UnitDiagonal bool
}

func (a TriangularSolveAttrs) String() string {
	return fmt.Sprintf("upper=%v transpose=%v unit_diagonal=%v", a.Upper, a.Transpose, a.UnitDiagonal)
}
