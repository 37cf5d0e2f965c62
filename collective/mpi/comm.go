//go:build linux || darwin

// Package mpi is collective.Comm over MPI: Open MPI's libmpi.so.40, or
// MPICH's libmpi.so.12 (and libraries of its ABI: Intel MPI, MVAPICH),
// loaded at run time with purego (no cgo, nothing to install to build):
// the launcher's implementation (launcher.go reads it from the
// environment; EAGERFLOW_MPI_LIB names a library instead), the processes
// started by mpirun, mpiexec, Slurm's srun or Kubernetes' MPI operator.
// Where the ranks outnumber the free cores they yield the CPU while they
// wait (EAGERFLOW_MPI_YIELD forces it on or off).
//
//	OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
//	mpirun -np 2 --mca btl self,tcp ./train      # in a container, as root
//
// Open returns MPI_COMM_WORLD, initialising MPI once per process (asking
// for MPI_THREAD_MULTIPLE, needing MPI_THREAD_SERIALIZED: calls come from
// any goroutine, one at a time, which the Comm's lock ensures). Errors
// come back through MPI_ERRORS_RETURN with MPI's own text. Tensors are
// sent from and received into host memory; a tensor on another device is
// copied to the host first.
//
// No call waits forever: one that has not completed after the timeout
// (10 minutes; EAGERFLOW_COLLECTIVE_TIMEOUT or SetTimeout change it)
// returns an error wrapping collective.ErrTimeout that names the ranks
// which never reached a collective, found by asking the others on a
// communicator of its own (timeout.go).
package mpi

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/eagerflow/eagerflow/backend"
	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/tensor"
)

// Comm is MPI_COMM_WORLD as a collective.Comm.
type Comm struct {
	ops        *collective.Ops // its collectives as ops, on its engine
	l          *lib
	mu         sync.Mutex // one call at a time
	rank, size int
	closed     bool

	// The watch on calls (timeout.go), under mu.
	timeout  time.Duration     // 0: none
	seq      int64             // collectives called so far
	broken   error             // set by a timeout: every later call fails with it
	diag     uintptr           // a duplicate of the world, for the diagnosis
	multiple bool              // MPI_THREAD_MULTIPLE: the diagnosis may call MPI while a call waits
	kept     []*runtime.Pinner // memory of calls that may never complete, pinned for good
	caller   caller            // the thread that makes the watched calls
}

var (
	openOnce sync.Once
	world    *Comm
	openErr  error
)

// Open loads MPI, initialises it (once per process) and returns the world
// communicator. Without an MPI library, or outside a job MPI can start, it
// returns an error saying so.
func Open() (*Comm, error) {
	openOnce.Do(func() { world, openErr = open() })
	return world, openErr
}

// Thread levels in Open MPI's mpi.h.
const (
	threadSerialized = 2
	threadMultiple   = 3
)

func open() (*Comm, error) {
	job := detectLauncher(os.Getenv)
	job.yieldWhenIdle(os.Getenv, os.Setenv)
	l, err := openLib()
	if err != nil {
		return nil, fmt.Errorf("%w: mpi: %v", collective.ErrCollective, err)
	}
	var pin runtime.Pinner
	defer pin.Unpin()
	timeout, err := defaultTimeout()
	if err != nil {
		return nil, fmt.Errorf("%w: mpi: %v", collective.ErrCollective, err)
	}
	inited := new(int32)
	call(l.initialized, ptr(&pin, inited))
	provided := new(int32)
	if *inited == 0 {
		if code := call(l.initThread, 0, 0, threadMultiple, ptr(&pin, provided)); code != 0 {
			return nil, fmt.Errorf("%w: mpi: MPI_Init_thread: %s", collective.ErrCollective, l.errorString(code))
		}
		if *provided < threadSerialized {
			return nil, fmt.Errorf("%w: mpi: MPI_Init_thread gave thread level %d, eagerflow needs MPI_THREAD_SERIALIZED (%d)", collective.ErrCollective, *provided, threadSerialized)
		}
	}
	c := &Comm{l: l, timeout: timeout, multiple: *provided >= threadMultiple}
	c.ops = &collective.Ops{Comm: c, Engine: (*engine)(c)}
	if code := call(l.commSetErrhandler, l.commWorld, l.errorsReturn); code != 0 {
		return nil, c.fail("MPI_Comm_set_errhandler", code)
	}
	rank, size := new(int32), new(int32)
	call(l.commRank, l.commWorld, ptr(&pin, rank))
	call(l.commSize, l.commWorld, ptr(&pin, size))
	c.rank, c.size = int(*rank), int(*size)
	if err := job.check(c.size, l.path, l.impl); err != nil {
		return nil, fmt.Errorf("%w: mpi: %v", collective.ErrCollective, err)
	}
	diag := new(uintptr)
	if code := call(l.commDup, l.commWorld, ptr(&pin, diag)); code != 0 {
		return nil, c.fail("MPI_Comm_dup", code)
	}
	c.diag = *diag
	if code := call(l.commSetErrhandler, c.diag, l.errorsReturn); code != 0 {
		return nil, c.fail("MPI_Comm_set_errhandler", code)
	}
	return c, nil
}

// Library is the MPI library in use, as MPI_Get_library_version's first
// line gives it: "Open MPI v4.1.4, ...", "MPICH Version: 4.0.2".
func (c *Comm) Library() string {
	v := c.l.version()
	if i := strings.IndexByte(v, '\n'); i >= 0 {
		v = v[:i]
	}
	return strings.TrimSpace(v)
}

// Rank is this process's rank.
func (c *Comm) Rank() int { return c.rank }

// Size is the number of processes.
func (c *Comm) Size() int { return c.size }

func (c *Comm) fail(what string, code int) error {
	return fmt.Errorf("%w: mpi: %s on rank %d of %d: %s", collective.ErrCollective, what, c.rank, c.size, c.l.errorString(code))
}

func (c *Comm) errorf(what, format string, args ...any) error {
	return fmt.Errorf("%w: mpi: %s on rank %d: %s", collective.ErrCollective, what, c.rank, fmt.Sprintf(format, args...))
}

// hostBytes returns t's elements in row-major order on the host, and the
// MPI datatype of its elements (reduce: for a reduction, which bools are
// not).
func (c *Comm) hostBytes(what string, t *tensor.Tensor, reduce bool) ([]byte, uintptr, error) {
	if t == nil {
		return nil, 0, c.errorf(what, "nil tensor")
	}
	if t.Device() != device.Host() {
		moved, err := t.To(device.Host())
		if err != nil {
			return nil, 0, c.errorf(what, "copying %v from %s: %v", t.Shape(), t.Device().Name(), err)
		}
		t = moved
	}
	var dt uintptr
	switch t.DType() {
	case tensor.Float32:
		dt = c.l.float
	case tensor.Float64:
		dt = c.l.double
	case tensor.Int32:
		dt = c.l.int32
	case tensor.Int64:
		dt = c.l.int64
	case tensor.Uint8:
		dt = c.l.uint8
	case tensor.Bool:
		if reduce {
			return nil, 0, c.errorf(what, "bool tensors cannot be reduced; Cast them to a number first")
		}
		dt = c.l.byte
	default:
		return nil, 0, c.errorf(what, "dtype %v", t.DType())
	}
	if t.NumElements() > 1<<31-1 {
		return nil, 0, c.errorf(what, "%d elements: MPI counts are 32-bit; split the tensor", t.NumElements())
	}
	return t.Contiguous().HostBytes(), dt, nil
}

func (c *Comm) op(what string, op collective.Op, dt tensor.DType) (uintptr, error) {
	switch op {
	case collective.Sum:
		return c.l.opSum, nil
	case collective.Mean:
		if !dt.IsFloat() {
			return 0, c.errorf(what, "Mean of %v: a mean needs floats", dt)
		}
		return c.l.opSum, nil
	case collective.Max:
		return c.l.opMax, nil
	case collective.Min:
		return c.l.opMin, nil
	}
	return 0, c.errorf(what, "unknown op %v", op)
}

// addr is the address of b's first byte (0 for an empty b), pinned.
func addr(pin *runtime.Pinner, b []byte) uintptr {
	if len(b) == 0 {
		return 0
	}
	return ptr(pin, &b[0])
}

// AllReduce combines t across every rank with op (Mean divides the sum by
// Size); every rank gets the result, a new host tensor of t's dtype and
// shape.
func (c *Comm) AllReduce(t *tensor.Tensor, op collective.Op) (*tensor.Tensor, error) {
	return c.ops.AllReduce(t, op)
}

// Broadcast returns root's t on every rank.
func (c *Comm) Broadcast(t *tensor.Tensor, root int) (*tensor.Tensor, error) {
	return c.ops.Broadcast(t, root)
}

// AllGather stacks every rank's t in rank order: [Size, t's shape...].
func (c *Comm) AllGather(t *tensor.Tensor) (*tensor.Tensor, error) {
	return c.ops.AllGather(t)
}

// ReduceScatter combines t across ranks with op and returns this rank's
// block along the first dimension: [t.Dim(0)/Size, ...].
func (c *Comm) ReduceScatter(t *tensor.Tensor, op collective.Op) (*tensor.Tensor, error) {
	return c.ops.ReduceScatter(t, op)
}

// engine is what communicates for the Comm's collective ops
// (collective.Ops): MPI's calls on the tensors as they are.
type engine Comm

func (e *engine) AllReduce(t *tensor.Tensor, op collective.Op) (*tensor.Tensor, error) {
	c := (*Comm)(e)
	src, dt, err := c.hostBytes("AllReduce", t, true)
	if err != nil {
		return nil, err
	}
	mop, err := c.op("AllReduce", op, t.DType())
	if err != nil {
		return nil, err
	}
	out := backend.MustEmptyHost(t.DType(), t.Shape())
	dst := out.HostBytes()
	var pin runtime.Pinner
	if err := c.run("AllReduce", len(src), &pin, c.l.allreduce, addr(&pin, src), addr(&pin, dst), uintptr(t.NumElements()), dt, mop, c.l.commWorld); err != nil {
		return nil, err
	}
	if op == collective.Mean {
		scaleBy(out, 1/float64(c.size))
	}
	return out, nil
}

// AllReduceInPlace is AllReduce writing the result over t
// (collective.InPlace): t must be a row-major tensor on the host, which
// nothing else uses during the call.
func (c *Comm) AllReduceInPlace(t *tensor.Tensor, op collective.Op) error {
	if t != nil && (t.Device() != device.Host() || !t.IsRowMajor()) {
		return c.errorf("AllReduceInPlace", "%s on %s: want a row-major tensor on the host", tensor.Describe(t), t.Device().Name())
	}
	if err := collective.CheckUntraced("mpi: AllReduceInPlace", t); err != nil {
		return err
	}
	buf, dt, err := c.hostBytes("AllReduceInPlace", t, true)
	if err != nil {
		return err
	}
	mop, err := c.op("AllReduceInPlace", op, t.DType())
	if err != nil {
		return err
	}
	var pin runtime.Pinner
	if err := c.run("AllReduce", len(buf), &pin, c.l.allreduce, c.l.inPlace, addr(&pin, buf), uintptr(t.NumElements()), dt, mop, c.l.commWorld); err != nil {
		return err
	}
	if op == collective.Mean {
		scaleBy(t, 1/float64(c.size))
	}
	return nil
}

// scaleBy multiplies a float host tensor's elements by s in place (the
// tensor is the collective's own, not yet handed out).
func scaleBy(t *tensor.Tensor, s float64) {
	switch t.DType() {
	case tensor.Float32:
		d := backend.HostData[float32](t)
		for i := range d {
			d[i] *= float32(s)
		}
	case tensor.Float64:
		d := backend.HostData[float64](t)
		for i := range d {
			d[i] *= s
		}
	}
}

func (e *engine) Broadcast(t *tensor.Tensor, root int) (*tensor.Tensor, error) {
	c := (*Comm)(e)
	if root < 0 || root >= c.size {
		return nil, c.errorf("Broadcast", "root %d outside [0, %d)", root, c.size)
	}
	src, dt, err := c.hostBytes("Broadcast", t, false)
	if err != nil {
		return nil, err
	}
	out := backend.MustEmptyHost(t.DType(), t.Shape())
	buf := out.HostBytes()
	if c.rank == root {
		copy(buf, src)
	}
	var pin runtime.Pinner
	if err := c.run("Broadcast", len(buf), &pin, c.l.bcast, addr(&pin, buf), uintptr(t.NumElements()), dt, uintptr(root), c.l.commWorld); err != nil {
		return nil, err
	}
	return out, nil
}

func (e *engine) AllGather(t *tensor.Tensor) (*tensor.Tensor, error) {
	c := (*Comm)(e)
	src, dt, err := c.hostBytes("AllGather", t, false)
	if err != nil {
		return nil, err
	}
	out := backend.MustEmptyHost(t.DType(), append(tensor.Shape{c.size}, t.Shape()...))
	n := uintptr(t.NumElements())
	var pin runtime.Pinner
	if err := c.run("AllGather", len(src)*c.size, &pin, c.l.allgather, addr(&pin, src), n, dt, addr(&pin, out.HostBytes()), n, dt, c.l.commWorld); err != nil {
		return nil, err
	}
	return out, nil
}

func (e *engine) ReduceScatter(t *tensor.Tensor, op collective.Op) (*tensor.Tensor, error) {
	c := (*Comm)(e)
	if t == nil || t.Rank() == 0 || t.Dim(0)%c.size != 0 {
		return nil, c.errorf("ReduceScatter", "the first dimension of %v must be a multiple of the size %d", tensor.Describe(t), c.size)
	}
	src, dt, err := c.hostBytes("ReduceScatter", t, true)
	if err != nil {
		return nil, err
	}
	mop, err := c.op("ReduceScatter", op, t.DType())
	if err != nil {
		return nil, err
	}
	shape := t.Shape().Clone()
	shape[0] /= c.size
	out := backend.MustEmptyHost(t.DType(), shape)
	var pin runtime.Pinner
	if err := c.run("ReduceScatter", len(src), &pin, c.l.reduceScatterBlock, addr(&pin, src), addr(&pin, out.HostBytes()), uintptr(out.NumElements()), dt, mop, c.l.commWorld); err != nil {
		return nil, err
	}
	if op == collective.Mean {
		scaleBy(out, 1/float64(c.size))
	}
	return out, nil
}

// Send sends t to rank to with tag.
func (c *Comm) Send(t *tensor.Tensor, to, tag int) error {
	if to < 0 || to >= c.size || tag < 0 {
		return c.errorf("Send", "rank %d (of %d), tag %d", to, c.size, tag)
	}
	if err := collective.CheckUntraced("mpi: Send", t); err != nil {
		return err
	}
	src, dt, err := c.hostBytes("Send", t, false)
	if err != nil {
		return err
	}
	var pin runtime.Pinner
	return c.run("Send", len(src), &pin, c.l.send, addr(&pin, src), uintptr(t.NumElements()), dt, uintptr(to), uintptr(tag), c.l.commWorld)
}

// Recv receives from rank from, with tag, a tensor shaped like like.
func (c *Comm) Recv(like *tensor.Tensor, from, tag int) (*tensor.Tensor, error) {
	if from < 0 || from >= c.size || tag < 0 {
		return nil, c.errorf("Recv", "rank %d (of %d), tag %d", from, c.size, tag)
	}
	if err := collective.CheckUntraced("mpi: Recv", like); err != nil {
		return nil, err
	}
	_, dt, err := c.hostBytes("Recv", like, false) // checks like, gives the datatype
	if err != nil {
		return nil, err
	}
	out := backend.MustEmptyHost(like.DType(), like.Shape())
	var pin runtime.Pinner
	if err := c.run("Recv", out.NumElements()*like.DType().Size(), &pin, c.l.recv, addr(&pin, out.HostBytes()), uintptr(out.NumElements()), dt, uintptr(from), uintptr(tag), c.l.commWorld, c.l.statusIgnore); err != nil {
		return nil, err
	}
	return out, nil
}

// Barrier returns once every rank has called it.
func (c *Comm) Barrier() error { return c.run("Barrier", 0, nil, c.l.barrier, c.l.commWorld) }

// Close finalises MPI for this process; the communicator cannot be used
// afterwards (and MPI cannot be initialised again in this process). After
// a timeout it returns the timeout's error and leaves MPI as it is (a
// call still waits in it).
func (c *Comm) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil {
		return c.broken
	}
	if c.closed {
		return nil
	}
	c.closed = true
	if code := call(c.l.finalize); code != 0 {
		return c.fail("MPI_Finalize", code)
	}
	return nil
}

var (
	_ collective.Comm    = (*Comm)(nil)
	_ collective.InPlace = (*Comm)(nil)
)
