package cu

import "fmt"

// NCCL is the NVIDIA Collective Communications Library as the backend
// uses it: collectives between the GPUs of several processes, queued on a
// stream like kernels. Two implementations, as for the driver: the
// library loaded at run time (libnccl.so.2) and the emulator's, which
// moves the bytes over a Wire between the processes' host memory.
type NCCL interface {
	// Name says what was loaded: the file and version, or "emulator".
	Name() string
	// UniqueID makes the id that names a new communicator (on one rank,
	// which hands it to the others by some other means: MPI).
	UniqueID() (UniqueID, error)
	// InitRank joins this process to communicator id as rank of nranks,
	// on the device whose context is current (call it inside Context.Do).
	// It returns once every rank has joined.
	InitRank(nranks, rank int, id UniqueID) (NCCLComm, error)
}

// NCCLLoader is a Driver that has an NCCL: the loaded driver loads
// libnccl.so.2 (and ignores wire: NCCL has its own transports), the
// emulator returns its NCCL, whose traffic goes over wire.
type NCCLLoader interface {
	NCCL(wire Wire) (NCCL, error)
}

// UniqueID is ncclUniqueId: NCCL_UNIQUE_ID_BYTES (128) opaque bytes.
type UniqueID [128]byte

// NCCLType is ncclDataType_t.
type NCCLType int32

// The NCCL element types the backend uses.
const (
	NCCLInt8     NCCLType = 0
	NCCLUint8    NCCLType = 1
	NCCLInt32    NCCLType = 2
	NCCLInt64    NCCLType = 4
	NCCLFloat16  NCCLType = 6
	NCCLFloat32  NCCLType = 7
	NCCLFloat64  NCCLType = 8
	NCCLBFloat16 NCCLType = 9
)

// Size is the bytes of one element (0 for a type the backend does not use).
func (t NCCLType) Size() int {
	switch t {
	case NCCLInt8, NCCLUint8:
		return 1
	case NCCLFloat16, NCCLBFloat16:
		return 2
	case NCCLInt32, NCCLFloat32:
		return 4
	case NCCLInt64, NCCLFloat64:
		return 8
	}
	return 0
}

// NCCLOp is ncclRedOp_t.
type NCCLOp int32

// The reductions (ncclAvg needs NCCL 2.10).
const (
	NCCLSum  NCCLOp = 0
	NCCLProd NCCLOp = 1
	NCCLMax  NCCLOp = 2
	NCCLMin  NCCLOp = 3
	NCCLAvg  NCCLOp = 4
)

// NCCLComm is an NCCL communicator (ncclComm_t). Each call queues its
// collective on stream s, as a kernel launch does, and returns; the
// result is in recv once s reaches it. Counts are elements. Every rank
// must make the same calls in the same order. Send and Recv match in call
// order between a pair of ranks (NCCL has no tags).
type NCCLComm interface {
	AllReduce(send, recv Ptr, count int, t NCCLType, op NCCLOp, s Stream) error
	Broadcast(send, recv Ptr, count int, t NCCLType, root int, s Stream) error
	// AllGather writes every rank's count elements into recv, in rank order.
	AllGather(send, recv Ptr, count int, t NCCLType, s Stream) error
	// ReduceScatter reduces Size*count elements and writes this rank's
	// block of count into recv.
	ReduceScatter(send, recv Ptr, count int, t NCCLType, op NCCLOp, s Stream) error
	Send(send Ptr, count int, t NCCLType, peer int, s Stream) error
	Recv(recv Ptr, count int, t NCCLType, peer int, s Stream) error
	// AsyncError is a failure that happened while the collectives ran
	// (ncclCommGetAsyncError), or nil.
	AsyncError() error
	// Destroy frees the communicator once its queued work is done; Abort
	// frees it at once, cancelling what is queued.
	Destroy() error
	Abort() error
}

// Wire is the host transport of an emulated NCCL: the processes of one
// communicator, each with its rank, exchanging bytes.
type Wire interface {
	Rank() int
	Size() int
	// AllGather returns every rank's b (all of one length) concatenated
	// in rank order.
	AllGather(b []byte) ([]byte, error)
	// Send and Recv move b to and from one rank, matched in call order.
	Send(b []byte, to int) error
	Recv(b []byte, from int) error
}

// NCCL result codes (ncclResult_t).
const (
	NCCLSuccess            = 0
	NCCLUnhandledCudaError = 1
	NCCLSystemError        = 2
	NCCLInternalError      = 3
	NCCLInvalidArgument    = 4
	NCCLInvalidUsage       = 5
	NCCLRemoteError        = 6
	NCCLInProgress         = 7
)

var ncclNames = [...]string{"ncclSuccess", "ncclUnhandledCudaError", "ncclSystemError", "ncclInternalError",
	"ncclInvalidArgument", "ncclInvalidUsage", "ncclRemoteError", "ncclInProgress"}

// NCCLErrorName is the name of result code r.
func NCCLErrorName(r int) string {
	if r >= 0 && r < len(ncclNames) {
		return ncclNames[r]
	}
	return fmt.Sprintf("ncclResult %d", r)
}

// NCCLErrorf is the error of NCCL call call with result code r.
func NCCLErrorf(call string, r int, format string, args ...any) *Error {
	return &Error{Call: call, Code: r, Name: NCCLErrorName(r), Detail: fmt.Sprintf(format, args...)}
}
