package emu

import (
	"github.com/eagerflow/eagerflow/tensor"

	"crypto/rand"
	"encoding/binary"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
)

// NCCL returns the emulated NCCL of d's device, whose collectives move
// bytes between the processes' emulated device memories over wire (the
// host communicator they share): each call queues on its stream like a
// kernel and runs its exchange when the stream reaches it. It holds the
// library's contracts: a context current at InitRank, every rank joining
// with the same id and size, device ranges inside allocations, and every
// rank calling the same collective with the same count, type, operation
// and root (a rank that does not is an ncclInvalidUsage error naming both
// calls, where the library would hang or corrupt memory). Emulation runs
// one communicator over the whole wire: nranks must be its size and rank
// its rank.
func (d *Driver) NCCL(wire cu.Wire) (cu.NCCL, error) {
	if wire == nil {
		return nil, fmt.Errorf("emu: the emulated NCCL needs a host wire between the processes")
	}
	return &nccl{d: d, wire: wire}, nil
}

type nccl struct {
	d    *Driver
	wire cu.Wire
}

func (n *nccl) Name() string { return "emulator (NCCL over the host communicator)" }

// UniqueID returns random bytes: the emulated id only has to match.
func (n *nccl) UniqueID() (cu.UniqueID, error) {
	var id cu.UniqueID
	_, err := rand.Read(id[:])
	return id, err
}

// InitRank checks that every rank joins with the same id and size, and
// that rank and size are the wire's.
func (n *nccl) InitRank(nranks, rank int, id cu.UniqueID) (cu.NCCLComm, error) {
	const call = "ncclCommInitRankScalable"
	n.d.mu.Lock()
	c := n.d.ctx
	n.d.mu.Unlock()
	if c == nil {
		return nil, cu.NCCLErrorf(call, cu.NCCLUnhandledCudaError, "no context: retain the device's primary context first")
	}
	if err := c.enter(call); err != nil {
		return nil, err
	}
	c.mu.Unlock()
	if nranks < 1 || rank < 0 || rank >= nranks {
		return nil, cu.NCCLErrorf(call, cu.NCCLInvalidArgument, "rank %d of %d", rank, nranks)
	}
	if nranks != n.wire.Size() || rank != n.wire.Rank() {
		return nil, cu.NCCLErrorf(call, cu.NCCLInvalidUsage, "rank %d of %d on a wire of %d where this process is rank %d (the emulator runs one communicator over the whole wire)",
			rank, nranks, n.wire.Size(), n.wire.Rank())
	}
	mine := make([]byte, len(id)+8)
	copy(mine, id[:])
	binary.LittleEndian.PutUint64(mine[len(id):], uint64(nranks))
	all, err := n.wire.AllGather(mine)
	if err != nil {
		return nil, cu.NCCLErrorf(call, cu.NCCLSystemError, "exchanging ids: %v", err)
	}
	for r := range nranks {
		if theirs := all[r*len(mine) : (r+1)*len(mine)]; string(theirs) != string(mine) {
			return nil, cu.NCCLErrorf(call, cu.NCCLInvalidUsage, "rank %d joined with another unique id or size than rank %d", r, rank)
		}
	}
	return &ncclComm{c: c, wire: n.wire, rank: rank, size: nranks}, nil
}

// ncclComm is an emulated communicator.
type ncclComm struct {
	c          *Context
	wire       cu.Wire
	rank, size int
	done       atomic.Bool // destroyed or aborted (Abort may come while a stalled stream holds the context)
}

// The collectives, as each rank announces them to the others.
const (
	kindAllReduce = iota + 1
	kindBroadcast
	kindAllGather
	kindReduceScatter
)

var kindNames = [...]string{"", "ncclAllReduce", "ncclBroadcast", "ncclAllGather", "ncclReduceScatter"}

// callHeader is what a rank says of its collective before the bytes: the
// others check that it is the same call.
type callHeader struct{ kind, count, dtype, op, root int64 }

func (h callHeader) String() string {
	return fmt.Sprintf("%s(count %d, type %d, op %d, root %d)", kindNames[h.kind], h.count, h.dtype, h.op, h.root)
}

// check makes the argument checks NCCL makes at the call.
func (m *ncclComm) check(call string, ranges map[cu.Ptr]int, t cu.NCCLType, op cu.NCCLOp, peer int) error {
	if m.done.Load() {
		return cu.NCCLErrorf(call, cu.NCCLInvalidUsage, "the communicator was destroyed")
	}
	if t.Size() == 0 {
		return cu.NCCLErrorf(call, cu.NCCLInvalidArgument, "data type %d", t)
	}
	if op < cu.NCCLSum || op > cu.NCCLAvg {
		return cu.NCCLErrorf(call, cu.NCCLInvalidArgument, "reduction %d", op)
	}
	if peer < 0 || peer >= m.size {
		return cu.NCCLErrorf(call, cu.NCCLInvalidArgument, "rank %d of %d", peer, m.size)
	}
	for p, n := range ranges {
		if n < 0 {
			return cu.NCCLErrorf(call, cu.NCCLInvalidArgument, "count %d", n)
		}
		if n > 0 {
			if _, err := m.c.mem.slice(uint64(p), n); err != nil {
				return cu.NCCLErrorf(call, cu.NCCLInvalidArgument, "%v", err)
			}
		}
	}
	return nil
}

// queue checks a call and queues run on s.
func (m *ncclComm) queue(call string, s cu.Stream, ranges map[cu.Ptr]int, t cu.NCCLType, op cu.NCCLOp, peer int, run func() error) error {
	return m.c.enqueue(call, s, func() error { return m.check(call, ranges, t, op, peer) }, run)
}

// read copies n bytes at p (the stream runs this with the context locked).
func (m *ncclComm) read(call string, p cu.Ptr, n int) ([]byte, error) {
	b, err := m.c.mem.slice(uint64(p), n)
	if err != nil {
		return nil, freed(call, err)
	}
	return append([]byte(nil), b...), nil
}

func (m *ncclComm) write(call string, p cu.Ptr, b []byte) error {
	d, err := m.c.mem.slice(uint64(p), len(b))
	if err != nil {
		return freed(call, err)
	}
	copy(d, b)
	return nil
}

// exchange announces h, checks every rank announced the same, and returns
// every rank's data in rank order.
func (m *ncclComm) exchange(h callHeader, data []byte) ([][]byte, error) {
	call := kindNames[h.kind]
	var hb [40]byte
	for i, v := range []int64{h.kind, h.count, h.dtype, h.op, h.root} {
		binary.LittleEndian.PutUint64(hb[8*i:], uint64(v))
	}
	all, err := m.wire.AllGather(hb[:])
	if err != nil {
		return nil, cu.NCCLErrorf(call, cu.NCCLSystemError, "rank %d: %v", m.rank, err)
	}
	for r := range m.size {
		var o callHeader
		for i, p := range []*int64{&o.kind, &o.count, &o.dtype, &o.op, &o.root} {
			*p = int64(binary.LittleEndian.Uint64(all[40*r+8*i:]))
		}
		if o != h {
			return nil, cu.NCCLErrorf(call, cu.NCCLInvalidUsage, "rank %d called %v where rank %d called %v", r, o, m.rank, h)
		}
	}
	got, err := m.wire.AllGather(data)
	if err != nil {
		return nil, cu.NCCLErrorf(call, cu.NCCLSystemError, "rank %d: %v", m.rank, err)
	}
	parts := make([][]byte, m.size)
	for r := range parts {
		parts[r] = got[r*len(data) : (r+1)*len(data)]
	}
	return parts, nil
}

// AllReduce queues the reduction of every rank's send into recv.
func (m *ncclComm) AllReduce(send, recv cu.Ptr, count int, t cu.NCCLType, op cu.NCCLOp, s cu.Stream) error {
	const call = "ncclAllReduce"
	n := count * t.Size()
	return m.queue(call, s, map[cu.Ptr]int{send: n, recv: n}, t, op, 0, func() error {
		b, err := m.read(call, send, n)
		if err != nil {
			return err
		}
		parts, err := m.exchange(callHeader{kindAllReduce, int64(count), int64(t), int64(op), 0}, b)
		if err != nil {
			return err
		}
		return m.write(call, recv, reduce(parts, t, op))
	})
}

// Broadcast queues root's send into every rank's recv.
func (m *ncclComm) Broadcast(send, recv cu.Ptr, count int, t cu.NCCLType, root int, s cu.Stream) error {
	const call = "ncclBroadcast"
	n := count * t.Size()
	ranges := map[cu.Ptr]int{recv: n}
	if m.rank == root {
		ranges[send] = n
	}
	return m.queue(call, s, ranges, t, cu.NCCLSum, root, func() error {
		b := make([]byte, n)
		if m.rank == root {
			var err error
			if b, err = m.read(call, send, n); err != nil {
				return err
			}
		}
		parts, err := m.exchange(callHeader{kindBroadcast, int64(count), int64(t), 0, int64(root)}, b)
		if err != nil {
			return err
		}
		return m.write(call, recv, parts[root])
	})
}

// AllGather queues every rank's send into recv, in rank order.
func (m *ncclComm) AllGather(send, recv cu.Ptr, count int, t cu.NCCLType, s cu.Stream) error {
	const call = "ncclAllGather"
	n := count * t.Size()
	return m.queue(call, s, map[cu.Ptr]int{send: n, recv: n * m.size}, t, cu.NCCLSum, 0, func() error {
		b, err := m.read(call, send, n)
		if err != nil {
			return err
		}
		parts, err := m.exchange(callHeader{kindAllGather, int64(count), int64(t), 0, 0}, b)
		if err != nil {
			return err
		}
		var all []byte
		for _, p := range parts {
			all = append(all, p...)
		}
		return m.write(call, recv, all)
	})
}

// ReduceScatter queues the reduction of Size*count elements, this rank's
// block of which lands in recv.
func (m *ncclComm) ReduceScatter(send, recv cu.Ptr, count int, t cu.NCCLType, op cu.NCCLOp, s cu.Stream) error {
	const call = "ncclReduceScatter"
	n := count * t.Size()
	return m.queue(call, s, map[cu.Ptr]int{send: n * m.size, recv: n}, t, op, 0, func() error {
		b, err := m.read(call, send, n*m.size)
		if err != nil {
			return err
		}
		parts, err := m.exchange(callHeader{kindReduceScatter, int64(count), int64(t), int64(op), 0}, b)
		if err != nil {
			return err
		}
		for r := range parts {
			parts[r] = parts[r][m.rank*n : (m.rank+1)*n]
		}
		return m.write(call, recv, reduce(parts, t, op))
	})
}

// Send queues count elements at send to peer.
func (m *ncclComm) Send(send cu.Ptr, count int, t cu.NCCLType, peer int, s cu.Stream) error {
	const call = "ncclSend"
	n := count * t.Size()
	return m.queue(call, s, map[cu.Ptr]int{send: n}, t, cu.NCCLSum, peer, func() error {
		b, err := m.read(call, send, n)
		if err != nil {
			return err
		}
		if err := m.wire.Send(b, peer); err != nil {
			return cu.NCCLErrorf(call, cu.NCCLSystemError, "rank %d to %d: %v", m.rank, peer, err)
		}
		return nil
	})
}

// Recv queues the receipt of count elements from peer into recv.
func (m *ncclComm) Recv(recv cu.Ptr, count int, t cu.NCCLType, peer int, s cu.Stream) error {
	const call = "ncclRecv"
	n := count * t.Size()
	return m.queue(call, s, map[cu.Ptr]int{recv: n}, t, cu.NCCLSum, peer, func() error {
		b := make([]byte, n)
		if err := m.wire.Recv(b, peer); err != nil {
			return cu.NCCLErrorf(call, cu.NCCLSystemError, "rank %d from %d: %v", m.rank, peer, err)
		}
		return m.write(call, recv, b)
	})
}

// AsyncError is nil: an emulated collective's failure is its stream's.
func (m *ncclComm) AsyncError() error { return nil }

// Destroy and Abort end the communicator; later calls fail.
func (m *ncclComm) Destroy() error { m.done.Store(true); return nil }
func (m *ncclComm) Abort() error   { m.done.Store(true); return nil }

// reduce combines parts (one per rank, in rank order) element by element.
func reduce(parts [][]byte, t cu.NCCLType, op cu.NCCLOp) []byte {
	out := append([]byte(nil), parts[0]...)
	switch t {
	case cu.NCCLInt8:
		reduceAs[int8](out, parts, op)
	case cu.NCCLUint8:
		reduceAs[uint8](out, parts, op)
	case cu.NCCLInt32:
		reduceAs[int32](out, parts, op)
	case cu.NCCLInt64:
		reduceAs[int64](out, parts, op)
	case cu.NCCLFloat32:
		reduceAs[float32](out, parts, op)
	case cu.NCCLFloat64:
		reduceAs[float64](out, parts, op)
	case cu.NCCLBFloat16:
		reduceHalves(out, parts, op, func(h uint16) float32 { return tensor.BF16(h).Float32() }, func(f float32) uint16 { return uint16(tensor.ToBF16(f)) })
	case cu.NCCLFloat16:
		reduceHalves(out, parts, op, func(h uint16) float32 { return tensor.F16(h).Float32() }, func(f float32) uint16 { return uint16(tensor.ToF16(f)) })
	}
	return out
}

// reduceHalves folds parts[1:] into out (which holds parts[0]) in rank
// order, each step in float32 and rounded back to the 16-bit type, as
// NCCL's ring rounds at every hop; Avg divides the sum by the ranks.
func reduceHalves(out []byte, parts [][]byte, op cu.NCCLOp, widen func(uint16) float32, round func(float32) uint16) {
	acc := halves(out)
	for _, p := range parts[1:] {
		for i, v := range halves(p) {
			a, b := widen(acc[i]), widen(v)
			switch op {
			case cu.NCCLSum, cu.NCCLAvg:
				a += b
			case cu.NCCLProd:
				a *= b
			case cu.NCCLMax:
				a = max(a, b)
			case cu.NCCLMin:
				a = min(a, b)
			}
			acc[i] = round(a)
		}
	}
	if op == cu.NCCLAvg {
		for i := range acc {
			acc[i] = round(widen(acc[i]) / float32(len(parts)))
		}
	}
}

// halves is b as 16-bit elements.
func halves(b []byte) []uint16 {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), len(b)/2)
}

type number interface {
	~int8 | ~uint8 | ~int32 | ~int64 | ~float32 | ~float64
}

// elems is b as elements of T.
func elems[T number](b []byte) []T {
	var z T
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), len(b)/int(unsafe.Sizeof(z)))
}

// reduceAs folds parts[1:] into out (which holds parts[0]) in rank order;
// Avg divides the sum by the number of ranks.
func reduceAs[T number](out []byte, parts [][]byte, op cu.NCCLOp) {
	acc := elems[T](out)
	for _, p := range parts[1:] {
		for i, v := range elems[T](p) {
			switch op {
			case cu.NCCLSum, cu.NCCLAvg:
				acc[i] += v
			case cu.NCCLProd:
				acc[i] *= v
			case cu.NCCLMax:
				acc[i] = max(acc[i], v)
			case cu.NCCLMin:
				acc[i] = min(acc[i], v)
			}
		}
	}
	if op == cu.NCCLAvg {
		for i := range acc {
			acc[i] /= T(len(parts))
		}
	}
}
