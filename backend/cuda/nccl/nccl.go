// Package nccl is collective.Comm for tensors on NVIDIA GPUs: NCCL's
// collectives between the GPUs of several processes (one GPU each),
// queued on the GPU's stream like its kernels, so a gradient is reduced
// where it was computed and never visits the host.
//
//	host, err := mpi.Open()                  // the processes, as mpirun started them
//	gpu, err := cuda.Open(0)
//	comm, err := nccl.Open(gpu, host)        // rank and size are host's
//	sum, err := comm.AllReduce(grad, collective.Mean)
//
// libnccl.so.2 (NCCL 2.23 or newer) is loaded with purego when the first
// communicator opens, found as the CUDA libraries are (pip's
// nvidia-nccl-cu* wheels among the places searched; EAGERFLOW_LIBNCCL
// names a file). Rank 0 makes NCCL's unique id and broadcasts it over the
// host communicator; then every rank joins. On the emulated GPU
// (EAGERFLOW_CUDA_DRIVER=emulator) the same calls run on an emulated NCCL
// whose bytes travel over the host communicator, holding the library's
// contracts (every rank calling the same collective with the same count
// and type, device ranges inside allocations), so the package is tested
// on machines without a GPU, under mpirun as with collective/mpi.
//
// The calls return once the collective is queued: results are tensors on
// the GPU that later ops and reads wait for, as for any kernel. A tensor
// on another device is copied to the GPU first. NCCL has no tags: Send
// and Recv between two ranks match in the order they are called, and a
// rank cannot send to itself. Barrier waits for the GPU's queued work and
// fails after the timeout (10 minutes; SetTimeout) with an error wrapping
// collective.ErrTimeout, aborting the communicator, where a peer died or
// hangs; on the driver, a watchdog does the same for every collective
// the GPU has not finished within the timeout (watchdog.go), so that
// nothing waits on a stalled peer for ever.
package nccl

import (
	"fmt"
	"sync"
	"time"

	"github.com/eagerflow/eagerflow/backend/cuda"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/raw"
	"github.com/eagerflow/eagerflow/collective"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/tensor"
)

// Comm is an NCCL communicator of one GPU per process.
type Comm struct {
	ops        *collective.Ops // its collectives as ops, on its engine
	gpu        *cuda.Device
	raw        raw.Device
	lib        cu.NCCL
	c          cu.NCCLComm
	rank, size int

	mu      sync.Mutex
	closed  bool
	broken  error // a timeout aborted the communicator
	timeout time.Duration
	// The watchdog (watchdog.go): the driver's events, the marks of the
	// collectives queued and not yet passed, how many were queued, and
	// the channel that stops it.
	events    cu.Events
	marks     []mark
	seq       int
	stopWatch chan struct{}
}

// DefaultTimeout is how long a collective may take on the GPU, and Barrier
// wait, before the communicator gives up.
const DefaultTimeout = 10 * time.Minute

// Open makes the communicator of gpu among host's processes (each calls
// Open with its own GPU): this process is host's rank. Errors: no NCCL
// (the files tried), rank 0's id could not be made, a rank failed to
// join, the host communicator failed.
func Open(gpu *cuda.Device, host collective.Comm) (*Comm, error) {
	if gpu == nil || host == nil {
		return nil, fmt.Errorf("%w: nccl: Open needs a GPU and a host communicator", collective.ErrCollective)
	}
	r, ok := raw.Of(gpu)
	if !ok {
		return nil, fmt.Errorf("%w: nccl: %s is not a CUDA device", collective.ErrCollective, gpu.Name())
	}
	c := &Comm{gpu: gpu, raw: r, rank: host.Rank(), size: host.Size(), timeout: DefaultTimeout}
	c.ops = &collective.Ops{Comm: c, Engine: (*engine)(c)}
	c.events, _ = r.Ctx.(cu.Events)
	loader, ok := r.Driver.(cu.NCCLLoader)
	if !ok {
		return nil, c.errorf("Open", "the driver %s has no NCCL", gpu.Driver())
	}
	lib, err := loader.NCCL(wire{host})
	if err != nil {
		return nil, c.errorf("Open", "%v", err)
	}
	c.lib = lib
	id, err := c.shareID(host)
	if err != nil {
		return nil, err
	}
	err = r.Ctx.Do(func() (err error) {
		c.c, err = lib.InitRank(c.size, c.rank, id)
		return err
	})
	if err != nil {
		return nil, c.errorf("Open", "joining %d ranks: %v", c.size, err)
	}
	return c, nil
}

// shareID makes NCCL's unique id on rank 0 and broadcasts it, with a
// first byte that tells the others whether rank 0 could make it.
func (c *Comm) shareID(host collective.Comm) (cu.UniqueID, error) {
	var id cu.UniqueID
	msg := make([]byte, 1+len(id))
	var idErr error
	if c.rank == 0 {
		if id, idErr = c.lib.UniqueID(); idErr == nil {
			msg[0] = 1
			copy(msg[1:], id[:])
		}
	}
	got, err := host.Broadcast(tensor.FromSliceOn(device.Host(), msg), 0)
	if err != nil {
		return id, c.errorf("Open", "broadcasting the unique id: %v", err)
	}
	msg = tensor.ToSlice[uint8](got)
	got.Release()
	switch {
	case idErr != nil:
		return id, c.errorf("Open", "making the unique id: %v", idErr)
	case msg[0] != 1:
		return id, c.errorf("Open", "rank 0 could not make the unique id (its error says why)")
	}
	copy(id[:], msg[1:])
	return id, nil
}

// Rank is this process's rank; Size the number of ranks.
func (c *Comm) Rank() int { return c.rank }
func (c *Comm) Size() int { return c.size }

// Library says which NCCL runs the collectives (the file and version, or
// the emulator).
func (c *Comm) Library() string { return c.lib.Name() }

// Device is the communicator's GPU, where its results are
// (collective.Placed: nn keeps its gradient buckets there).
func (c *Comm) Device() device.Device { return c.gpu }

// SetTimeout sets how long a queued collective may take, and Barrier
// wait, before the communicator is aborted (0: for ever).
func (c *Comm) SetTimeout(d time.Duration) {
	c.mu.Lock()
	c.timeout = d
	c.mu.Unlock()
}

func (c *Comm) errorf(call, format string, args ...any) error {
	return fmt.Errorf("%w: nccl: %s (rank %d of %d): %s", collective.ErrCollective, call, c.rank, c.size, fmt.Sprintf(format, args...))
}

// usable reports why no call may be made, or nil.
func (c *Comm) usable(call string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.broken != nil:
		return c.broken
	case c.closed:
		return c.errorf(call, "the communicator is closed")
	}
	return nil
}

// queue runs fn, which queues NCCL work, with the GPU's context current.
func (c *Comm) queue(call string, fn func(cu.NCCLComm, cu.Stream) error) error {
	if err := c.usable(call); err != nil {
		return err
	}
	err := c.raw.Ctx.Do(func() error {
		if err := fn(c.c, c.raw.Stream); err != nil {
			return err
		}
		return c.watch(call)
	})
	if err != nil {
		return c.errorf(call, "%v", err)
	}
	return nil
}

// Barrier returns once every rank has called it and the GPU has finished
// the work queued before it, or fails after the timeout.
func (c *Comm) Barrier() error {
	one := tensor.FromSlice([]int32{1})
	sum, err := c.AllReduce(one, collective.Sum)
	if err != nil {
		return err
	}
	defer sum.Release()
	c.mu.Lock()
	timeout := c.timeout
	c.mu.Unlock()
	done := make(chan error, 1)
	go func() { done <- c.raw.Sync() }()
	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	select {
	case err := <-done:
		if err != nil {
			return c.errorf("Barrier", "%v", err)
		}
	case <-timer:
		c.mu.Lock()
		c.broken = fmt.Errorf("%w: %w: nccl: Barrier (rank %d of %d): the GPU's work did not finish within %v (a rank died, hangs, or called another collective); the communicator was aborted",
			collective.ErrCollective, collective.ErrTimeout, c.rank, c.size, timeout)
		err := c.broken
		c.mu.Unlock()
		// Abort on its own goroutine: the stalled stream may hold the
		// context (the emulator's does).
		go func() { _ = c.raw.Ctx.Do(c.c.Abort) }()
		return err
	}
	var async error
	if err := c.raw.Ctx.Do(func() error { async = c.c.AsyncError(); return nil }); err != nil {
		return c.errorf("Barrier", "%v", err)
	}
	if async != nil {
		return c.errorf("Barrier", "%v", async)
	}
	return nil
}

// Close destroys the communicator once its queued work is done.
func (c *Comm) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	c.closed = true
	c.stopWatching()
	if c.broken != nil {
		return nil
	}
	if err := c.raw.Ctx.Do(c.c.Destroy); err != nil {
		return c.errorf("Close", "%v", err)
	}
	return nil
}

// wire is a host communicator as the emulated NCCL's transport. Its
// tensors are on the host whatever the default device: the emulator calls
// it while it runs the GPU's stream, holding the GPU.
type wire struct{ c collective.Comm }

// wireTag is the tag of the emulator's point-to-point bytes.
const wireTag = 0x4e43

func (w wire) Rank() int { return w.c.Rank() }
func (w wire) Size() int { return w.c.Size() }

func (w wire) AllGather(b []byte) ([]byte, error) {
	t := tensor.FromSliceOn(device.Host(), b)
	all, err := w.c.AllGather(t)
	t.Release()
	if err != nil {
		return nil, err
	}
	out := tensor.ToSlice[uint8](all)
	all.Release()
	return out, nil
}

func (w wire) Send(b []byte, to int) error {
	t := tensor.FromSliceOn(device.Host(), b)
	defer t.Release()
	return w.c.Send(t, to, wireTag)
}

func (w wire) Recv(b []byte, from int) error {
	got, err := w.c.Recv(tensor.FullOn(device.Host(), tensor.Uint8, 0, len(b)), from, wireTag)
	if err != nil {
		return err
	}
	copy(b, tensor.ToSlice[uint8](got))
	got.Release()
	return nil
}
