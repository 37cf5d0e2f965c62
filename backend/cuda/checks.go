package cuda

import (
	le "encoding/binary"
	"math"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/eager"
	"github.com/eagerflow/eagerflow/tensor"
)

// Index checks on the device. Ops whose indices must lie in a range
// (Gather, Scatter, ScatterAdd, TakeAlongAxis, PutAlongAxisAdd, a
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

// indexCheck is a check queued on the device.
type indexCheck struct {
	op    string         // the op's name
	what  string         // the message's form: value, position, bound
	idx   *tensor.Tensor // the indices, for the bad one's value
	bound int
}

// checkSlot queues a check of the indices idx against [0, bound) for the
// call and returns the slot its kernel writes to. what is the message,
// with the index, its position and the bound as verbs.
func (d *Device) checkSlot(c *eager.Call, idx *tensor.Tensor, bound int, what string) cu.Ptr {
	d.mu.Lock()
	full := len(d.checks) == checkSlots
	d.mu.Unlock()
	if full {
		check(c, d.Synchronize())
	}
	d.mu.Lock()
	defer d.mu.Unlock()
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
	d.checks = append(d.checks, indexCheck{op: c.Op.Name, what: what, idx: idx, bound: bound})
	return d.checkArea + cu.Ptr(8*(len(d.checks)-1))
}

// reportChecksLocked reads the slots of the checks queued since the last
// report, once the stream has passed them (the caller synchronised it,
// holding d.mu), resets them, and returns the first bad index as an
// error.
func (d *Device) reportChecksLocked() error {
	n := len(d.checks)
	if n == 0 {
		return nil
	}
	checks := d.checks
	d.checks = d.checks[:0]
	host, err := d.checkHostLocked()
	if err != nil {
		return err
	}
	err = d.ctx.Do(func() error {
		if err := d.ctx.MemcpyDtoH(host[:8*n], d.checkArea, d.s); err != nil {
			return err
		}
		if err := d.streamSync(); err != nil {
			return err
		}
		return d.ctx.MemsetD32(d.checkArea, math.MaxUint32, 2*n, d.s)
	})
	if err != nil {
		return err
	}
	for i, ch := range checks {
		pos := le.LittleEndian.Uint64(host[8*i:])
		if pos == noBadIndex {
			continue
		}
		return tensor.NewError("cuda", ch.op, tensor.ErrIndex, nil, "", ch.what+" (found on %s by the kernel; reported at the next synchronisation)",
			d.indexValueLocked(ch.idx, int(pos), host[8*n:]), pos, ch.bound, d.name)
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
	err := d.ctx.Do(func() (err error) { d.checkHost, err = d.ctx.MemAllocHost(8*checkSlots + 8); return })
	return d.checkHost, err
}
