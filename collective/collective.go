// Package collective is communication between the processes of a
// data-parallel job: a communicator (Comm) with a rank and a size, and the
// collectives training needs on tensors: AllReduce (sum, mean, max, min),
// Broadcast, AllGather, ReduceScatter, point-to-point Send and Recv, and
// Barrier. Implementations run on the engines clusters already have:
// collective/mpi over MPI (Open MPI or MPICH, loaded at run time, started
// by mpirun, mpiexec, srun or an MPI operator), backend/cuda/nccl over
// NCCL for tensors on NVIDIA GPUs (MPI, or any Comm, carrying its set-up),
// and Single, one process with no engine.
//
//	comm, err := mpi.Open()                      // MPI_COMM_WORLD
//	sum, err := comm.AllReduce(grad, collective.Mean)
//
// Every rank must call the collectives in the same order with tensors of
// the same dtype and shape; what the tensors hold is then combined
// element by element (bfloat16 and float16 as float32, rounded once at
// the end). Results are new tensors on the host (on the
// communicator's device where it is Placed); the inputs are left as they
// were. Errors name the collective, the rank and what MPI
// said.
//
// AllReduce, Broadcast, AllGather and ReduceScatter are ops (Ops): a tape
// differentiates through them (the gradient of an all-reduce is the
// all-reduce of the gradients, as Horovod's is), and inside a traced
// function (control/trace) they are graph nodes that communicate on every
// call, in the same order on every rank. Comm's Send, Recv and
// AllReduceInPlace run eagerly only.
//
// Values a graph moves between processes meet in a Rendezvous (on a
// Transport: mpi.Comm.Transport, or Loopback within one process), as in
// TensorFlow: posted under a key with a dead flag, taken whenever they
// arrive. Its Send and Recv are ops, so a function whose ranks exchange
// values (each rank tracing its own part: a pipeline, a model split
// across processes) is traced once per rank, and its graphs post and
// receive on every call, keyed by name and loop iteration, with the dead
// flags of branches not taken.
package collective

import (
	"errors"
	"fmt"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/tensor"
)

// Op is the reduction of AllReduce and ReduceScatter.
//
// Values: Sum (the zero value), Mean (the sum divided by the size, on
// floats), Max, Min.
type Op uint8

const (
	Sum Op = iota
	Mean
	Max
	Min
)

func (o Op) String() string {
	switch o {
	case Sum:
		return "sum"
	case Mean:
		return "mean"
	case Max:
		return "max"
	case Min:
		return "min"
	}
	return fmt.Sprintf("Op(%d)", uint8(o))
}

// Comm is a communicator: a fixed group of processes, each with a rank in
// [0, Size).
type Comm interface {
	Rank() int
	Size() int
	// AllReduce combines t across every rank with op; every rank gets the
	// result.
	AllReduce(t *tensor.Tensor, op Op) (*tensor.Tensor, error)
	// Broadcast returns root's t on every rank (t gives the dtype and
	// shape on the others).
	Broadcast(t *tensor.Tensor, root int) (*tensor.Tensor, error)
	// AllGather stacks every rank's t along a new leading dimension, in
	// rank order: [Size, t's shape...].
	AllGather(t *tensor.Tensor) (*tensor.Tensor, error)
	// ReduceScatter combines t across ranks with op and returns this
	// rank's block of the result along the first dimension, whose size
	// must be a multiple of Size: [t.Dim(0)/Size, ...].
	ReduceScatter(t *tensor.Tensor, op Op) (*tensor.Tensor, error)
	// Send sends t to rank to; the receiver calls Recv with a tensor of
	// the same dtype and shape and the same tag.
	Send(t *tensor.Tensor, to, tag int) error
	// Recv receives from rank from a tensor shaped like like.
	Recv(like *tensor.Tensor, from, tag int) (*tensor.Tensor, error)
	// Barrier returns once every rank has called it.
	Barrier() error
	// Close ends this process's part in the communicator.
	Close() error
}

// InPlace is a Comm that can reduce into the tensor it is given, as
// MPI_IN_PLACE does: no result is allocated and nothing is copied on the
// way. t must be a row-major host tensor whose buffer nothing else reads
// or writes during the call, and it is overwritten with the result:
// tensors are otherwise immutable, so use it on buffers you own only (as
// nn.DistributedTrainStep does with its gradient buckets).
type InPlace interface {
	AllReduceInPlace(t *tensor.Tensor, op Op) error
}

// Placed is a Comm whose collectives work on the tensors of one device
// and return their results there (an NCCL communicator: its GPU); a Comm
// that is not Placed works on the host.
type Placed interface {
	Device() device.Device
}

// DeviceOf is where c's collectives work best: its device when it is
// Placed, else the host. Callers keep their buffers there, so that no
// tensor has to move before the collective.
func DeviceOf(c Comm) device.Device {
	if p, ok := c.(Placed); ok {
		return p.Device()
	}
	return device.Host()
}

// ErrCollective is wrapped by every error of a collective: a bad argument
// or a failure the engine reported.
var ErrCollective = errors.New("collective")

// ErrTraced is wrapped (with ErrCollective) by the error of Send, Recv or
// AllReduceInPlace given a value of a function being traced
// (control/trace): they are not ops, so they would run once, while
// tracing, and every later call of the traced function would return that
// first call's result. Call them outside traced functions; the other
// collectives are ops, which traces record.
var ErrTraced = errors.New("a value of a function being traced")

// CheckUntraced returns an error wrapping ErrTraced, naming call, if one
// of ts is a value of a live trace; implementations of Comm call it on
// the tensors their Send, Recv and AllReduceInPlace are given.
func CheckUntraced(call string, ts ...*tensor.Tensor) error {
	for i, t := range ts {
		if t == nil {
			continue
		}
		if m := t.Traced(); m != nil {
			if r, ok := m.Trace.(interface{ Live() bool }); ok && r.Live() {
				return fmt.Errorf("%w: %s: input %d is %w: collectives run eagerly, once; call them outside the traced function",
					ErrCollective, call, i, ErrTraced)
			}
		}
	}
	return nil
}

// ErrTimeout is wrapped (with ErrCollective) by the error of a collective
// that did not complete within the communicator's timeout: a rank hangs,
// died unnoticed, or called another collective. The engine cannot take
// back a call in flight, so the communicator is unusable afterwards:
// every later call returns the same error, and the process should end
// (under mpirun, the others are then stopped).
var ErrTimeout = errors.New("timed out")
