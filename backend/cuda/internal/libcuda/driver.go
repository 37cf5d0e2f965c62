//go:build linux && (amd64 || arm64)

package libcuda

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/internal/dlcheck"
)

// The driver API's entry points, by the names libcuda exports (the _v2
// names where the API has them).
type driverFuncs struct {
	init, driverGetVersion, deviceGetCount, deviceGet, deviceGetName    uintptr
	deviceTotalMem, deviceGetAttribute, primaryCtxRetain, ctxSetCurrent uintptr
	memGetInfo, memAlloc, memFree, memAllocAsync, memFreeAsync          uintptr
	memAllocHost, memFreeHost, memcpyHtoD, memcpyDtoH, memcpyDtoD       uintptr
	memsetD8, memsetD32, moduleLoadDataEx, moduleGetFunction, launch    uintptr
	streamCreate, streamSynchronize, getErrorName, getErrorString       uintptr
	eventCreate, eventRecord, eventQuery, eventDestroy                  uintptr
	eventSynchronize, eventElapsed, eventElapsedV2                      uintptr
	beginCapture, endCapture, graphInstantiate, graphLaunch             uintptr
	graphDestroy, graphExecDestroy                                      uintptr
	// Conditional nodes (loops.go), CUDA 12.3 and later.
	captureInfoV3, captureInfoV2, condHandleCreate, addNodeV2, addNode uintptr
	beginCaptureToGraph                                                uintptr
	funcSetAttribute                                                   uintptr
}

func (f *driverFuncs) symbols() map[string]*uintptr {
	return map[string]*uintptr{
		"cuInit": &f.init, "cuDriverGetVersion": &f.driverGetVersion, "cuDeviceGetCount": &f.deviceGetCount,
		"cuDeviceGet": &f.deviceGet, "cuDeviceGetName": &f.deviceGetName, "cuDeviceTotalMem_v2": &f.deviceTotalMem,
		"cuDeviceGetAttribute": &f.deviceGetAttribute, "cuDevicePrimaryCtxRetain": &f.primaryCtxRetain,
		"cuCtxSetCurrent": &f.ctxSetCurrent, "cuMemGetInfo_v2": &f.memGetInfo, "cuMemAlloc_v2": &f.memAlloc,
		"cuMemFree_v2": &f.memFree, "cuMemAllocHost_v2": &f.memAllocHost, "cuMemFreeHost": &f.memFreeHost,
		"cuMemcpyHtoDAsync_v2": &f.memcpyHtoD, "cuMemcpyDtoHAsync_v2": &f.memcpyDtoH,
		"cuMemcpyDtoDAsync_v2": &f.memcpyDtoD, "cuMemsetD8Async": &f.memsetD8, "cuMemsetD32Async": &f.memsetD32,
		"cuModuleLoadDataEx": &f.moduleLoadDataEx, "cuModuleGetFunction": &f.moduleGetFunction,
		"cuLaunchKernel": &f.launch, "cuStreamCreate": &f.streamCreate, "cuStreamSynchronize": &f.streamSynchronize,
		"cuGetErrorName": &f.getErrorName, "cuGetErrorString": &f.getErrorString,
		"cuEventCreate": &f.eventCreate, "cuEventRecord": &f.eventRecord, "cuEventQuery": &f.eventQuery,
		"cuEventDestroy_v2": &f.eventDestroy,
	}
}

// optional entry points: absent from older drivers, used where present.
func (f *driverFuncs) optional() map[string]*uintptr {
	return map[string]*uintptr{"cuMemAllocAsync": &f.memAllocAsync, "cuMemFreeAsync": &f.memFreeAsync,
		"cuEventSynchronize": &f.eventSynchronize, "cuEventElapsedTime": &f.eventElapsed,
		"cuEventElapsedTime_v2":   &f.eventElapsedV2,
		"cuStreamBeginCapture_v2": &f.beginCapture, "cuStreamEndCapture": &f.endCapture,
		"cuGraphInstantiateWithFlags": &f.graphInstantiate, "cuGraphLaunch": &f.graphLaunch,
		"cuGraphDestroy": &f.graphDestroy, "cuGraphExecDestroy": &f.graphExecDestroy,
		"cuStreamGetCaptureInfo_v3": &f.captureInfoV3, "cuStreamGetCaptureInfo_v2": &f.captureInfoV2,
		"cuGraphConditionalHandleCreate": &f.condHandleCreate, "cuGraphAddNode_v2": &f.addNodeV2,
		"cuGraphAddNode": &f.addNode, "cuStreamBeginCaptureToGraph": &f.beginCaptureToGraph,
		"cuFuncSetAttribute": &f.funcSetAttribute}
}

// Device attributes (CUdevice_attribute).
const (
	attrMultiprocessors = 16
	attrMajor           = 75
	attrMinor           = 76
	attrMemoryPools     = 115
)

// Driver is libcuda (and cuBLAS where found).
type Driver struct {
	files []string
	f     driverFuncs
	blas  *blas // nil without cuBLAS
	// blasLt is cuBLASLt's entry points, nil without it.
	blasLt *blasLt
	blasE  error // why there is no cuBLAS
	dnn    *dnn  // nil without cuDNN
	dnnE   error // why there is no cuDNN

	mu       sync.Mutex
	contexts map[int]*Context
}

var (
	loadOnce sync.Once
	loaded   *Driver
	loadErr  error
)

// Load opens the libraries once per process and initialises the driver.
// The error names each file tried and why it failed, or the symbol
// missing.
func Load() (cu.Driver, error) {
	loadOnce.Do(func() { loaded, loadErr = load() })
	if loadErr != nil {
		return nil, loadErr
	}
	return loaded, nil
}

// open dlopens the first of paths that loads, returning its handle and
// the file, or an error listing every failure.
func open(what string, paths []string) (uintptr, string, error) {
	var fails []string
	for _, p := range paths {
		if err := dlcheck.Check(p); err != nil {
			fails = append(fails, err.Error())
			continue
		}
		h, err := purego.Dlopen(p, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err == nil {
			return h, resolved(p), nil
		}
		fails = append(fails, err.Error())
	}
	return 0, "", fmt.Errorf("libcuda: no %s could be loaded (set %s to a directory holding it): %s",
		what, EnvPath, strings.Join(fails, "; "))
}

// resolve fills each symbol's address from the library h.
func resolve(h uintptr, file string, syms map[string]*uintptr, required bool) error {
	for name, p := range syms {
		addr, err := purego.Dlsym(h, name)
		if err != nil || addr == 0 {
			if required {
				return fmt.Errorf("libcuda: %s has no symbol %s (a driver too old?)", file, name)
			}
			continue
		}
		*p = addr
	}
	return nil
}

func load() (*Driver, error) {
	dirs := searchDirs()
	h, file, err := open("CUDA driver (libcuda.so.1)", candidates(os.Getenv(EnvLibcuda), cudaNames, dirs))
	if err != nil {
		return nil, err
	}
	d := &Driver{files: []string{file}, contexts: map[int]*Context{}}
	if err := resolve(h, file, d.f.symbols(), true); err != nil {
		return nil, err
	}
	_ = resolve(h, file, d.f.optional(), false)
	if err := d.call("cuInit", d.f.init, 0); err != nil {
		return nil, err
	}
	d.blas, d.blasE = loadBlas(dirs)
	if d.blas != nil {
		d.blasLt = loadBlasLt(d.blas.ltFile)
		d.files = append(d.files, d.blas.files...)
		d.files = append(d.files, "cuBLAS "+d.blas.version())
		if d.blasLt != nil {
			d.files = append(d.files, "GEMMs through cuBLASLt")
		}
	}
	d.dnn, d.dnnE = loadDNN(dirs)
	return d, nil
}

// call calls a driver function and turns its CUresult into an error.
//
//go:uintptrescapes
func (d *Driver) call(name string, fn uintptr, args ...uintptr) error {
	r, _, _ := purego.SyscallN(fn, args...)
	if r == 0 {
		return nil
	}
	return d.errorOf(name, int(r))
}

// errorOf is the *cu.Error of a failed call, named by the driver.
func (d *Driver) errorOf(call string, code int) error {
	var name, desc *byte
	purego.SyscallN(d.f.getErrorName, uintptr(code), uintptr(unsafe.Pointer(&name)))
	purego.SyscallN(d.f.getErrorString, uintptr(code), uintptr(unsafe.Pointer(&desc)))
	e := cu.Errorf(call, code, "%s", goString(desc))
	if n := goString(name); n != "" {
		e.Name = n
	}
	return e
}

// goString copies a C string (nil gives "").
func goString(p *byte) string {
	if p == nil {
		return ""
	}
	var b []byte
	for q := p; *q != 0; q = (*byte)(unsafe.Add(unsafe.Pointer(q), 1)) {
		b = append(b, *q)
	}
	return string(b)
}

// Name lists the files loaded, and why cuBLAS is missing if it is.
func (d *Driver) Name() string {
	s := strings.Join(d.files, ", ")
	if d.blasE != nil {
		s += " (no cuBLAS: " + d.blasE.Error() + ")"
	}
	if d.dnn != nil {
		s += ", " + d.dnn.String()
	} else if d.dnnE != nil {
		s += " (no cuDNN: " + d.dnnE.Error() + ")"
	}
	return s
}

// Version is cuDriverGetVersion's.
func (d *Driver) Version() (int, error) {
	var v int32
	err := d.call("cuDriverGetVersion", d.f.driverGetVersion, uintptr(unsafe.Pointer(&v)))
	return int(v), err
}

// DeviceCount is cuDeviceGetCount's.
func (d *Driver) DeviceCount() (int, error) {
	var n int32
	err := d.call("cuDeviceGetCount", d.f.deviceGetCount, uintptr(unsafe.Pointer(&n)))
	return int(n), err
}

func (d *Driver) device(ordinal int) (int32, error) {
	var dev int32
	err := d.call("cuDeviceGet", d.f.deviceGet, uintptr(unsafe.Pointer(&dev)), uintptr(ordinal))
	return dev, err
}

func (d *Driver) attribute(dev int32, attr int) (int, error) {
	var v int32
	err := d.call("cuDeviceGetAttribute", d.f.deviceGetAttribute, uintptr(unsafe.Pointer(&v)), uintptr(attr), uintptr(dev))
	return int(v), err
}

// Device describes device ordinal.
func (d *Driver) Device(ordinal int) (cu.Info, error) {
	dev, err := d.device(ordinal)
	if err != nil {
		return cu.Info{}, err
	}
	name := make([]byte, 256)
	if err := d.call("cuDeviceGetName", d.f.deviceGetName, uintptr(unsafe.Pointer(&name[0])), uintptr(len(name)), uintptr(dev)); err != nil {
		return cu.Info{}, err
	}
	var mem uint64
	if err := d.call("cuDeviceTotalMem_v2", d.f.deviceTotalMem, uintptr(unsafe.Pointer(&mem)), uintptr(dev)); err != nil {
		return cu.Info{}, err
	}
	info := cu.Info{Name: strings.TrimRight(string(name), "\x00"), Memory: int(mem)}
	for _, a := range []struct {
		attr int
		to   *int
	}{{attrMajor, &info.Major}, {attrMinor, &info.Minor}, {attrMultiprocessors, &info.SMs}} {
		if *a.to, err = d.attribute(dev, a.attr); err != nil {
			return cu.Info{}, err
		}
	}
	return info, nil
}

// Retain returns the device's primary context (one per device per
// process).
func (d *Driver) Retain(ordinal int) (cu.Context, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if c, ok := d.contexts[ordinal]; ok {
		return c, nil
	}
	dev, err := d.device(ordinal)
	if err != nil {
		return nil, err
	}
	c := &Context{d: d}
	if err := d.call("cuDevicePrimaryCtxRetain", d.f.primaryCtxRetain, uintptr(unsafe.Pointer(&c.h)), uintptr(dev)); err != nil {
		return nil, err
	}
	pools, err := d.attribute(dev, attrMemoryPools)
	c.pools = err == nil && pools != 0 && d.f.memAllocAsync != 0 && d.f.memFreeAsync != 0
	d.contexts[ordinal] = c
	return c, nil
}

// Context is a primary context.
type Context struct {
	d     *Driver
	h     uintptr // CUcontext
	pools bool    // stream-ordered allocation
	blasH uintptr // cublasHandle_t, made on first use
	tf32  bool    // the handle's math mode
	// cuBLASLt's handle, workspace and plans per GEMM shape, made on
	// first use (blaslt.go).
	ltH     uintptr
	ltWork  cu.Ptr
	ltPlans map[cu.Gemm]*ltPlan
	dnnH    uintptr // cudnnHandle_t, made on first use
	// loops are the conditional nodes whose bodies each stream captures
	// now, innermost last (loops.go).
	loops map[cu.Stream][]openLoop
	convs map[cu.Conv]convDescs
}

// Do runs fn on a locked OS thread with the context current.
func (c *Context) Do(fn func() error) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := c.d.call("cuCtxSetCurrent", c.d.f.ctxSetCurrent, c.h); err != nil {
		return err
	}
	return fn()
}

// MemInfo is cuMemGetInfo's.
func (c *Context) MemInfo() (free, total int, err error) {
	var f, t uint64
	err = c.d.call("cuMemGetInfo_v2", c.d.f.memGetInfo, uintptr(unsafe.Pointer(&f)), uintptr(unsafe.Pointer(&t)))
	return int(f), int(t), err
}

// MemAlloc allocates from the stream-ordered pool where the device has
// one, else with cuMemAlloc.
func (c *Context) MemAlloc(n int, s cu.Stream) (cu.Ptr, error) {
	var p uint64
	if c.pools && s != 0 {
		err := c.d.call("cuMemAllocAsync", c.d.f.memAllocAsync, uintptr(unsafe.Pointer(&p)), uintptr(n), uintptr(s))
		return cu.Ptr(p), err
	}
	err := c.d.call("cuMemAlloc_v2", c.d.f.memAlloc, uintptr(unsafe.Pointer(&p)), uintptr(n))
	return cu.Ptr(p), err
}

// MemFree frees p in s's order (or at once without pools).
func (c *Context) MemFree(p cu.Ptr, s cu.Stream) error {
	if c.pools && s != 0 {
		return c.d.call("cuMemFreeAsync", c.d.f.memFreeAsync, uintptr(p), uintptr(s))
	}
	return c.d.call("cuMemFree_v2", c.d.f.memFree, uintptr(p))
}

// MemAllocHost allocates page-locked host memory.
func (c *Context) MemAllocHost(n int) ([]byte, error) {
	var p *byte
	if err := c.d.call("cuMemAllocHost_v2", c.d.f.memAllocHost, uintptr(unsafe.Pointer(&p)), uintptr(n)); err != nil {
		return nil, err
	}
	return unsafe.Slice(p, n), nil
}

// MemFreeHost frees memory from MemAllocHost.
func (c *Context) MemFreeHost(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	return c.d.call("cuMemFreeHost", c.d.f.memFreeHost, uintptr(unsafe.Pointer(unsafe.SliceData(b))))
}

// MemcpyHtoD queues a copy from host memory (page-locked for it to be
// asynchronous).
func (c *Context) MemcpyHtoD(dst cu.Ptr, src []byte, s cu.Stream) error {
	if len(src) == 0 {
		return nil
	}
	return c.d.call("cuMemcpyHtoDAsync_v2", c.d.f.memcpyHtoD, uintptr(dst), uintptr(unsafe.Pointer(&src[0])), uintptr(len(src)), uintptr(s))
}

// MemcpyDtoH queues a copy to host memory.
func (c *Context) MemcpyDtoH(dst []byte, src cu.Ptr, s cu.Stream) error {
	if len(dst) == 0 {
		return nil
	}
	return c.d.call("cuMemcpyDtoHAsync_v2", c.d.f.memcpyDtoH, uintptr(unsafe.Pointer(&dst[0])), uintptr(src), uintptr(len(dst)), uintptr(s))
}

// MemcpyDtoD queues a device copy.
func (c *Context) MemcpyDtoD(dst, src cu.Ptr, n int, s cu.Stream) error {
	return c.d.call("cuMemcpyDtoDAsync_v2", c.d.f.memcpyDtoD, uintptr(dst), uintptr(src), uintptr(n), uintptr(s))
}

// MemsetD8 queues a byte fill.
func (c *Context) MemsetD8(dst cu.Ptr, v byte, n int, s cu.Stream) error {
	return c.d.call("cuMemsetD8Async", c.d.f.memsetD8, uintptr(dst), uintptr(v), uintptr(n), uintptr(s))
}

// MemsetD32 queues a 32-bit fill.
func (c *Context) MemsetD32(dst cu.Ptr, v uint32, n int, s cu.Stream) error {
	return c.d.call("cuMemsetD32Async", c.d.f.memsetD32, uintptr(dst), uintptr(v), uintptr(n), uintptr(s))
}

// JIT options (CUjit_option) for the logs of a module load.
const (
	jitInfoLog      = 3
	jitInfoLogSize  = 4
	jitErrorLog     = 5
	jitErrorLogSize = 6
)

// ModuleLoad JIT-compiles PTX text; a failure carries the JIT's error log.
func (c *Context) ModuleLoad(src string) (cu.Module, error) {
	image := append([]byte(src), 0)
	info, errLog := make([]byte, 16<<10), make([]byte, 16<<10)
	opts := []int32{jitInfoLog, jitInfoLogSize, jitErrorLog, jitErrorLogSize}
	var pin runtime.Pinner
	defer pin.Unpin()
	for _, p := range []*byte{&image[0], &info[0], &errLog[0]} {
		pin.Pin(p)
	}
	vals := []uintptr{uintptr(unsafe.Pointer(&info[0])), uintptr(len(info)), uintptr(unsafe.Pointer(&errLog[0])), uintptr(len(errLog))}
	var m uintptr
	err := c.d.call("cuModuleLoadDataEx", c.d.f.moduleLoadDataEx, uintptr(unsafe.Pointer(&m)), uintptr(unsafe.Pointer(&image[0])),
		uintptr(len(opts)), uintptr(unsafe.Pointer(&opts[0])), uintptr(unsafe.Pointer(&vals[0])))
	if err != nil {
		var ce *cu.Error
		if errors.As(err, &ce) {
			ce.Detail = strings.TrimSpace(ce.Detail + "; JIT log: " + cString(errLog) + " " + cString(info))
		}
		return 0, err
	}
	return cu.Module(m), nil
}

// cString is the text of a NUL-terminated buffer.
func cString(b []byte) string {
	if i := strings.IndexByte(string(b), 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// Function is cuModuleGetFunction's.
func (c *Context) Function(m cu.Module, name string) (cu.Function, error) {
	n := append([]byte(name), 0)
	var f uintptr
	err := c.d.call("cuModuleGetFunction", c.d.f.moduleGetFunction, uintptr(unsafe.Pointer(&f)), uintptr(m), uintptr(unsafe.Pointer(&n[0])))
	if err != nil {
		var ce *cu.Error
		if errors.As(err, &ce) {
			ce.Detail = strings.TrimSpace(ce.Detail + "; kernel " + name)
		}
	}
	return cu.Function(f), err
}

// Launch queues f with the packed arguments; the driver copies them
// before cuLaunchKernel returns, so they are pinned only for the call.
func (c *Context) DoLaunch(f cu.Function, grid, block cu.Dim3, shared int, s cu.Stream, args *cu.Args) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := c.d.call("cuCtxSetCurrent", c.d.f.ctxSetCurrent, c.h); err != nil {
		return err
	}
	return c.Launch(f, grid, block, shared, s, args)
}

// Launch queues f on s (inside Do).
func (c *Context) Launch(f cu.Function, grid, block cu.Dim3, shared int, s cu.Stream, args *cu.Args) error {
	ptrs := args.Pointers()
	var pin runtime.Pinner
	defer pin.Unpin()
	var params uintptr
	if len(ptrs) > 0 {
		for _, p := range ptrs {
			pin.Pin(p)
		}
		pin.Pin(&ptrs[0])
		params = uintptr(unsafe.Pointer(&ptrs[0]))
	}
	return c.d.call("cuLaunchKernel", c.d.f.launch, uintptr(f),
		uintptr(grid.X), uintptr(grid.Y), uintptr(grid.Z), uintptr(block.X), uintptr(block.Y), uintptr(block.Z),
		uintptr(shared), uintptr(s), params, 0)
}

// maxDynamicShared is CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES.
const maxDynamicShared = 8

// SetMaxDynamicShared is cu.SharedSizer's: cuFuncSetAttribute of
// CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES (inside Do).
func (c *Context) SetMaxDynamicShared(f cu.Function, bytes int) error {
	if c.d.f.funcSetAttribute == 0 {
		return fmt.Errorf("cuda: the driver has no cuFuncSetAttribute: a kernel cannot take %d bytes of dynamic shared memory", bytes)
	}
	return c.d.call("cuFuncSetAttribute", c.d.f.funcSetAttribute, uintptr(f), maxDynamicShared, uintptr(bytes))
}

var _ cu.SharedSizer = (*Context)(nil)

// StreamCreate makes a non-blocking stream (it does not wait for the
// legacy default stream).
func (c *Context) StreamCreate() (cu.Stream, error) {
	const nonBlocking = 1
	var s uintptr
	err := c.d.call("cuStreamCreate", c.d.f.streamCreate, uintptr(unsafe.Pointer(&s)), nonBlocking)
	return cu.Stream(s), err
}

// StreamSynchronize waits for s.
func (c *Context) StreamSynchronize(s cu.Stream) error {
	return c.d.call("cuStreamSynchronize", c.d.f.streamSynchronize, uintptr(s))
}

// errorNotReady is CUDA_ERROR_NOT_READY: cuEventQuery's "not yet".
const errorNotReady = 600

// EventRecord makes an event without timing (CU_EVENT_DISABLE_TIMING)
// and records it on s (cu.Events).
func (c *Context) EventRecord(s cu.Stream) (cu.Event, error) {
	const disableTiming = 2
	var e uintptr
	if err := c.d.call("cuEventCreate", c.d.f.eventCreate, uintptr(unsafe.Pointer(&e)), disableTiming); err != nil {
		return 0, err
	}
	if err := c.d.call("cuEventRecord", c.d.f.eventRecord, e, uintptr(s)); err != nil {
		c.d.call("cuEventDestroy_v2", c.d.f.eventDestroy, e)
		return 0, err
	}
	return cu.Event(e), nil
}

// EventQuery reports whether the stream has passed e.
func (c *Context) EventQuery(e cu.Event) (bool, error) {
	r, _, _ := purego.SyscallN(c.d.f.eventQuery, uintptr(e))
	switch r {
	case 0:
		return true, nil
	case errorNotReady:
		return false, nil
	}
	return false, c.d.errorOf("cuEventQuery", int(r))
}

// EventDestroy frees e.
func (c *Context) EventDestroy(e cu.Event) error {
	return c.d.call("cuEventDestroy_v2", c.d.f.eventDestroy, uintptr(e))
}

var _ cu.Events = (*Context)(nil)

// TimedEventRecord makes an event that takes a timestamp (the default
// flags) and records it on s.
func (c *Context) TimedEventRecord(s cu.Stream) (cu.Event, error) {
	var e uintptr
	if err := c.d.call("cuEventCreate", c.d.f.eventCreate, uintptr(unsafe.Pointer(&e)), 0); err != nil {
		return 0, err
	}
	if err := c.d.call("cuEventRecord", c.d.f.eventRecord, e, uintptr(s)); err != nil {
		c.d.call("cuEventDestroy_v2", c.d.f.eventDestroy, e)
		return 0, err
	}
	return cu.Event(e), nil
}

// EventElapsed waits for end and returns the milliseconds from start to
// it, through cuEventElapsedTime_v2 where the driver has it.
func (c *Context) EventElapsed(start, end cu.Event) (float32, error) {
	elapsed, name := c.d.f.eventElapsedV2, "cuEventElapsedTime_v2"
	if elapsed == 0 {
		elapsed, name = c.d.f.eventElapsed, "cuEventElapsedTime"
	}
	if elapsed == 0 || c.d.f.eventSynchronize == 0 {
		return 0, fmt.Errorf("cuda: the driver (%s) has no event timing", strings.Join(c.d.files, ", "))
	}
	if err := c.d.call("cuEventSynchronize", c.d.f.eventSynchronize, uintptr(end)); err != nil {
		return 0, err
	}
	var ms float32
	if err := c.d.call(name, elapsed, uintptr(unsafe.Pointer(&ms)), uintptr(start), uintptr(end)); err != nil {
		return 0, err
	}
	return ms, nil
}

var _ cu.Timing = (*Context)(nil)
