package cuda

import (
	"fmt"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/backend/move"
	"github.com/eagerflow/eagerflow/backend/opattr"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// DynamicSlice and DynamicUpdateSlice (ops/dynamic.go) with their start
// positions read on the device (kernels' dyn_copy), where the portable
// kernels (backend/move) read them on the host: a wait for the device per
// call, which a recording cannot hold, in every step of a traced Scan or
// a generation loop. Ranks above kernels.MaxRank go to the portable
// kernels.

func init() {
	registerMoves("DynamicSlice", dynamicSlice)
	registerMoves("DynamicUpdateSlice", dynamicUpdateSlice)
}

// dynamicSlice copies the box of out's shape at the clamped starts of x.
func dynamicSlice(c *eager.Call, outs []*tensor.Tensor) {
	x, starts, out := c.Inputs[0], c.Inputs[1], outs[0]
	if x.Rank() > kernels.MaxRank {
		move.DynamicSlice(c, outs)
		return
	}
	sizes := c.Attrs.(opattr.SizesAttrs).Sizes
	xs := tensor.Strides(x.Shape(), x.Layout())
	check(c, gpu(c).dynCopy(out, tensor.Strides(out.Shape(), nil), x, xs, starts, out.Shape(), kernels.DynCopySrc, boundsOf(x.Shape(), sizes), xs))
}

// dynamicUpdateSlice copies x into out, then u into the box of its shape
// at the clamped starts of out.
func dynamicUpdateSlice(c *eager.Call, outs []*tensor.Tensor) {
	x, u, starts, out := c.Inputs[0], c.Inputs[1], c.Inputs[2], outs[0]
	if x.Rank() > kernels.MaxRank {
		move.DynamicUpdateSlice(c, outs)
		return
	}
	d, os := gpu(c), tensor.Strides(x.Shape(), nil)
	if err := d.Copy(out.Buffer(), 0, os, x.Buffer(), 0, tensor.Strides(x.Shape(), x.Layout()), x.Shape(), x.DType().Size()); err != nil {
		c.Fail(tensor.ErrDeviceFailed, "%v", err)
	}
	check(c, d.dynCopy(out, os, u, tensor.Strides(u.Shape(), u.Layout()), starts, u.Shape(), kernels.DynCopyDst, boundsOf(x.Shape(), u.Shape()), os))
}

// boundsOf is each dimension's largest start: the operand's size less the
// box's.
func boundsOf(shape, box []int) []int {
	b := make([]int, len(shape))
	for i := range shape {
		b[i] = shape[i] - box[i]
	}
	return b
}

// dynCopy queues dyn_copy: the box of shape from src (strides sSt) to dst
// (strides dSt), the starts (Int32 or Int64, one a dimension) moving side's
// offset by strides moved, each clamped into [0, bounds[d]].
func (d *Device) dynCopy(dst *tensor.Tensor, dSt []int, src *tensor.Tensor, sSt []int, starts *tensor.Tensor, shape []int, side int, bounds, moved []int) error {
	return d.dynCopyPtr(ptr(dst), dSt, ptr(src), sSt, src.DType().Size(), ptr(starts), kernelType(starts.DType()), shape, side, bounds, moved)
}

// dynCopyPtr is dynCopy on device addresses, elements of esize bytes,
// starts of dtype idx.
func (d *Device) dynCopyPtr(dst cu.Ptr, dSt []int, src cu.Ptr, sSt []int, esize int, starts cu.Ptr, idx kernels.DType, shape []int, side int, bounds, moved []int) error {
	n := 1
	for _, s := range shape {
		n *= s
	}
	if n == 0 {
		return nil
	}
	w := map[int]string{1: "b8", 2: "b16", 4: "b32", 8: "b64"}[esize]
	if w == "" || len(shape) > kernels.MaxRank || len(bounds) > kernels.MaxRank {
		return fmt.Errorf("cuda: %s: a copy at device positions of %d-byte elements, rank %d", d.name, esize, len(shape))
	}
	g := kernels.Geometry(shape, [][]int{dSt, sSt}, nil)
	args := newArgs().Ptr(dst).Ptr(src).U64(uint64(n)).Bytes(g, 8).Ptr(starts).Bytes(kernels.DynCopy(side, bounds, moved), 8)
	return d.launch("copy", kernels.Name("dyn_copy", w, string(idx)), n, args)
}

// CopyAt is Copy at positions read on the device (device.PositionCopier).
func (d *Device) CopyAt(dst device.Buffer, dSt []int, src device.Buffer, sSt []int, shape []int, esize int, at device.Buffer, toDst bool, bounds, moved []int) error {
	db, sb, err := copyBufs(d, dst, src)
	if err != nil {
		return err
	}
	ab, err := bufOf(at, d, "positions")
	if err != nil {
		return err
	}
	side := kernels.DynCopySrc
	if toDst {
		side = kernels.DynCopyDst
	}
	return d.dynCopyPtr(db.ptr, dSt, sb.ptr, sSt, esize, ab.ptr, kernels.S64, shape, side, bounds, moved)
}

// AddAt adds delta to the Int64 at the start of at (device.PositionCopier).
func (d *Device) AddAt(at device.Buffer, delta int64) error {
	ab, err := bufOf(at, d, "count")
	if err != nil {
		return err
	}
	f, err := d.function("copy", kernels.AddAt)
	if err != nil {
		return err
	}
	return d.launchFunction(f, 1, 1, newArgs().Ptr(ab.ptr).U64(uint64(delta)))
}

// AddAtLimit is AddAt that marks a count past limit (device.LimitCounter).
func (d *Device) AddAtLimit(at device.Buffer, delta, limit int64, peak, over device.Buffer) error {
	var bufs [3]*buffer
	for i, b := range []struct {
		buf  device.Buffer
		what string
	}{{at, "count"}, {peak, "peak"}, {over, "overflow flag"}} {
		var err error
		if bufs[i], err = bufOf(b.buf, d, b.what); err != nil {
			return err
		}
	}
	f, err := d.function("copy", kernels.AddAtLimit)
	if err != nil {
		return err
	}
	return d.launchFunction(f, 1, 1, newArgs().Ptr(bufs[0].ptr).U64(uint64(delta)).U64(uint64(limit)).Ptr(bufs[1].ptr).Ptr(bufs[2].ptr))
}

var (
	_ device.PositionCopier = (*Device)(nil)
	_ device.LimitCounter   = (*Device)(nil)
)
