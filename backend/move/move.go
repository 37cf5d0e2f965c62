// Package move holds the kernels of the ops that move elements without
// looking at them (reshapes, transposes, broadcasts, slices, pads,
// concatenations, reversals, dynamic slices), written with the device's own
// data movement (device.Device.Copy and Fill), so that every device kind
// runs them: they are registered as portable kernels (eager.RegisterPortable)
// when the package is linked (both backends import it), and the kernel of
// Nonzero, which reads its input through the host. It also holds what
// every backend's kernels share when they work along an axis or by index:
// Split, Permuted, IndexValues, and the index checks CheckIndexRange and
// CheckLabels.
package move

import (
	"slices"
	"unsafe"

	"github.com/eagerflow/eagerflow/backend"
	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/ops"
	"github.com/eagerflow/eagerflow/tensor"
)

// allTypes is every dtype.
var allTypes = []tensor.DType{tensor.Float32, tensor.Float64, tensor.Int32, tensor.Int64, tensor.Uint8, tensor.Bool,
	tensor.BFloat16, tensor.Float16, tensor.Float8E4M3, tensor.Float8E5M2}

func init() {
	for op, k := range map[string]eager.Kernel{
		"Reshape": whole, "Identity": whole, "StopGradient": whole,
		"Transpose": transpose, "BroadcastTo": broadcastTo,
		"Slice": slice, "Split": split, "Pad": pad, "Concatenate": concatenate, "Rev": rev,
		"DynamicSlice": dynamicSlice, "DynamicUpdateSlice": dynamicUpdateSlice,
		"Nonzero": nonzero,
	} {
		for _, dt := range allTypes {
			eager.RegisterPortable(op, dt, k)
		}
	}
}

// copyBox copies the box shape of elements from src (at sOff, strides sSt)
// to dst (at dOff, strides dSt) on the call's device, or fails the call.
func copyBox(c *eager.Call, dst *tensor.Tensor, dOff int, dSt []int, src *tensor.Tensor, sOff int, sSt []int, shape []int) {
	if err := c.Device.Copy(dst.Buffer(), dOff, dSt, src.Buffer(), sOff, sSt, shape, src.DType().Size()); err != nil {
		c.Fail(tensor.ErrDeviceFailed, "%v", err)
	}
}

// copySpans copies spans of elements of esize bytes in one call where
// the device copies many at once (device.SpanCopier) and there are two
// or more to copy, reporting whether it did; empty spans are left out.
func copySpans(c *eager.Call, spans []device.Span, esize int) bool {
	spans = slices.DeleteFunc(spans, func(s device.Span) bool { return s.N == 0 })
	sc, ok := c.Device.(device.SpanCopier)
	if !ok || len(spans) < 2 {
		return false
	}
	if err := sc.CopySpans(spans, esize); err != nil {
		c.Fail(tensor.ErrDeviceFailed, "%v", err)
	}
	return true
}

// rowMajor is shape's row-major strides.
func rowMajor(shape tensor.Shape) []int { return tensor.Strides(shape, nil) }

// whole copies the input's elements as they are (Reshape, Identity,
// StopGradient when the output cannot share the input's buffer).
func whole(c *eager.Call, outs []*tensor.Tensor) {
	x, out := c.Inputs[0], outs[0]
	n := []int{x.NumElements()}
	copyBox(c, out, 0, []int{1}, x, 0, []int{1}, n)
}

// transpose reads the input in its own layout (Transpose takes any).
func transpose(c *eager.Call, outs []*tensor.Tensor) {
	x, perm, out := c.Inputs[0], c.Attrs.(opattr.PermAttrs).Perm, outs[0]
	copyBox(c, out, 0, rowMajor(out.Shape()), x, 0, permutedStrides(x, perm), out.Shape())
}

// permutedStrides are x's element strides in the order perm: dimension i
// of the result walks dimension perm[i] of x.
func permutedStrides(x *tensor.Tensor, perm []int) []int {
	xs := tensor.Strides(x.Shape(), x.Layout())
	st := make([]int, len(perm))
	for i, p := range perm {
		st[i] = xs[p]
	}
	return st
}

// Permuted returns x with its dimensions in the order perm, as a new
// row-major tensor on the call's device, for kernels that need a layout
// the op's input does not have; it fails the call when the device cannot
// give the memory.
func Permuted(c *eager.Call, x *tensor.Tensor, perm []int) *tensor.Tensor {
	shape := make(tensor.Shape, len(perm))
	for i, p := range perm {
		shape[i] = x.Dim(p)
	}
	out, err := tensor.Empty(c.Device, x.DType(), shape)
	if err != nil {
		c.Fail(err, "a %v%v temporary for a permuted layout", x.DType(), shape)
	}
	copyBox(c, out, 0, rowMajor(shape), x, 0, permutedStrides(x, perm), shape)
	return out
}

func broadcastTo(c *eager.Call, outs []*tensor.Tensor) {
	x, out := c.Inputs[0], outs[0]
	rank := out.Rank()
	st := make([]int, rank)
	xs := rowMajor(x.Shape())
	off := rank - x.Rank()
	for d := off; d < rank; d++ {
		if x.Dim(d-off) != 1 {
			st[d] = xs[d-off]
		}
	}
	copyBox(c, out, 0, rowMajor(out.Shape()), x, 0, st, out.Shape())
}

func slice(c *eager.Call, outs []*tensor.Tensor) {
	x, a, out := c.Inputs[0], c.Attrs.(opattr.SliceAttrs), outs[0]
	xs := rowMajor(x.Shape())
	off, st := 0, make([]int, x.Rank())
	for d := range st {
		off += a.Start[d] * xs[d]
		st[d] = xs[d] * a.Stride(d)
	}
	copyBox(c, out, 0, rowMajor(out.Shape()), x, off, st, out.Shape())
}

// split copies each piece's box of the input, along the axis one after
// another.
func split(c *eager.Call, outs []*tensor.Tensor) {
	x, a := c.Inputs[0], c.Attrs.(opattr.SplitAttrs)
	// Where nothing comes before the axis, each output is one stretch of
	// the input (an Unstack of a sequence's steps): one call for all.
	if tensor.Shape(x.Shape()[:a.Axis]).NumElements() == 1 {
		spans := make([]device.Span, 0, len(outs))
		at := 0
		for _, out := range outs {
			spans = append(spans, device.Span{Dst: out.Buffer(), Src: x.Buffer(), SOff: at, N: out.NumElements()})
			at += out.NumElements()
		}
		if copySpans(c, spans, x.DType().Size()) {
			return
		}
	}
	xs := rowMajor(x.Shape())
	at := 0
	for i, out := range outs {
		copyBox(c, out, 0, rowMajor(out.Shape()), x, at*xs[a.Axis], xs, out.Shape())
		at += a.Sizes[i]
	}
}

// pad fills the output with the padding value (broadcast from its scalar
// by zero strides) and copies the part of the input that lands inside.
func pad(c *eager.Call, outs []*tensor.Tensor) {
	x, value, cfg, out := c.Inputs[0], c.Inputs[1], c.Attrs.(ops.PadAttrs).Dims, outs[0]
	copyBox(c, out, 0, rowMajor(out.Shape()), value, 0, make([]int, out.Rank()), out.Shape())
	os, xs := rowMajor(out.Shape()), rowMajor(x.Shape())
	box := make([]int, x.Rank())
	dSt, dOff, sOff := make([]int, x.Rank()), 0, 0
	for d, p := range cfg {
		step := p.Interior + 1
		// First and one-past-last input index whose position lands inside.
		first := 0
		if p.Low < 0 {
			first = (-p.Low + step - 1) / step
		}
		last := x.Dim(d)
		for last > first && p.Low+(last-1)*step >= out.Dim(d) {
			last--
		}
		box[d] = max(last-first, 0)
		dSt[d] = os[d] * step
		dOff += (p.Low + first*step) * os[d]
		sOff += first * xs[d]
	}
	copyBox(c, out, dOff, dSt, x, sOff, xs, box)
}

func concatenate(c *eager.Call, outs []*tensor.Tensor) {
	out := outs[0]
	axis := c.Attrs.(opattr.AxisAttrs).Axis
	os := rowMajor(out.Shape())
	// Where nothing comes before the axis, each input is one stretch of
	// the output: a device that copies many stretches at once takes them
	// all in one call.
	if tensor.Shape(out.Shape()[:axis]).NumElements() == 1 {
		spans := make([]device.Span, 0, len(c.Inputs))
		at := 0
		for _, x := range c.Inputs {
			spans = append(spans, device.Span{Dst: out.Buffer(), DOff: at, Src: x.Buffer(), N: x.NumElements()})
			at += x.NumElements()
		}
		if copySpans(c, spans, out.DType().Size()) {
			return
		}
	}
	at := 0
	for _, x := range c.Inputs {
		copyBox(c, out, at*os[axis], os, x, 0, rowMajor(x.Shape()), x.Shape())
		at += x.Dim(axis)
	}
}

func rev(c *eager.Call, outs []*tensor.Tensor) {
	x := c.Inputs[0]
	st := rowMajor(x.Shape())
	off := 0
	for _, d := range c.Attrs.(opattr.RevAttrs).Dims {
		if x.Dim(d) > 0 {
			off += (x.Dim(d) - 1) * st[d]
		}
		st[d] = -st[d]
	}
	copyBox(c, outs[0], 0, rowMajor(x.Shape()), x, off, st, x.Shape())
}

// Split is (outer, n, inner) of shape s at axis: the sizes before it, at
// it and after it, as the kernels that work along one axis view their
// operands.
func Split(s tensor.Shape, axis int) (outer, n, inner int) {
	return tensor.Shape(s[:axis]).NumElements(), s[axis], tensor.Shape(s[axis+1:]).NumElements()
}

// CheckIndexRange returns the values of the call's input i (Int32 or
// Int64 indices, read on the host: the read waits for the device), failing
// the call if one is outside [0, n), naming it and its position. Kernels
// call it before they write anything.
func CheckIndexRange(c *eager.Call, i int, n int) []int64 {
	return checkRange(c, i, n, "index %d at position %d is outside [0, %d)")
}

// CheckLabels is CheckIndexRange for class labels, one per row: the error
// names the label and its row.
func CheckLabels(c *eager.Call, i int, classes int) []int64 {
	return checkRange(c, i, classes, "label %d at row %d is outside [0, %d)")
}

func checkRange(c *eager.Call, i, n int, msg string) []int64 {
	idx := indexView(c.Inputs[i])
	for k, v := range idx {
		if v < 0 || v >= int64(n) {
			c.Fail(tensor.ErrIndex, msg, v, k, n)
		}
	}
	return idx
}

// indexView is IndexValues, the tensor's own memory where it is an Int64
// tensor in host memory (the kernels that check indices only read them):
// no copy of a large index tensor (a sort's permutation).
func indexView(t *tensor.Tensor) []int64 {
	if _, host := t.Buffer().(*device.HostBuffer); host && t.DType() == tensor.Int64 {
		return backend.HostData[int64](t)
	}
	return IndexValues(t)
}

// IndexValues returns an Int32 or Int64 tensor's values as int64s (read
// on the host).
func IndexValues(t *tensor.Tensor) []int64 {
	if t.DType() == tensor.Int32 {
		v := tensor.ToSlice[int32](t)
		out := make([]int64, len(v))
		for i, x := range v {
			out[i] = int64(x)
		}
		return out
	}
	return tensor.ToSlice[int64](t)
}

// clampedStarts reads starts and clamps each into [0, dim-size], as XLA
// does, so a slice never leaves the operand.
func clampedStarts(starts *tensor.Tensor, shape tensor.Shape, sizes []int) []int {
	v := IndexValues(starts)
	out := make([]int, len(v))
	for d, s := range v {
		out[d] = int(min(max(s, 0), int64(shape[d]-sizes[d])))
	}
	return out
}

// offset is the element offset of starts in a row-major array of strides.
func offset(starts, strides []int) int {
	off := 0
	for d, s := range starts {
		off += s * strides[d]
	}
	return off
}

// DynamicSlice and DynamicUpdateSlice are the portable kernels of the
// ops of those names (their starts read on the host), for backends whose
// own kernels leave some cases to them.
var (
	DynamicSlice       eager.Kernel = dynamicSlice
	DynamicUpdateSlice eager.Kernel = dynamicUpdateSlice
)

func dynamicSlice(c *eager.Call, outs []*tensor.Tensor) {
	x, out := c.Inputs[0], outs[0]
	starts := clampedStarts(c.Inputs[1], x.Shape(), c.Attrs.(opattr.SizesAttrs).Sizes)
	xs := rowMajor(x.Shape())
	copyBox(c, out, 0, rowMajor(out.Shape()), x, offset(starts, xs), xs, out.Shape())
}

func dynamicUpdateSlice(c *eager.Call, outs []*tensor.Tensor) {
	x, u, out := c.Inputs[0], c.Inputs[1], outs[0]
	copyBox(c, out, 0, []int{1}, x, 0, []int{1}, []int{x.NumElements()})
	starts := clampedStarts(c.Inputs[2], x.Shape(), u.Shape())
	os := rowMajor(x.Shape())
	copyBox(c, out, offset(starts, os), os, u, 0, rowMajor(u.Shape()), u.Shape())
}

// nonzero writes the row-major indices of the input's nonzero elements
// (ops.Nonzero), as many as the output holds rows: the count the op was
// made for, checked against the values.
func nonzero(c *eager.Call, outs []*tensor.Tensor) {
	x, out := c.Inputs[0], outs[0]
	var isNonzero func(i int) bool
	switch x.DType() {
	case tensor.Float32:
		v := tensor.ToSlice[float32](x)
		isNonzero = func(i int) bool { return v[i] != 0 }
	case tensor.Float64:
		v := tensor.ToSlice[float64](x)
		isNonzero = func(i int) bool { return v[i] != 0 }
	case tensor.Int32:
		v := tensor.ToSlice[int32](x)
		isNonzero = func(i int) bool { return v[i] != 0 }
	case tensor.Int64:
		v := tensor.ToSlice[int64](x)
		isNonzero = func(i int) bool { return v[i] != 0 }
	case tensor.Uint8:
		v := tensor.ToSlice[uint8](x)
		isNonzero = func(i int) bool { return v[i] != 0 }
	default:
		v := tensor.ToSlice[bool](x)
		isNonzero = func(i int) bool { return v[i] }
	}
	rank, want := x.Rank(), out.Dim(0)
	idx := make([]int64, 0, want*rank)
	multi := make([]int, rank)
	found := 0
	for i := range x.NumElements() {
		if !isNonzero(i) {
			continue
		}
		found++
		if found <= want {
			for _, m := range tensor.MultiIndex(x.Shape(), nil, i, multi) {
				idx = append(idx, int64(m))
			}
		}
	}
	if found != want {
		c.Fail(tensor.ErrValue, "the input has %d nonzero elements, the op was made for %d", found, want)
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(idx))), 8*len(idx))
	if err := c.Device.CopyFromHost(out.Buffer(), 0, b); err != nil {
		c.Fail(tensor.ErrDeviceFailed, "%v", err)
	}
}
