// Package emu is an emulated CUDA driver, cuBLAS and cuDNN, for tests:
// device memory lives in host RAM behind device addresses, modules load
// from the PTX text the backend loads on hardware, and launches run
// through a PTX interpreter (every thread of every block; shared memory,
// barriers and warp shuffles honoured). It counts what each launch does
// (Profile) and keeps a nominal clock for timed events (clock.go). It holds the real API's contracts strictly, so that misuse
// fails here as it would on a GPU: calls outside a context current on the
// calling thread, pointers outside allocations, reading a copy's
// destination before its stream is synchronised (it is poisoned until
// then), asynchronous copies of pageable host memory, parameters of the
// wrong count or size, and any PTX instruction it does not implement.
// Kernel faults surface at the next synchronisation and stick to the
// context, as on hardware. It is test support, not a user API.
package emu

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
)

// Config describes the emulated device.
type Config struct {
	Name         string
	Memory       int // bytes of device memory
	Major, Minor int
	SMs          int
	// MaxPTX is the newest PTX ISA version the emulated driver accepts.
	MaxPTX string
}

// DefaultConfig is a small Hopper-like device.
var DefaultConfig = Config{Name: "eagerflow emulated GPU", Memory: 1 << 30, Major: 9, Minor: 0, SMs: 4, MaxPTX: "9.0"}

// Driver is the emulated driver: one device.
type Driver struct {
	cfg Config
	mu  sync.Mutex
	ctx *Context
}

// New returns an emulated driver with one device described by cfg.
func New(cfg Config) *Driver { return &Driver{cfg: cfg} }

// Name says it is the emulator.
func (d *Driver) Name() string { return "emulator (" + d.cfg.Name + ")" }

// Version is the driver version the emulator claims (13.0).
func (d *Driver) Version() (int, error) { return 13000, nil }

// DeviceCount is 1.
func (d *Driver) DeviceCount() (int, error) { return 1, nil }

// Device describes device 0.
func (d *Driver) Device(ordinal int) (cu.Info, error) {
	if ordinal != 0 {
		return cu.Info{}, cu.Errorf("cuDeviceGet", cu.ErrorInvalidDevice, "ordinal %d of 1 device", ordinal)
	}
	return cu.Info{Name: d.cfg.Name, Memory: d.cfg.Memory, Major: d.cfg.Major, Minor: d.cfg.Minor, SMs: d.cfg.SMs}, nil
}

// Retain returns device 0's primary context.
func (d *Driver) Retain(ordinal int) (cu.Context, error) {
	if ordinal != 0 {
		return nil, cu.Errorf("cuDevicePrimaryCtxRetain", cu.ErrorInvalidDevice, "ordinal %d of 1 device", ordinal)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ctx == nil {
		d.ctx = &Context{cfg: d.cfg, mem: newMemory(d.cfg.Memory), current: map[int]int{},
			streams: map[cu.Stream]*stream{}, modules: map[cu.Module]*loaded{}, funcs: map[cu.Function]*compiled{}, events: map[cu.Event]*timedEvent{}, graphs: map[cu.GraphExec][]func() error{}, conds: map[cu.CondHandle]uint32{},
			pinned: map[uintptr]int{}}
	}
	return d.ctx, nil
}

// Context is the emulated primary context.
type Context struct {
	cfg     Config
	mu      sync.Mutex
	mem     *memory
	current map[int]int // OS thread -> depth of Do calls current there
	sticky  error       // a kernel fault: every later call fails with it
	streams map[cu.Stream]*stream
	modules map[cu.Module]*loaded
	funcs   map[cu.Function]*compiled
	handles uintptr
	pinned  map[uintptr]int // page-locked host allocations: start -> length
	// Launches counts the kernels run, DNNCalls the cuDNN passes,
	// HalfDNNCalls those of them on 16-bit floats, FP8Gemms the GEMMs
	// of 8-bit floats and MixedGemms those of 16-bit floats into float32
	// (cu.Gemm.In) queued, for tests.
	Launches, DNNCalls, HalfDNNCalls, FP8Gemms, MixedGemms int
	profiler                                               func(Profile) // SetProfiler's
	now                                                    float64       // the clock, nominal nanoseconds (clock.go)
	events                                                 map[cu.Event]*timedEvent
	graphs                                                 map[cu.GraphExec][]func() error // instantiated graphs (graph.go)
	// GraphLaunches counts the graphs launched, Queued the calls that
	// queued work on a stream outside a capture (kernel launches, copies,
	// fills, graph launches: what the host submits), Uploads the copies
	// from host memory among them, Waits the host's waits for a stream,
	// for tests.
	GraphLaunches, Queued, Uploads, Waits int
	// conds are the graphs' conditions (graph.go), which kernels set
	// through cudaGraphSetConditional; LoopPasses counts the passes of
	// loop bodies run, BranchesTaken the IF bodies.
	conds                     map[cu.CondHandle]uint32
	LoopPasses, BranchesTaken int
	refuse                    int // captures still to refuse (RefuseCaptures)
}

type stream struct {
	queue   []func() error
	capture *capture // the capture in progress (graph.go)
}

type loaded struct{ kernels map[string]cu.Function }

// Do runs fn with the context current on the calling goroutine's locked
// thread; calls outside Do fail.
func (c *Context) Do(fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	tid := threadID()
	c.mu.Lock()
	c.current[tid]++
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		if c.current[tid]--; c.current[tid] == 0 {
			delete(c.current, tid)
		}
		c.mu.Unlock()
	}()
	return fn()
}

// enter checks the contracts every call shares and locks the context.
func (c *Context) enter(call string) error {
	c.mu.Lock()
	if tid := threadID(); tid != 0 && c.current[tid] == 0 {
		c.mu.Unlock()
		return cu.Errorf(call, cu.ErrorInvalidContext, "the context is not current on this thread (call it inside Context.Do)")
	}
	if c.sticky != nil {
		err := c.sticky
		c.mu.Unlock()
		return err
	}
	return nil
}

func (c *Context) handle() uintptr {
	c.handles++
	return c.handles
}

func (c *Context) stream(call string, s cu.Stream) (*stream, error) {
	st, ok := c.streams[s]
	if !ok {
		return nil, cu.Errorf(call, cu.ErrorInvalidHandle, "stream %#x was not created on this context", uintptr(s))
	}
	return st, nil
}

// MemInfo returns the free and total emulated memory.
func (c *Context) MemInfo() (int, int, error) {
	if err := c.enter("cuMemGetInfo"); err != nil {
		return 0, 0, err
	}
	defer c.mu.Unlock()
	return c.mem.limit - c.mem.used, c.mem.limit, nil
}

// MemAlloc allocates n bytes at once (the stream may use them from here).
func (c *Context) MemAlloc(n int, s cu.Stream) (cu.Ptr, error) {
	if err := c.enter("cuMemAllocAsync"); err != nil {
		return 0, err
	}
	defer c.mu.Unlock()
	if _, err := c.stream("cuMemAllocAsync", s); s != 0 && err != nil {
		return 0, err
	}
	if n <= 0 {
		return 0, cu.Errorf("cuMemAllocAsync", cu.ErrorInvalidValue, "size %d", n)
	}
	p, ok := c.mem.alloc(n)
	if !ok {
		return 0, cu.Errorf("cuMemAllocAsync", cu.ErrorOutOfMemory, "%d bytes with %d of %d in use", n, c.mem.used, c.mem.limit)
	}
	return cu.Ptr(p), nil
}

// MemFree frees p when s reaches the call.
func (c *Context) MemFree(p cu.Ptr, s cu.Stream) error {
	if s == 0 { // cuMemFree: at once
		if err := c.enter("cuMemFree"); err != nil {
			return err
		}
		defer c.mu.Unlock()
		if !c.mem.free(uint64(p)) {
			return cu.Errorf("cuMemFree", cu.ErrorInvalidValue, "0x%x is not the start of an allocation", uint64(p))
		}
		return nil
	}
	return c.enqueue("cuMemFreeAsync", s, func() error {
		if _, a := c.mem.find(uint64(p)); a == nil || a.base != uint64(p) {
			return cu.Errorf("cuMemFreeAsync", cu.ErrorInvalidValue, "0x%x is not the start of an allocation", uint64(p))
		}
		return nil
	}, func() error {
		c.mem.free(uint64(p))
		return nil
	})
}

// MemAllocHost returns n bytes of (emulated) page-locked host memory.
func (c *Context) MemAllocHost(n int) ([]byte, error) {
	if err := c.enter("cuMemAllocHost"); err != nil {
		return nil, err
	}
	defer c.mu.Unlock()
	if n <= 0 {
		return nil, cu.Errorf("cuMemAllocHost", cu.ErrorInvalidValue, "size %d", n)
	}
	b := make([]byte, n)
	c.pinned[uintptr(unsafe.Pointer(&b[0]))] = n
	return b, nil
}

// MemFreeHost frees page-locked memory.
func (c *Context) MemFreeHost(b []byte) error {
	if err := c.enter("cuMemFreeHost"); err != nil {
		return err
	}
	defer c.mu.Unlock()
	if len(b) == 0 {
		return cu.Errorf("cuMemFreeHost", cu.ErrorInvalidValue, "empty buffer")
	}
	p := uintptr(unsafe.Pointer(&b[0]))
	if _, ok := c.pinned[p]; !ok {
		return cu.Errorf("cuMemFreeHost", cu.ErrorInvalidValue, "not the start of a cuMemAllocHost buffer")
	}
	delete(c.pinned, p)
	return nil
}

// checkPinned fails unless b lies inside a page-locked allocation: an
// asynchronous copy of pageable memory is not asynchronous on hardware,
// and the backend stages copies through pinned buffers.
func (c *Context) checkPinned(call string, b []byte) error {
	if len(b) == 0 {
		return cu.Errorf(call, cu.ErrorInvalidValue, "no bytes to copy")
	}
	p := uintptr(unsafe.Pointer(&b[0]))
	for start, n := range c.pinned {
		if p >= start && p+uintptr(len(b)) <= start+uintptr(n) {
			return nil
		}
	}
	return cu.Errorf(call, cu.ErrorInvalidValue, "the host memory of an asynchronous copy must be page-locked (cuMemAllocHost)")
}

func (c *Context) checkRange(call string, p cu.Ptr, n int) error {
	if _, err := c.mem.slice(uint64(p), n); err != nil {
		return cu.Errorf(call, cu.ErrorInvalidValue, "%v", err)
	}
	return nil
}

// enqueue is a stream call: in the context, on a valid stream, it runs
// check now (the argument checks the driver makes at the call) and queues
// op to run when s reaches it.
func (c *Context) enqueue(call string, s cu.Stream, check, op func() error) error {
	if err := c.enter(call); err != nil {
		return err
	}
	defer c.mu.Unlock()
	st, err := c.stream(call, s)
	if err != nil {
		return err
	}
	if err := check(); err != nil {
		return err
	}
	if st.capture != nil { // recorded, not run (graph.go)
		st.capture.ops = append(st.capture.ops, op)
		return nil
	}
	st.queue = append(st.queue, op)
	c.Queued++
	if call == "cuMemcpyHtoDAsync" {
		c.Uploads++
	}
	return nil
}

// freed is the error of a queued copy whose range was freed before it ran.
func freed(call string, err error) error {
	return cu.Errorf(call, cu.ErrorIllegalAddress, "%v (freed before the copy ran?)", err)
}

// MemcpyHtoD copies src to dst when s reaches the call.
func (c *Context) MemcpyHtoD(dst cu.Ptr, src []byte, s cu.Stream) error {
	const call = "cuMemcpyHtoDAsync"
	return c.enqueue(call, s, func() error {
		if err := c.checkPinned(call, src); err != nil {
			return err
		}
		return c.checkRange(call, dst, len(src))
	}, func() error {
		d, err := c.mem.slice(uint64(dst), len(src))
		if err != nil {
			return freed(call, err)
		}
		copy(d, src)
		c.tick(float64(len(src)) / hostBytesPerNs)
		return nil
	})
}

// poison is what a copy's host destination holds until its stream is
// synchronised.
const poison = 0xcd

// MemcpyDtoH writes dst when s reaches the call; until then dst holds
// poison bytes.
func (c *Context) MemcpyDtoH(dst []byte, src cu.Ptr, s cu.Stream) error {
	const call = "cuMemcpyDtoHAsync"
	return c.enqueue(call, s, func() error {
		if err := c.checkPinned(call, dst); err != nil {
			return err
		}
		if err := c.checkRange(call, src, len(dst)); err != nil {
			return err
		}
		for i := range dst {
			dst[i] = poison
		}
		return nil
	}, func() error {
		b, err := c.mem.slice(uint64(src), len(dst))
		if err != nil {
			return freed(call, err)
		}
		copy(dst, b)
		c.tick(float64(len(dst)) / hostBytesPerNs)
		return nil
	})
}

// MemcpyDtoD copies n bytes between device ranges when s reaches the call.
func (c *Context) MemcpyDtoD(dst, src cu.Ptr, n int, s cu.Stream) error {
	const call = "cuMemcpyDtoDAsync"
	return c.enqueue(call, s, func() error {
		if err := c.checkRange(call, dst, n); err != nil {
			return err
		}
		return c.checkRange(call, src, n)
	}, func() error {
		d, err := c.mem.slice(uint64(dst), n)
		if err != nil {
			return freed(call, err)
		}
		b, err := c.mem.slice(uint64(src), n)
		if err != nil {
			return freed(call, err)
		}
		copy(d, b)
		c.tick(2 * float64(n) / deviceBytesPerNs)
		return nil
	})
}

func (c *Context) memset(call string, dst cu.Ptr, v []byte, n int, s cu.Stream) error {
	return c.enqueue(call, s, func() error {
		if uint64(dst)%uint64(len(v)) != 0 {
			return cu.Errorf(call, cu.ErrorInvalidValue, "0x%x is not aligned to %d bytes", uint64(dst), len(v))
		}
		return c.checkRange(call, dst, n*len(v))
	}, func() error {
		d, err := c.mem.slice(uint64(dst), n*len(v))
		if err != nil {
			return cu.Errorf(call, cu.ErrorIllegalAddress, "%v", err)
		}
		for i := 0; i < len(d); i += len(v) {
			copy(d[i:], v)
		}
		return nil
	})
}

// MemsetD8 sets n bytes to v when s reaches the call.
func (c *Context) MemsetD8(dst cu.Ptr, v byte, n int, s cu.Stream) error {
	return c.memset("cuMemsetD8Async", dst, []byte{v}, n, s)
}

// MemsetD32 sets n 32-bit words to v when s reaches the call.
func (c *Context) MemsetD32(dst cu.Ptr, v uint32, n int, s cu.Stream) error {
	return c.memset("cuMemsetD32Async", dst, []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)}, n, s)
}

// ModuleLoad parses and compiles PTX; its error is CUDA_ERROR_INVALID_PTX
// with the reasons, as the JIT log gives them.
func (c *Context) ModuleLoad(ptx string) (cu.Module, error) {
	const call = "cuModuleLoadDataEx"
	if err := c.enter(call); err != nil {
		return 0, err
	}
	defer c.mu.Unlock()
	m, err := parseModule(ptx)
	if err != nil {
		return 0, cu.Errorf(call, cu.ErrorInvalidPTX, "ptx JIT log: %v", err)
	}
	sm, err := c.checkTarget(m)
	if err != nil {
		return 0, cu.Errorf(call, cu.ErrorInvalidPTX, "ptx JIT log: %v", err)
	}
	l := &loaded{kernels: map[string]cu.Function{}}
	names := make([]string, 0, len(m.kernels))
	for name := range m.kernels {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		k, err := compile(m.kernels[name], sm)
		if err != nil {
			return 0, cu.Errorf(call, cu.ErrorInvalidPTX, "ptx JIT log: %v", err)
		}
		f := cu.Function(c.handle())
		c.funcs[f] = k
		l.kernels[name] = f
	}
	h := cu.Module(c.handle())
	c.modules[h] = l
	return h, nil
}

// checkTarget refuses a PTX version newer than the driver's or a target
// newer than the device, and returns the target's number (sm_<n>).
func (c *Context) checkTarget(m *module) (int, error) {
	if versionNumber(m.version) > versionNumber(c.cfg.MaxPTX) {
		return 0, fmt.Errorf("PTX ISA %s is newer than the driver's %s", m.version, c.cfg.MaxPTX)
	}
	t := strings.TrimSuffix(strings.Fields(m.target)[0], "a")
	sm, err := strconv.Atoi(strings.TrimPrefix(t, "sm_"))
	if err != nil {
		return 0, fmt.Errorf("unknown target %q", m.target)
	}
	if sm > 10*c.cfg.Major+c.cfg.Minor {
		return 0, fmt.Errorf("target %s is newer than the device (compute capability %d.%d)", m.target, c.cfg.Major, c.cfg.Minor)
	}
	return sm, nil
}

func versionNumber(v string) int {
	major, minor, _ := strings.Cut(v, ".")
	a, _ := strconv.Atoi(major)
	b, _ := strconv.Atoi(minor)
	return 100*a + b
}

// Function returns a kernel of a loaded module.
func (c *Context) Function(m cu.Module, name string) (cu.Function, error) {
	if err := c.enter("cuModuleGetFunction"); err != nil {
		return 0, err
	}
	defer c.mu.Unlock()
	l, ok := c.modules[m]
	if !ok {
		return 0, cu.Errorf("cuModuleGetFunction", cu.ErrorInvalidHandle, "module %#x", uintptr(m))
	}
	f, ok := l.kernels[name]
	if !ok {
		return 0, cu.Errorf("cuModuleGetFunction", cu.ErrorNotFound, "no kernel %q in the module", name)
	}
	return f, nil
}

// DoLaunch is Launch inside Do.
func (c *Context) DoLaunch(f cu.Function, grid, block cu.Dim3, shared int, s cu.Stream, args *cu.Args) error {
	return c.Do(func() error { return c.Launch(f, grid, block, shared, s, args) })
}

// Launch checks the launch's shape and arguments against the kernel and
// queues it.
func (c *Context) Launch(f cu.Function, grid, block cu.Dim3, shared int, s cu.Stream, args *cu.Args) error {
	const call = "cuLaunchKernel"
	var (
		k      *compiled
		g, b   [3]int
		params []byte
	)
	return c.enqueue(call, s, func() error {
		var ok bool
		if k, ok = c.funcs[f]; !ok {
			return cu.Errorf(call, cu.ErrorInvalidHandle, "function %#x", uintptr(f))
		}
		g, b = [3]int{grid.X, grid.Y, grid.Z}, [3]int{block.X, block.Y, block.Z}
		for i := range 3 {
			if g[i] < 1 || b[i] < 1 {
				return cu.Errorf(call, cu.ErrorInvalidValue, "%s: grid %v and block %v need every dimension at least 1", k.name, g, b)
			}
		}
		if b[0]*b[1]*b[2] > 1024 || b[2] > 64 || g[1] > 65535 || g[2] > 65535 {
			return cu.Errorf(call, cu.ErrorInvalidValue, "%s: block %v or grid %v beyond the device's limits", k.name, b, g)
		}
		if k.maxThreads > 0 && b[0]*b[1]*b[2] > k.maxThreads {
			return cu.Errorf(call, cu.ErrorInvalidValue, "%s: a block of %v threads, beyond its .maxntid of %d", k.name, b, k.maxThreads)
		}
		switch {
		case k.shSize > staticShared:
			return cu.Errorf(call, cu.ErrorLaunchOutOfRes, "%s: %d bytes of static shared memory, beyond %d", k.name, k.shSize, staticShared)
		case shared < 0 || shared > 0 && k.dynBase < 0:
			return cu.Errorf(call, cu.ErrorInvalidValue, "%s: %d bytes of dynamic shared memory for a kernel that declares no .extern .shared array", k.name, shared)
		case shared > k.maxDyn:
			return cu.Errorf(call, cu.ErrorInvalidValue, "%s: %d bytes of dynamic shared memory beside %d static, beyond its limit of %d (cuFuncSetAttribute raises it)", k.name, shared, k.shSize, k.maxDyn)
		}
		if args.Len() != len(k.params) {
			return cu.Errorf(call, cu.ErrorInvalidValue, "%s takes %d parameters, got %d", k.name, len(k.params), args.Len())
		}
		params = make([]byte, k.psize)
		for i, p := range k.params {
			a := args.Arg(i)
			if len(a) != p.size {
				return cu.Errorf(call, cu.ErrorInvalidValue, "%s: parameter %d (%s, .%s) is %d bytes, got %d", k.name, i, p.name, p.typ, p.size, len(a))
			}
			copy(params[k.poff[i]:], a)
		}
		return nil
	}, func() error {
		c.Launches++
		r := &run{k: k, grid: g, block: b, params: params, shared: k.shSize, mem: c.mem, conds: c.conds}
		if k.dynBase >= 0 {
			r.shared = k.dynBase + shared
		}
		if c.profiler != nil {
			r.count = newCounter(k, g, b)
		}
		if err := r.exec(); err != nil {
			return cu.Errorf(call, cu.ErrorIllegalAddress, "%v", err)
		}
		c.tick(c.launchTime(r.steps))
		if r.count != nil {
			r.count.p.Instructions = r.steps - r.count.params
			c.profiler(r.count.p)
		}
		return nil
	})
}

// The shared memory a block may have: 48 KB of static (and, by
// default, dynamic) memory, and up to optInShared in all where a kernel's
// dynamic limit is raised (an H100's 227 KB).
const (
	staticShared = 48 << 10
	optInShared  = 227 << 10
)

// SetMaxDynamicShared is cuFuncSetAttribute's
// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (cu.SharedSizer): the
// most dynamic shared memory f's launches may take, at most the device's
// opt-in limit less its static bytes.
func (c *Context) SetMaxDynamicShared(f cu.Function, bytes int) error {
	const call = "cuFuncSetAttribute"
	if err := c.enter(call); err != nil {
		return err
	}
	defer c.mu.Unlock()
	k, ok := c.funcs[f]
	if !ok {
		return cu.Errorf(call, cu.ErrorInvalidHandle, "function %#x", uintptr(f))
	}
	if bytes < 0 || k.shSize+bytes > optInShared {
		return cu.Errorf(call, cu.ErrorInvalidValue, "%s: %d bytes of dynamic shared memory beside %d static, beyond the device's %d", k.name, bytes, k.shSize, optInShared)
	}
	k.maxDyn = bytes
	return nil
}

var _ cu.SharedSizer = (*Context)(nil)

// StreamCreate makes a stream.
func (c *Context) StreamCreate() (cu.Stream, error) {
	if err := c.enter("cuStreamCreate"); err != nil {
		return 0, err
	}
	defer c.mu.Unlock()
	s := cu.Stream(c.handle())
	c.streams[s] = &stream{}
	return s, nil
}

// StreamSynchronize runs what s has queued, in order. A fault sticks: the
// context fails every later call with it.
func (c *Context) StreamSynchronize(s cu.Stream) error {
	if err := c.enter("cuStreamSynchronize"); err != nil {
		return err
	}
	defer c.mu.Unlock()
	st, err := c.stream("cuStreamSynchronize", s)
	if err != nil {
		return err
	}
	if st.capture != nil {
		if strings.Contains(os.Getenv("EAGERFLOW_DEBUG"), "capture") {
			// Who waited: a capture invalidated by another goroutine (the
			// collector's cleanups) shows only here.
			fmt.Fprintf(os.Stderr, "emu: a wait for stream %#x while it captures, from:\n%s", uintptr(s), debug.Stack())
		}
		err := cu.Errorf("cuStreamSynchronize", cu.ErrorCaptureUnsupported, "a wait for stream %#x while it captures", uintptr(s))
		st.capture.invalid = err
		return err
	}
	c.Waits++
	return c.runLocked(st)
}

// runLocked runs what st has queued, in order (c.mu held); a fault
// sticks.
func (c *Context) runLocked(st *stream) error {
	q := st.queue
	st.queue = nil
	for _, op := range q {
		if err := op(); err != nil {
			c.sticky = err
			return err
		}
	}
	return nil
}

// Gemm queues the reference GEMM.
//
// The emulated context has cuBLASLt's FP8 GEMMs, with their rules
// (cu.Gemm.CheckFP8): a GEMM that breaks them is refused as the real
// context refuses it, having queued nothing.
func (c *Context) Gemm(s cu.Stream, g cu.Gemm) error {
	const call = "cublasGemmStridedBatchedEx"
	if err := g.CheckFP8(); err != nil {
		return err
	}
	if g.FP8() {
		c.FP8Gemms++
	}
	if g.In != 0 {
		c.MixedGemms++
	}
	return c.enqueue(call, s, func() error {
		if err := checkGemm(g); err != nil {
			return cu.Errorf(call, cu.ErrorInvalidValue, "%v", err)
		}
		return nil
	}, func() error {
		if err := gemm(c.mem, g); err != nil {
			return cu.Errorf(call, cu.ErrorIllegalAddress, "%v", err)
		}
		c.tick(launchNs + 2*float64(g.M)*float64(g.N)*float64(g.K)*float64(max(g.Batch, 1))/gemmFlopsPerNs)
		return nil
	})
}
