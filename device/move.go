package device

import (
	"fmt"

	"github.com/eagerflow/eagerflow/internal/hostmem"
)

// Copy copies between host buffers (see Device.Copy); src may be any CPU
// device's.
func (c *CPUDevice) Copy(dst Buffer, dOff int, dSt []int, src Buffer, sOff int, sSt []int, shape []int, esize int) error {
	d, ok := dst.(*HostBuffer)
	if !ok || d.dev != c {
		return fmt.Errorf("%w: %s cannot write a buffer of %s", ErrCopy, c.name, dst.Device().Name())
	}
	s, ok := src.(*HostBuffer)
	if !ok {
		return fmt.Errorf("%w: %s cannot read a buffer of %s", ErrCopy, c.name, src.Device().Name())
	}
	// A large copy between two buffers is split along its outermost
	// dimension of more than one element over the device's workers (each
	// element's copy costing about a nanosecond); one buffer's own moves
	// stay in order.
	k := 0
	for k < len(shape)-1 && shape[k] == 1 {
		k++
	}
	if d == s || len(shape) == 0 || shape[k] < 2 {
		hostmem.MoveElems(esize, d.bytes, dOff, dSt, s.bytes, sOff, sSt, shape)
		return nil
	}
	per := 1 // elements a unit of dimension k
	for _, v := range shape[k+1:] {
		per *= v
	}
	c.Parallel(shape[k], float64(per), func(lo, hi int) {
		part := append([]int{hi - lo}, shape[k+1:]...)
		hostmem.MoveElems(esize, d.bytes, dOff+lo*dSt[k], dSt[k:], s.bytes, sOff+lo*sSt[k], sSt[k:], part)
	})
	return nil
}

// Fill sets n elements of dst from element off to v (see Device.Fill).
func (c *CPUDevice) Fill(dst Buffer, off, n int, v []byte) error {
	d, ok := dst.(*HostBuffer)
	if !ok || d.dev != c {
		return fmt.Errorf("%w: %s cannot write a buffer of %s", ErrCopy, c.name, dst.Device().Name())
	}
	if n > 0 {
		hostmem.FillElems(d.bytes[off*len(v):(off+n)*len(v)], v)
	}
	return nil
}
