package cuda

import (
	le "encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Index checks on the device. Ops whose indices must lie in a range
// (Gather, Scatter, ScatterAdd, TakeAlongAxis, PutAlongAxisAddZeros, a
// SparseSoftmaxCrossEntropy label) check them in their kernels instead of
// reading them on the host, which would make the host wait for the
// stream: a bad index gathers zero or updates nothing, and the kernel
// leaves the first bad position in a check slot of the device. At the
// next synchronisation (a read of a value on the host, Synchronize) the
// slots are read and the first failed check in queue order is the error
// there, of kind tensor.ErrIndex, naming the op, the index, its position
// and the range: ops' policy for devices that run kernels asynchronously.

// checkSlots is how many checks may wait between synchronisations; the
// next one waits for the device.
const checkSlots = 256

// noBadIndex is a check slot's value until a kernel finds a bad index.
const noBadIndex = math.MaxUint64

// indexCheck is a check queued on the device: its op, its message (the
// index, its position and the bound as verbs), the indices (for the bad
// one's value), the bound, and its slot: entry index of the area at area
// (the device's, or a recording's).
type indexCheck struct {
	op    string
	what  string
	idx   *tensor.Tensor
	bound int
	area  cu.Ptr
	index int
}

// checkSlot queues a check of the indices idx against [0, bound) for the
// call and returns the slot its kernel writes to. what is the message,
// with the index, its position and the bound as verbs. While a recording
// captures, the slot is the recording's (its replays queue the check
// again).
func (d *Device) checkSlot(c *eager.Call, idx *tensor.Tensor, bound int, what string) cu.Ptr {
	d.mu.Lock()
	full := d.capturing == nil && d.eagerChecksLocked() == checkSlots
	d.mu.Unlock()
	if full {
		check(c, d.Synchronize())
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	ch := indexCheck{op: c.Op.Name, what: what, idx: idx, bound: bound}
	if p := d.capturing; p != nil {
		if len(p.checks) == checkSlots {
			check(c, fmt.Errorf("%w: more than %d index checks in one recording", device.ErrCapture, checkSlots))
		}
		if p.checkArea == 0 {
			// The recording's slots, reset by its first operation at every
			// replay (the memset is captured too).
			err := d.ctx.Do(func() (err error) {
				if p.checkArea, err = d.ctx.MemAlloc(8*checkSlots, 0); err != nil {
					return err
				}
				p.all = append(p.all, p.checkArea)
				return d.ctx.MemsetD32(p.checkArea, math.MaxUint32, 2*checkSlots, d.s)
			})
			check(c, err)
		}
		ch.area, ch.index = p.checkArea, len(p.checks)
		p.checks = append(p.checks, ch)
		return ch.area + cu.Ptr(8*ch.index)
	}
	if d.checkArea == 0 {
		err := d.ctx.Do(func() (err error) {
			if d.checkArea, err = d.ctx.MemAlloc(8*checkSlots, d.s); err != nil {
				return err
			}
			return d.ctx.MemsetD32(d.checkArea, math.MaxUint32, 2*checkSlots, d.s)
		})
		if err != nil {
			d.checkArea = 0
			check(c, err)
		}
	}
	ch.area, ch.index = d.checkArea, d.eagerChecksLocked()
	d.checks = append(d.checks, ch)
	return ch.area + cu.Ptr(8*ch.index)
}

// eagerChecksLocked counts the queued checks in the device's own area.
func (d *Device) eagerChecksLocked() int {
	n := 0
	for _, ch := range d.checks {
		if ch.area == d.checkArea {
			n++
		}
	}
	return n
}

// reportChecksLocked reads the slots of the checks queued since the last
// report, resets them, and returns the first bad index as an error (d.mu
// held): their reads queued, one wait, then the slots decoded.
func (d *Device) reportChecksLocked() error {
	pending, err := d.queueCheckReadsLocked()
	if err != nil || pending == nil {
		return err
	}
	if err := d.ctx.Do(d.streamSync); err != nil {
		return err
	}
	return d.decodeChecksLocked(pending)
}

// checkReads are the checks of a report, whose slots' reads are queued
// into the check host buffer (an area's slots at offset area[ch.area]).
type checkReads struct {
	checks []indexCheck
	at     map[cu.Ptr]int
}

// maxCheckAreas is how many areas (the device's own, each recording's)
// one report reads with one wait; more wait once each after.
const maxCheckAreas = 4

// queueCheckReadsLocked queues, behind the work queued so far, the copy
// of every queued check's area to the host (d.mu held); nil when no
// check is queued. The caller waits for the stream, then decodes
// (decodeChecksLocked): a loss read and its checks share a wait. An area
// is reset only where a check failed: slots that read "no bad index"
// hold it still, and a recording's area is reset by every replay.
func (d *Device) queueCheckReadsLocked() (*checkReads, error) {
	if len(d.checks) == 0 {
		return nil, nil
	}
	r := &checkReads{checks: slices.Clone(d.checks), at: map[cu.Ptr]int{}}
	d.checks = d.checks[:0]
	host, err := d.checkHostLocked()
	if err != nil {
		return nil, err
	}
	for _, ch := range r.checks {
		if _, ok := r.at[ch.area]; ok || len(r.at) == maxCheckAreas {
			continue
		}
		off, n := 8*checkSlots*len(r.at), r.slotsOf(ch.area)
		if err := d.ctx.Do(func() error { return d.ctx.MemcpyDtoH(host[off:off+8*n], ch.area, d.s) }); err != nil {
			return nil, err
		}
		r.at[ch.area] = off
	}
	return r, nil
}

// slotsOf is how many slots of area r's checks use.
func (r *checkReads) slotsOf(area cu.Ptr) int {
	n := 0
	for _, o := range r.checks {
		if o.area == area {
			n = max(n, o.index+1)
		}
	}
	return n
}

// decodeChecksLocked returns the first bad index of r's checks as an
// error, once the stream has passed their reads (d.mu held); areas
// beyond maxCheckAreas are read now, a wait each.
func (d *Device) decodeChecksLocked(r *checkReads) error {
	host := d.checkHost
	slots := map[cu.Ptr][]byte{}
	for area, off := range r.at {
		slots[area] = slices.Clone(host[off : off+8*r.slotsOf(area)])
		if err := d.resetFailedLocked(area, slots[area]); err != nil {
			return err
		}
	}
	for _, ch := range r.checks {
		if _, ok := slots[ch.area]; ok {
			continue
		}
		n := r.slotsOf(ch.area)
		err := d.ctx.Do(func() error {
			if err := d.ctx.MemcpyDtoH(host[:8*n], ch.area, d.s); err != nil {
				return err
			}
			return d.streamSync()
		})
		if err != nil {
			return err
		}
		slots[ch.area] = slices.Clone(host[:8*n])
		if err := d.resetFailedLocked(ch.area, slots[ch.area]); err != nil {
			return err
		}
	}
	for _, ch := range r.checks {
		pos := le.LittleEndian.Uint64(slots[ch.area][8*ch.index:])
		if pos == noBadIndex {
			continue
		}
		return tensor.NewError("cuda", ch.op, tensor.ErrIndex, nil, "", ch.what+" (found on %s by the kernel; reported at the next synchronisation)",
			d.indexValueLocked(ch.idx, int(pos), host[8*checkSlots*maxCheckAreas:]), pos, ch.bound, d.name)
	}
	return nil
}

// resetFailedLocked queues the reset of area, whose slots read (as
// slots) hold a failure, so that its next checks start clean; an area
// whose slots all say "no bad index" needs none.
func (d *Device) resetFailedLocked(area cu.Ptr, slots []byte) error {
	for i := 0; i+8 <= len(slots); i += 8 {
		if le.LittleEndian.Uint64(slots[i:]) != noBadIndex {
			return d.ctx.Do(func() error { return d.ctx.MemsetD32(area, math.MaxUint32, len(slots)/4, d.s) })
		}
	}
	return nil
}

// indexValueLocked reads index pos of idx (a host wait; d.mu held) into
// scratch, or gives -1 where idx has been released since.
func (d *Device) indexValueLocked(idx *tensor.Tensor, pos int, scratch []byte) int64 {
	gb, ok := idx.Buffer().(*buffer)
	if !ok || gb == nil {
		return -1
	}
	size := idx.DType().Size()
	err := d.ctx.Do(func() error {
		if err := d.ctx.MemcpyDtoH(scratch[:size], gb.ptr+cu.Ptr(pos*size), d.s); err != nil {
			return err
		}
		return d.streamSync()
	})
	if err != nil {
		return -1
	}
	if size == 4 {
		return int64(int32(le.LittleEndian.Uint32(scratch)))
	}
	return int64(le.LittleEndian.Uint64(scratch))
}

// checkHostLocked is the page-locked buffer the slots are read into, with
// room for one index after them.
func (d *Device) checkHostLocked() ([]byte, error) {
	if d.checkHost != nil {
		return d.checkHost, nil
	}
	err := d.ctx.Do(func() (err error) { d.checkHost, err = d.ctx.MemAllocHost(8*checkSlots*maxCheckAreas + 8); return })
	return d.checkHost, err
}
