//go:build linux || darwin

package mpi

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/eagerflow/eagerflow/internal/dlcheck"
)

// lib is an MPI library opened at run time: its entry points and its
// predefined handles. Open MPI exports its handles as data symbols (a
// handle is the symbol's address: MPI_COMM_WORLD is &ompi_mpi_comm_world);
// MPICH and the libraries built on it (Intel MPI, MVAPICH) define them as
// integer constants of mpi.h, which are part of their ABI.
type lib struct {
	path, impl string // the file, and "Open MPI" or "MPICH"

	initialized, finalized, initThread, finalize     uintptr
	commRank, commSize, commSetErrhandler, errString uintptr
	allreduce, bcast, allgather, reduceScatterBlock  uintptr
	send, recv, barrier                              uintptr
	commDup, isend, irecv, test                      uintptr
	cancel, requestFree, commFree                    uintptr

	libraryVersion                           uintptr
	commWorld, errorsReturn                  uintptr
	float, double, int32, int64, uint8, byte uintptr
	opSum, opMax, opMin                      uintptr
	inPlace, statusIgnore                    uintptr // MPI_IN_PLACE, MPI_STATUS_IGNORE
}

// mpichHandles are MPICH's predefined handles (its mpi.h, the same in
// MPICH 3 and 4, Intel MPI and MVAPICH).
var mpichHandles = struct {
	commWorld, errorsReturn                  uintptr
	float, double, int32, int64, uint8, byte uintptr
	opSum, opMax, opMin                      uintptr
	inPlace, statusIgnore                    uintptr
}{
	commWorld: 0x44000000, errorsReturn: 0x54000001,
	float: 0x4c00040a, double: 0x4c00080b, int32: 0x4c000439, int64: 0x4c00083a, uint8: 0x4c00013b, byte: 0x4c00010d,
	opMax: 0x58000001, opMin: 0x58000002, opSum: 0x58000003,
	inPlace:      ^uintptr(0), // (void *) -1
	statusIgnore: 1,           // (MPI_Status *) 1
}

// openLib loads libmpi with RTLD_GLOBAL (Open MPI's plugins resolve its
// symbols from the global namespace, and fail to load otherwise) and
// looks up what eagerflow uses. The error names each file tried and why
// it failed, or the symbol missing.
func openLib() (*lib, error) {
	var tried []string
	for _, name := range detectLauncher(os.Getenv).libNames(os.Getenv) {
		if err := dlcheck.Check(name); err != nil {
			tried = append(tried, err.Error())
			continue
		}
		h, err := purego.Dlopen(name, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		l := &lib{path: name}
		if err := l.resolve(h); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return l, nil
	}
	return nil, fmt.Errorf("no MPI library (install Open MPI: apt-get install openmpi-bin; or set EAGERFLOW_MPI_LIB): %s", strings.Join(tried, "; "))
}

func (l *lib) resolve(h uintptr) error {
	for name, p := range map[string]*uintptr{
		"MPI_Initialized": &l.initialized, "MPI_Finalized": &l.finalized, "MPI_Init_thread": &l.initThread,
		"MPI_Finalize": &l.finalize, "MPI_Comm_rank": &l.commRank, "MPI_Comm_size": &l.commSize,
		"MPI_Comm_set_errhandler": &l.commSetErrhandler, "MPI_Error_string": &l.errString,
		"MPI_Allreduce": &l.allreduce, "MPI_Bcast": &l.bcast, "MPI_Allgather": &l.allgather,
		"MPI_Reduce_scatter_block": &l.reduceScatterBlock, "MPI_Send": &l.send, "MPI_Recv": &l.recv,
		"MPI_Barrier": &l.barrier, "MPI_Comm_dup": &l.commDup, "MPI_Isend": &l.isend, "MPI_Irecv": &l.irecv,
		"MPI_Test": &l.test, "MPI_Get_library_version": &l.libraryVersion,
		"MPI_Cancel": &l.cancel, "MPI_Request_free": &l.requestFree, "MPI_Comm_free": &l.commFree,
	} {
		sym, err := purego.Dlsym(h, name)
		if err != nil || sym == 0 {
			return fmt.Errorf("no symbol %s: %v", name, err)
		}
		*p = sym
	}
	if _, err := purego.Dlsym(h, "ompi_mpi_comm_world"); err == nil {
		l.impl, l.inPlace, l.statusIgnore = "Open MPI", 1, 0
		return l.resolveOpenMPIHandles(h)
	}
	// Not Open MPI: MPICH's ABI, which the library must say it has.
	if v := l.version(); !strings.Contains(v, "MPICH") && !strings.Contains(v, "Intel(R) MPI") && !strings.Contains(v, "MVAPICH") {
		return fmt.Errorf("neither Open MPI (no ompi_mpi_comm_world) nor of MPICH's ABI (MPI_Get_library_version says %q)", v)
	}
	m := mpichHandles
	l.impl = "MPICH"
	l.commWorld, l.errorsReturn = m.commWorld, m.errorsReturn
	l.float, l.double, l.int32, l.int64, l.uint8, l.byte = m.float, m.double, m.int32, m.int64, m.uint8, m.byte
	l.opSum, l.opMax, l.opMin = m.opSum, m.opMax, m.opMin
	l.inPlace, l.statusIgnore = m.inPlace, m.statusIgnore
	return nil
}

// resolveOpenMPIHandles looks up Open MPI's predefined handles.
func (l *lib) resolveOpenMPIHandles(h uintptr) error {
	for name, p := range map[string]*uintptr{
		"ompi_mpi_comm_world": &l.commWorld, "ompi_mpi_errors_return": &l.errorsReturn,
		"ompi_mpi_float": &l.float, "ompi_mpi_double": &l.double, "ompi_mpi_int32_t": &l.int32,
		"ompi_mpi_int64_t": &l.int64, "ompi_mpi_uint8_t": &l.uint8, "ompi_mpi_byte": &l.byte,
		"ompi_mpi_op_sum": &l.opSum, "ompi_mpi_op_max": &l.opMax, "ompi_mpi_op_min": &l.opMin,
	} {
		sym, err := purego.Dlsym(h, name)
		if err != nil || sym == 0 {
			return fmt.Errorf("no symbol %s (an Open MPI without its usual handles): %v", name, err)
		}
		*p = sym
	}
	return nil
}

// version is MPI_Get_library_version's text (callable before MPI_Init).
func (l *lib) version() string {
	var pin runtime.Pinner
	defer pin.Unpin()
	buf := make([]byte, 8192) // MPI_MAX_LIBRARY_VERSION_STRING: 256 in Open MPI, 8192 in MPICH
	n := new(int32)
	if call(l.libraryVersion, ptr(&pin, &buf[0]), ptr(&pin, n)) != 0 || *n <= 0 {
		return ""
	}
	return strings.TrimRight(string(buf[:min(int(*n), len(buf))]), "\x00\n ")
}

// call runs an MPI function and returns its error code (MPI_SUCCESS is
// 0). Go memory passed by address must be pinned by the caller (ptr).
func call(fn uintptr, args ...uintptr) int {
	r, _, _ := purego.SyscallN(fn, args...)
	return int(int32(r))
}

// ptr pins p (a pointer to Go memory the call reads or writes) for the
// pinner's life and returns its address.
func ptr[T any](pin *runtime.Pinner, p *T) uintptr {
	pin.Pin(p)
	return uintptr(unsafe.Pointer(p))
}

// errorString is MPI's text for code.
func (l *lib) errorString(code int) string {
	var pin runtime.Pinner
	defer pin.Unpin()
	buf := make([]byte, 512) // MPI_MAX_ERROR_STRING is 256 in Open MPI
	n := new(int32)
	if call(l.errString, uintptr(code), ptr(&pin, &buf[0]), ptr(&pin, n)) != 0 || *n <= 0 {
		return fmt.Sprintf("MPI error %d", code)
	}
	return string(buf[:min(int(*n), len(buf))])
}
