//go:build linux && (amd64 || arm64)

package libcuda

import (
	"fmt"
	"os"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
)

// EnvLibnccl names the NCCL library to load instead of searching.
const EnvLibnccl = "EAGERFLOW_LIBNCCL"

// ncclFuncs is NCCL's entry points.
type ncclFuncs struct {
	getVersion, getUniqueID, initRankScalable, allReduce, broadcast uintptr
	allGather, reduceScatter, send, recv, destroy, abort            uintptr
	asyncError, errorStringSym, lastErrorSym                        uintptr
}

func (f *ncclFuncs) symbols() map[string]*uintptr {
	return map[string]*uintptr{
		"ncclGetVersion": &f.getVersion, "ncclGetUniqueId": &f.getUniqueID, "ncclAllReduce": &f.allReduce,
		"ncclBroadcast": &f.broadcast, "ncclAllGather": &f.allGather, "ncclReduceScatter": &f.reduceScatter,
		"ncclSend": &f.send, "ncclRecv": &f.recv, "ncclCommDestroy": &f.destroy, "ncclCommAbort": &f.abort, "ncclCommGetAsyncError": &f.asyncError,
		"ncclGetErrorString": &f.errorStringSym, "ncclGetLastError": &f.lastErrorSym,
		// ncclCommInitRank takes the 128-byte id by value, which purego
		// cannot pass; the scalable form (NCCL 2.23) takes ids by pointer.
		"ncclCommInitRankScalable": &f.initRankScalable,
	}
}

// ncclLib is the loaded libnccl.
type ncclLib struct {
	file        string
	version     int // ncclGetVersion's code: 10000*major + 100*minor + patch
	f           ncclFuncs
	errorString func(r int32) string
	lastError   func(comm uintptr) string
}

var (
	ncclOnce   sync.Once
	ncclLoaded *ncclLib
	ncclErr    error
)

// NCCL loads libnccl.so.2 once per process (searched as cuBLAS is, in
// pip's nvidia-nccl wheels among others; EAGERFLOW_LIBNCCL names a file).
// NCCL has its own transports, so wire is not used.
func (d *Driver) NCCL(cu.Wire) (cu.NCCL, error) {
	ncclOnce.Do(func() { ncclLoaded, ncclErr = loadNCCL() })
	if ncclErr != nil {
		return nil, ncclErr
	}
	return ncclLoaded, nil
}

func loadNCCL() (*ncclLib, error) {
	h, file, err := open("NCCL (libnccl.so.2)", candidates(os.Getenv(EnvLibnccl), []string{"libnccl.so.2"}, searchDirs()))
	if err != nil {
		return nil, err
	}
	l := &ncclLib{file: file}
	if err := resolve(h, file, l.f.symbols(), true); err != nil {
		return nil, fmt.Errorf("%w (eagerflow needs NCCL 2.23 or newer)", err)
	}
	purego.RegisterFunc(&l.errorString, l.f.errorStringSym)
	purego.RegisterFunc(&l.lastError, l.f.lastErrorSym)
	var v int32
	if err := l.call("ncclGetVersion", 0, l.f.getVersion, uintptr(unsafe.Pointer(&v))); err != nil {
		return nil, err
	}
	l.version = int(v)
	return l, nil
}

// call calls an NCCL function and turns its result into an error with
// NCCL's words for it (and the communicator's last error where there is
// one).
//
//go:uintptrescapes
func (l *ncclLib) call(name string, comm uintptr, fn uintptr, args ...uintptr) error {
	r, _, _ := purego.SyscallN(fn, args...)
	if r == 0 {
		return nil
	}
	return l.errorOf(name, comm, int(r))
}

func (l *ncclLib) errorOf(name string, comm uintptr, r int) error {
	detail := l.errorString(int32(r))
	if m := l.lastError(comm); m != "" {
		detail += ": " + m
	}
	return cu.NCCLErrorf(name, r, "%s", detail)
}

// Name is the file and NCCL's version.
func (l *ncclLib) Name() string {
	return fmt.Sprintf("%s (NCCL %d.%d.%d)", l.file, l.version/10000, l.version/100%100, l.version%100)
}

// UniqueID is ncclGetUniqueId's.
func (l *ncclLib) UniqueID() (cu.UniqueID, error) {
	var id cu.UniqueID
	err := l.call("ncclGetUniqueId", 0, l.f.getUniqueID, uintptr(unsafe.Pointer(&id[0])))
	return id, err
}

// InitRank is ncclCommInitRankScalable with one id and the default
// configuration, on the device of the current context.
func (l *ncclLib) InitRank(nranks, rank int, id cu.UniqueID) (cu.NCCLComm, error) {
	c := &ncclComm{l: l}
	err := l.call("ncclCommInitRankScalable", 0, l.f.initRankScalable, uintptr(unsafe.Pointer(&c.h)),
		uintptr(nranks), uintptr(rank), 1, uintptr(unsafe.Pointer(&id[0])), 0)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// ncclComm is an ncclComm_t.
type ncclComm struct {
	l *ncclLib
	h uintptr
}

// call is ncclLib.call on c.
//
//go:uintptrescapes
func (c *ncclComm) call(name string, fn uintptr, args ...uintptr) error {
	return c.l.call(name, c.h, fn, args...)
}

func (c *ncclComm) AllReduce(send, recv cu.Ptr, count int, t cu.NCCLType, op cu.NCCLOp, s cu.Stream) error {
	return c.call("ncclAllReduce", c.l.f.allReduce, uintptr(send), uintptr(recv), uintptr(count), uintptr(t), uintptr(op), c.h, uintptr(s))
}

func (c *ncclComm) Broadcast(send, recv cu.Ptr, count int, t cu.NCCLType, root int, s cu.Stream) error {
	return c.call("ncclBroadcast", c.l.f.broadcast, uintptr(send), uintptr(recv), uintptr(count), uintptr(t), uintptr(root), c.h, uintptr(s))
}

func (c *ncclComm) AllGather(send, recv cu.Ptr, count int, t cu.NCCLType, s cu.Stream) error {
	return c.call("ncclAllGather", c.l.f.allGather, uintptr(send), uintptr(recv), uintptr(count), uintptr(t), c.h, uintptr(s))
}

func (c *ncclComm) ReduceScatter(send, recv cu.Ptr, count int, t cu.NCCLType, op cu.NCCLOp, s cu.Stream) error {
	return c.call("ncclReduceScatter", c.l.f.reduceScatter, uintptr(send), uintptr(recv), uintptr(count), uintptr(t), uintptr(op), c.h, uintptr(s))
}

func (c *ncclComm) Send(send cu.Ptr, count int, t cu.NCCLType, peer int, s cu.Stream) error {
	return c.call("ncclSend", c.l.f.send, uintptr(send), uintptr(count), uintptr(t), uintptr(peer), c.h, uintptr(s))
}

func (c *ncclComm) Recv(recv cu.Ptr, count int, t cu.NCCLType, peer int, s cu.Stream) error {
	return c.call("ncclRecv", c.l.f.recv, uintptr(recv), uintptr(count), uintptr(t), uintptr(peer), c.h, uintptr(s))
}

// AsyncError is ncclCommGetAsyncError's result as an error.
func (c *ncclComm) AsyncError() error {
	var r int32
	if err := c.call("ncclCommGetAsyncError", c.l.f.asyncError, c.h, uintptr(unsafe.Pointer(&r))); err != nil {
		return err
	}
	if r == cu.NCCLSuccess || r == cu.NCCLInProgress {
		return nil
	}
	return c.l.errorOf("ncclCommGetAsyncError", c.h, int(r))
}

func (c *ncclComm) Destroy() error { return c.call("ncclCommDestroy", c.l.f.destroy, c.h) }
func (c *ncclComm) Abort() error   { return c.call("ncclCommAbort", c.l.f.abort, c.h) }
