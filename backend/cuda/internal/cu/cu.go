// Package cu is the CUDA driver API and cuBLAS as the CUDA backend uses
// them: an interface with two implementations, the NVIDIA libraries loaded
// at run time (package libcuda) and an emulator that keeps device memory in
// host RAM and interprets the very PTX the backend loads (package emu).
// The interface follows the driver API's contracts closely (a context
// current on the calling OS thread, stream order, pointer ranges, argument
// packing), so that the emulator can hold the backend to them.
package cu

import (
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// Ptr is a device address (CUdeviceptr).
type Ptr uint64

// Stream, Module and Function are driver handles (CUstream, CUmodule,
// CUfunction). The backend never uses the legacy default stream (0).
type (
	Stream   uintptr
	Module   uintptr
	Function uintptr
)

// Dim3 is a grid or block size.
type Dim3 struct{ X, Y, Z int }

// Info describes a device.
type Info struct {
	Name         string
	Memory       int // bytes
	Major, Minor int // compute capability
	SMs          int // multiprocessors
}

// Driver is a loaded CUDA driver (with cuBLAS when present).
type Driver interface {
	// Name says what was loaded: the files, or "emulator".
	Name() string
	// Version is cuDriverGetVersion's: 1000*major + 10*minor.
	Version() (int, error)
	DeviceCount() (int, error)
	Device(ordinal int) (Info, error)
	// Retain returns the primary context of the device.
	Retain(ordinal int) (Context, error)
}

// ErrNoBLAS is the error of a GEMM where cuBLAS was not loaded.
var ErrNoBLAS = errors.New("cuda: cuBLAS is not loaded")

// GemmType is the element type of a GEMM.
type GemmType uint8

// The GEMM element types. The half types multiply on tensor cores,
// summing in float32 (alpha, beta and the epilogue in float32 too), the
// result rounded once to the type.
const (
	Float32 GemmType = iota
	Float64
	BFloat16
	Float16
	// The 8-bit floats (OCP FP8), for the operands of FP8 GEMMs
	// (Gemm.FP8A, FP8B) only.
	Float8E4M3
	Float8E5M2
)

// Size is the bytes of an element of t.
func (t GemmType) Size() int { return [...]int{4, 8, 2, 2, 1, 1}[t] }

// ErrGemmType is the error of a GEMM of an element type the context
// cannot multiply (the half types without cuBLASLt, or in a batch that
// shares an operand), having queued nothing: the caller computes it
// another way.
var ErrGemmType = errors.New("cuda: no GEMM of this element type")

// ErrNoEpilogue is the error of a GEMM with an epilogue (Gemm.Bias or
// Relu) that the context cannot run in the GEMM: cuBLASLt is not loaded,
// or its heuristics found no algorithm for the epilogue. The caller
// applies it with kernels of its own instead.
var ErrNoEpilogue = errors.New("cuda: no GEMM epilogue")

// Gemm is one cublas<t>gemmStridedBatched call: column-major C = alpha
// op(A) op(B) + beta C for each of Batch matrices, op(X) = Xᵀ where
// Trans is set. Strides are in elements. With an epilogue (Bias, Relu),
// C = act(alpha op(A) op(B) + beta C + bias), bias added to each column,
// as cuBLASLt's BIAS and RELU_BIAS epilogues compute it.
type Gemm struct {
	Type           GemmType
	TransA, TransB bool
	M, N, K        int
	Alpha, Beta    float64
	A              Ptr
	LDA            int
	StrideA        int64
	B              Ptr
	LDB            int
	StrideB        int64
	C              Ptr
	LDC            int
	StrideC        int64
	Batch          int
	// TF32 lets float32 products run on TF32 tensor cores.
	TF32 bool
	// Bias, where not 0, is a vector of M elements of Type added to
	// each column of C; Relu clamps C's elements at 0 after it.
	Bias Ptr
	Relu bool
	// BiasGradA, where not 0, receives op(A)'s sums over K, M elements of
	// Type (cuBLASLt's BGRADA epilogue: a bias's gradient beside the
	// weights' in one GEMM); a single matrix, without Bias or Relu.
	BiasGradA Ptr
	// FP8A and FP8B, where set (both; 0 is unset), make A and B 8-bit
	// floats of those types (Float8E4M3, Float8E5M2), multiplied on the
	// FP8 tensor cores, summing in float32: C = alpha·sa·sb·op(A)·op(B)
	// + beta·C, sa and sb the float32 values at ScaleA and ScaleB (device
	// pointers), rounded once to Type (Float32, BFloat16 or Float16).
	// cuBLASLt's FP8 GEMMs take one matrix (Batch 1), no epilogue, A
	// transposed and B not (its "TN" layout), leading dimensions and K
	// multiples of 16, and not two Float8E5M2 operands; a context without
	// them returns ErrGemmType, having queued nothing.
	FP8A, FP8B     GemmType
	ScaleA, ScaleB Ptr
	// In, where set (0, Float32, is unset), is the element type of A and
	// B where it is not Type's: BFloat16 or Float16 operands multiplied on
	// the tensor cores into a Float32 C, summing in float32 (attention's
	// scores, which its softmax reads in float32). cuBLASLt takes it, no
	// epilogue; a context without it returns ErrGemmType, having queued
	// nothing.
	In GemmType
}

// Epilogue reports whether g has an epilogue.
func (g Gemm) Epilogue() bool { return g.Bias != 0 || g.Relu || g.BiasGradA != 0 }

// FP8 reports whether g multiplies 8-bit floats.
func (g Gemm) FP8() bool { return g.FP8A != 0 }

// TypeA and TypeB are the element types of A and B: FP8A and FP8B for
// an FP8 GEMM, In where set, Type otherwise.
func (g Gemm) TypeA() GemmType {
	switch {
	case g.FP8():
		return g.FP8A
	case g.In != 0:
		return g.In
	}
	return g.Type
}

func (g Gemm) TypeB() GemmType {
	switch {
	case g.FP8():
		return g.FP8B
	case g.In != 0:
		return g.In
	}
	return g.Type
}

// CheckFP8 returns an error wrapping ErrGemmType where g, an FP8 GEMM
// or one of mixed types (In), breaks the rules cuBLASLt's have for them
// (see Gemm.FP8A and Gemm.In), nil otherwise.
func (g Gemm) CheckFP8() error {
	if g.In != 0 {
		switch {
		case g.FP8():
			return fmt.Errorf("%w: an FP8 GEMM with In set", ErrGemmType)
		case g.In != BFloat16 && g.In != Float16:
			return fmt.Errorf("%w: operands of type %d into float32 (In takes the 16-bit floats)", ErrGemmType, g.In)
		case g.Type != Float32:
			return fmt.Errorf("%w: 16-bit operands into type %d (In sums into float32)", ErrGemmType, g.Type)
		case g.Epilogue() || g.TF32:
			return fmt.Errorf("%w: a GEMM of mixed types with an epilogue or TF32", ErrGemmType)
		}
		return nil
	}
	if !g.FP8() {
		return nil
	}
	fp8 := func(t GemmType) bool { return t == Float8E4M3 || t == Float8E5M2 }
	switch {
	case !fp8(g.FP8A) || !fp8(g.FP8B):
		return fmt.Errorf("%w: FP8 operand types %d and %d", ErrGemmType, g.FP8A, g.FP8B)
	case g.FP8A == Float8E5M2 && g.FP8B == Float8E5M2:
		return fmt.Errorf("%w: two E5M2 operands", ErrGemmType)
	case g.Type != Float32 && g.Type != BFloat16 && g.Type != Float16:
		return fmt.Errorf("%w: an FP8 product into type %d", ErrGemmType, g.Type)
	case g.Batch != 1 || g.Epilogue():
		return fmt.Errorf("%w: an FP8 GEMM of a batch or with an epilogue", ErrGemmType)
	case !g.TransA || g.TransB:
		return fmt.Errorf("%w: an FP8 GEMM needs A transposed and B not", ErrGemmType)
	case g.K%16 != 0 || g.LDA%16 != 0 || g.LDB%16 != 0 || g.LDC*g.Type.Size()%16 != 0:
		return fmt.Errorf("%w: an FP8 GEMM with k=%d, lda=%d, ldb=%d, ldc=%d (multiples of 16 bytes needed)", ErrGemmType, g.K, g.LDA, g.LDB, g.LDC)
	case g.ScaleA == 0 || g.ScaleB == 0:
		return fmt.Errorf("%w: an FP8 GEMM without its scales", ErrGemmType)
	}
	return nil
}

// Context is a device's primary context. Every call must be made inside
// Do, which runs fn on a locked OS thread with the context current there,
// as the driver requires; calls on a stream are asynchronous: they queue
// and return, and the stream runs them in order.
type Context interface {
	// Do runs fn with the context current on the calling goroutine's
	// thread, locked to it for the duration.
	Do(fn func() error) error
	// MemInfo returns the free and total device memory in bytes.
	MemInfo() (free, total int, err error)
	// MemAlloc allocates n bytes on stream s (stream-ordered where the
	// driver has it). MemFree frees them once s reaches the call. With s
	// zero, neither is stream-ordered (cuMemAlloc, cuMemFree): memory a
	// captured graph keeps, which a capture must not record.
	MemAlloc(n int, s Stream) (Ptr, error)
	MemFree(p Ptr, s Stream) error
	// MemAllocHost allocates n bytes of page-locked host memory, which
	// asynchronous copies need; MemFreeHost frees them.
	MemAllocHost(n int) ([]byte, error)
	MemFreeHost(b []byte) error
	// MemcpyHtoD copies src to dst when s reaches the call: src must
	// stay unchanged until then. MemcpyDtoH writes dst when s reaches the
	// call: read it after StreamSynchronize.
	MemcpyHtoD(dst Ptr, src []byte, s Stream) error
	MemcpyDtoH(dst []byte, src Ptr, s Stream) error
	MemcpyDtoD(dst, src Ptr, n int, s Stream) error
	// MemsetD8 and MemsetD32 set n elements of 1 or 4 bytes.
	MemsetD8(dst Ptr, v byte, n int, s Stream) error
	MemsetD32(dst Ptr, v uint32, n int, s Stream) error
	// ModuleLoad loads PTX text; its error carries the JIT log.
	ModuleLoad(ptx string) (Module, error)
	Function(m Module, name string) (Function, error)
	// Launch queues f on s over grid x block threads with shared bytes of
	// dynamic shared memory and the packed arguments.
	Launch(f Function, grid, block Dim3, shared int, s Stream, args *Args) error
	// DoLaunch is Launch inside Do, without the closure a call of Do
	// would allocate: every eager op launches.
	DoLaunch(f Function, grid, block Dim3, shared int, s Stream, args *Args) error
	StreamCreate() (Stream, error)
	StreamSynchronize(s Stream) error
	// Gemm queues a cuBLAS GEMM on s. It returns an error wrapping
	// ErrNoBLAS where cuBLAS is not loaded, and one wrapping
	// ErrNoEpilogue, having queued nothing, where g's epilogue cannot
	// run in the GEMM.
	Gemm(s Stream, g Gemm) error
}

// SharedSizer is a Context that lets a kernel take more dynamic shared
// memory than the default 48 KB (cuFuncSetAttribute's
// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES): SetMaxDynamicShared
// sets the most that f's launches may ask for (Launch's shared bytes),
// failing beyond the device's opt-in limit. Call it inside Do.
type SharedSizer interface {
	SetMaxDynamicShared(f Function, bytes int) error
}

// Event is a driver event (CUevent).
type Event uintptr

// Timing is a Context whose streams can be timed (package profile's
// device times): TimedEventRecord makes an event that takes a timestamp
// and records it on s; EventElapsed waits until the stream has passed end
// and returns the milliseconds between the two (cuEventElapsedTime).
// Calls are made inside Do, like the Context's; EventDestroy is Events'.
type Timing interface {
	TimedEventRecord(s Stream) (Event, error)
	EventElapsed(start, end Event) (ms float32, err error)
	EventDestroy(e Event) error
}

// Events is a Context whose streams run on their own, so that a watchdog
// can mark a point of a stream and ask later, without waiting, whether
// the stream has passed it: the driver's (libcuda). The emulator's
// streams run when they are synchronized, so it has none (its NCCL's
// waits are bounded by its host communicator's timeout instead). Calls
// are made inside Do, like the Context's.
type Events interface {
	// EventRecord makes an event (without timing) and records it on s.
	EventRecord(s Stream) (Event, error)
	// EventQuery reports whether the stream has passed e.
	EventQuery(e Event) (bool, error)
	EventDestroy(e Event) error
}

// Args packs a kernel's arguments in order, each at its natural
// alignment, as the kernel's .param list declares them. Small argument
// lists live in the Args itself, so packing one allocates nothing beyond
// the Args.
type Args struct {
	buf     []byte
	offsets []int32
	sizes   []int32
	inline  [256]byte
	offs    [16]int32
	szs     [16]int32
}

// Reset empties a for another launch's arguments.
func (a *Args) Reset() { a.buf, a.offsets, a.sizes = nil, nil, nil }

// add appends the argument v of size bytes (little-endian; the bytes of
// b instead where b is not nil) at align.
func (a *Args) add(v uint64, size int, b []byte, align int) {
	if a.buf == nil {
		a.buf, a.offsets, a.sizes = a.inline[:0], a.offs[:0], a.szs[:0]
	}
	off := (len(a.buf) + align - 1) / align * align
	for len(a.buf) < off {
		a.buf = append(a.buf, 0)
	}
	a.offsets = append(a.offsets, int32(off))
	if b != nil {
		a.sizes = append(a.sizes, int32(len(b)))
		a.buf = append(a.buf, b...)
		return
	}
	a.sizes = append(a.sizes, int32(size))
	for i := range size {
		a.buf = append(a.buf, byte(v>>(8*i)))
	}
}

// Ptr adds a device pointer (.param .u64).
func (a *Args) Ptr(p Ptr) *Args { a.add(uint64(p), 8, nil, 8); return a }

// U32 adds a 32-bit integer (.param .u32 or .s32).
func (a *Args) U32(v uint32) *Args { a.add(uint64(v), 4, nil, 4); return a }

// U64 adds a 64-bit integer (.param .u64 or .s64).
func (a *Args) U64(v uint64) *Args { a.add(v, 8, nil, 8); return a }

// F32 adds a float32 (.param .f32).
func (a *Args) F32(v float32) *Args { a.add(uint64(math.Float32bits(v)), 4, nil, 4); return a }

// F64 adds a float64 (.param .f64).
func (a *Args) F64(v float64) *Args { a.add(math.Float64bits(v), 8, nil, 8); return a }

// Bytes adds a byte array (.param .align align .b8 name[len(b)]), copied.
func (a *Args) Bytes(b []byte, align int) *Args {
	if b == nil {
		b = []byte{}
	}
	a.add(0, 0, b, align)
	return a
}

// Len is the number of arguments.
func (a *Args) Len() int { return len(a.sizes) }

// Arg returns argument i's bytes.
func (a *Args) Arg(i int) []byte { return a.buf[a.offsets[i] : a.offsets[i]+a.sizes[i]] }

// Pointers returns a pointer to each argument's bytes, for cuLaunchKernel's
// kernelParams (the buffer must stay alive and unmoved during the call).
func (a *Args) Pointers() []unsafe.Pointer {
	out := make([]unsafe.Pointer, len(a.offsets))
	for i, off := range a.offsets {
		out[i] = unsafe.Pointer(&a.buf[off])
	}
	return out
}

// Error is a failed driver or cuBLAS call: the call, the CUDA error code
// and name, and what the implementation adds (the JIT log, the faulting
// instruction).
type Error struct {
	Call   string
	Code   int
	Name   string
	Detail string
}

func (e *Error) Error() string {
	s := fmt.Sprintf("cuda: %s: %s (%d)", e.Call, e.Name, e.Code)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// The CUDA error codes the backend and the emulator name.
const (
	ErrorInvalidValue       = 1
	ErrorOutOfMemory        = 2
	ErrorNotInitialized     = 3
	ErrorNoDevice           = 100
	ErrorInvalidDevice      = 101
	ErrorInvalidContext     = 201
	ErrorInvalidPTX         = 218
	ErrorInvalidHandle      = 400
	ErrorNotFound           = 500
	ErrorNotReady           = 600
	ErrorIllegalAddress     = 700
	ErrorLaunchOutOfRes     = 701
	ErrorIllegalInstruction = 715
	ErrorMisalignedAddress  = 716
	ErrorLaunchFailed       = 719
)

// Names of the codes above, as cuGetErrorName gives them.
var names = map[int]string{
	ErrorInvalidValue: "CUDA_ERROR_INVALID_VALUE", ErrorOutOfMemory: "CUDA_ERROR_OUT_OF_MEMORY",
	ErrorNotInitialized: "CUDA_ERROR_NOT_INITIALIZED", ErrorNoDevice: "CUDA_ERROR_NO_DEVICE",
	ErrorInvalidDevice: "CUDA_ERROR_INVALID_DEVICE", ErrorInvalidContext: "CUDA_ERROR_INVALID_CONTEXT",
	ErrorInvalidPTX: "CUDA_ERROR_INVALID_PTX", ErrorInvalidHandle: "CUDA_ERROR_INVALID_HANDLE",
	ErrorNotFound: "CUDA_ERROR_NOT_FOUND", ErrorNotReady: "CUDA_ERROR_NOT_READY", ErrorIllegalAddress: "CUDA_ERROR_ILLEGAL_ADDRESS",
	ErrorLaunchOutOfRes: "CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES", ErrorIllegalInstruction: "CUDA_ERROR_ILLEGAL_INSTRUCTION",
	ErrorMisalignedAddress: "CUDA_ERROR_MISALIGNED_ADDRESS", ErrorLaunchFailed: "CUDA_ERROR_LAUNCH_FAILED",
	ErrorCaptureUnsupported: "CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED", ErrorCaptureInvalidated: "CUDA_ERROR_STREAM_CAPTURE_INVALIDATED",
}

// Errorf returns the *Error of a call that failed with code.
func Errorf(call string, code int, format string, args ...any) *Error {
	name := names[code]
	if name == "" {
		name = fmt.Sprintf("CUDA error %d", code)
	}
	return &Error{Call: call, Code: code, Name: name, Detail: fmt.Sprintf(format, args...)}
}

// GraphExec is an instantiated CUDA graph (CUgraphExec).
type GraphExec uintptr

// Graphs is a Context that captures the work queued on a stream as a CUDA
// graph and replays it with one launch. Calls are made inside Do.
type Graphs interface {
	// BeginCapture starts capturing s in relaxed mode (memory may still be
	// allocated): the work then queued on s is recorded, not run, until
	// EndCapture. A wait for s meanwhile (StreamSynchronize) fails with
	// CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the capture.
	BeginCapture(s Stream) error
	// EndCapture ends the capture of s and instantiates what it recorded;
	// an invalidated capture is an error.
	EndCapture(s Stream) (GraphExec, error)
	// GraphLaunch queues the graph's work on s.
	GraphLaunch(g GraphExec, s Stream) error
	// GraphDestroy frees an instantiated graph.
	GraphDestroy(g GraphExec) error
}

// CondHandle is a condition of a CUDA graph (CUgraphConditionalHandle):
// a value a conditional node tests, set on the device by a kernel of the
// graph through cudaGraphSetConditional (kernels.SetConditional).
type CondHandle uint64

// GraphLoops is Graphs whose captures hold loops and branches run on the
// device: conditional WHILE and IF nodes (CUDA 12.4 and later). Calls are
// made inside Do, on a stream that captures.
type GraphLoops interface {
	Graphs
	// NewCondition makes a condition of the graph s captures into, 0 at
	// every launch of the graph until a kernel sets it.
	NewCondition(s Stream) (CondHandle, error)
	// BeginWhile adds a WHILE node on h after the work s captured so far,
	// and goes on capturing s into the node's body: the body runs while h
	// is nonzero, tested when the node is reached and after each pass.
	// Bodies nest (a body may begin a node of its own).
	BeginWhile(s Stream, h CondHandle) error
	// BeginIf is BeginWhile for an IF node: its body runs once where h is
	// nonzero when the node is reached, and not at all otherwise.
	BeginIf(s Stream, h CondHandle) error
	// EndBody ends the capture of the innermost body begun on s: s goes
	// on capturing after its node.
	EndBody(s Stream) error
}

// The stream-capture errors.
const (
	ErrorCaptureUnsupported = 900 // CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED
	ErrorCaptureInvalidated = 901 // CUDA_ERROR_STREAM_CAPTURE_INVALIDATED
)
