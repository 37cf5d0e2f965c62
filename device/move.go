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
	hostmem.MoveElems(esize, d.bytes, dOff, dSt, s.bytes, sOff, sSt, shape)
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
