package cuda

import (
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
	"github.com/eagerflow/eagerflow/device"
)

//go:embed ptx/*.ptx
var modules embed.FS

// Device is a GPU: gpu:<ordinal>, of kind device.GPU. Its memory is the
// GPU's; kernels run on one non-blocking stream in the order they are
// queued, and a read on the host waits for them.
type Device struct {
	name    string
	ordinal int
	drv     cu.Driver
	ctx     cu.Context
	s       cu.Stream
	info    cu.Info
	tf32    atomic.Bool // float32 GEMMs on TF32 tensor cores
	// dnnOff turns cuDNN's convolutions off (SetCuDNN); plans holds the
	// algorithm chosen per convolution pass (under mu).
	dnnOff atomic.Bool
	// noEpilogue is set once the context said it cannot run a GEMM's
	// epilogue (cu.ErrNoEpilogue): FusedMatMul's bias and Relu then run
	// as kernels after the GEMM.
	noEpilogue atomic.Bool
	// flashMode chooses attention's path: flashAuto, flashAlways or
	// flashNever (SetFlashAttention).
	flashMode atomic.Int32
	plans     map[planKey]cu.ConvPlan
	// filterWays holds each convolution's way to its filter gradient,
	// timed on first use (conv_tune.go; under mu); forceFilter, where
	// set, is the way every convolution takes (tests).
	filterWays  map[cu.Conv]filterWay
	forceFilter atomic.Uint32

	mu      sync.Mutex
	cache   map[int][]cu.Ptr // freed buffers by size class
	inUse   int              // bytes of live buffers
	peak    int              // the most inUse held since ResetPeak
	cached  int              // bytes in the cache
	staging []byte           // page-locked host buffer for copies
	host    hostPool         // page-locked blocks for swapped values
	mods    map[string]cu.Module
	funcs   map[funcKey]cu.Function
	// sharedLimits are the dynamic shared memory limits raised, by
	// kernel (launchShared).
	sharedLimits map[cu.Function]int
	// reclaimFn is d.reclaim made once: a method value per buffer would
	// allocate.
	reclaimFn func(block)
	// The index checks queued since the last synchronisation (checks.go),
	// under mu: their slots on the device, and the host buffer they are
	// read into.
	checkArea cu.Ptr
	checks    []indexCheck
	checkHost []byte
	// capturing is the recording in progress (capture.go), under mu;
	// afterCapture, the releases of recordings dropped during it, run at
	// its end.
	capturing    *graphPool
	afterCapture []func()
	// capturer is the goroutine capturing (goid.Current), under mu; other
	// goroutines' host work (allocations, copies to and from the host,
	// waits: a pipeline prefetching batches onto the device) waits on
	// captureEnded while a capture is in progress, and a capture begins
	// once hostWork, such work under way, is done (capture.go).
	capturer     int64
	hostWork     int
	captureEnded *sync.Cond
	// releasing is held by a release that waits for the stream and frees
	// memory (outsideCapture) from its check that no capture is in
	// progress to its end, and by a capture while it starts: the
	// collector's cleanup goroutine must not wait for the stream once a
	// capture has begun.
	releasing sync.Mutex
}

// buffer is GPU memory.
type buffer struct {
	dev   *Device
	ptr   cu.Ptr
	size  int
	class int
	pool  *graphPool // the recording whose memory it is (capture.go); nil for the device's
	refs  atomic.Int32
	// cleanup returns the memory to the cache should the buffer become
	// unreachable without Free (tensors whose Release was never called):
	// the safety net; Free stops it.
	cleanup runtime.Cleanup
}

// block is a buffer's memory as its cleanup returns it.
type block struct {
	ptr   cu.Ptr
	class int
	pool  *graphPool // the recording whose memory it is (capture.go); nil for the device's
}

func (b *buffer) Device() device.Device { return b.dev }
func (b *buffer) Size() int             { return b.size }
func (b *buffer) Refs() *atomic.Int32   { return &b.refs }

// open opens device ordinal of drv: its primary context and a stream.
func open(drv cu.Driver, ordinal int) (*Device, error) {
	info, err := drv.Device(ordinal)
	if err != nil {
		return nil, err
	}
	ctx, err := drv.Retain(ordinal)
	if err != nil {
		return nil, err
	}
	d := &Device{name: fmt.Sprintf("gpu:%d", ordinal), ordinal: ordinal, drv: drv, ctx: ctx, info: info,
		cache: map[int][]cu.Ptr{}, mods: map[string]cu.Module{}, funcs: map[funcKey]cu.Function{},
		host: hostPool{free: map[int][][]byte{}}, plans: map[planKey]cu.ConvPlan{}, filterWays: map[cu.Conv]filterWay{}}
	d.dnnOff.Store(dnnOffByEnv())
	if os.Getenv(envConvTuning) == "0" {
		d.forceFilter.Store(uint32(filterByDNN))
	}
	d.reclaimFn = d.reclaim
	d.captureEnded = sync.NewCond(&d.mu)
	if err := ctx.Do(func() (err error) { d.s, err = ctx.StreamCreate(); return }); err != nil {
		return nil, err
	}
	printCosts(ctx, d.name, os.Getenv("EAGERFLOW_DEBUG"), os.Stderr)
	return d, nil
}

// printCosts has the emulator print each launch's counts to w (package
// emu's Profile: instructions per thread, memory sectors per warp access
// and their efficiency, integer divisions, divergent branches) where
// debug, EAGERFLOW_DEBUG's value, names kernelcost. A GPU counts nothing:
// Nsight Compute measures it.
func printCosts(ctx cu.Context, name, debug string, w io.Writer) {
	e, ok := ctx.(*emu.Context)
	if !ok || !slices.Contains(strings.FieldsFunc(debug, func(r rune) bool { return r == ',' || r == ' ' }), "kernelcost") {
		return
	}
	e.SetProfiler(func(p emu.Profile) { fmt.Fprintf(w, "eagerflow: %s: %v\n", name, p) })
}

// Name is "gpu:<ordinal>" (or OpenAs's name).
func (d *Device) Name() string { return d.name }

// String is the device's name, so that printing a device shows "gpu:0".
func (d *Device) String() string { return d.name }

// Kind is device.GPU.
func (d *Device) Kind() device.Kind { return device.GPU }

// Info describes the GPU.
func (d *Device) Info() cu.Info { return d.info }

// Driver says what was loaded.
func (d *Device) Driver() string { return d.drv.Name() }

// classOf is the size class of n bytes: powers of two from 256 bytes.
func classOf(n int) int {
	if n <= 256 {
		return 8
	}
	return bits.Len(uint(n - 1))
}

// Alloc returns a buffer of at least nbytes, from the cache of freed
// buffers of its size class when one is there. Out of memory empties the
// cache and tries once more; then the error names the request and the
// memory in use.
func (d *Device) Alloc(nbytes int) (device.Buffer, error) {
	if err := device.CheckAlloc(d, nbytes); err != nil {
		return nil, err
	}
	class := classOf(nbytes)
	size := 1 << class
	d.mu.Lock()
	defer d.mu.Unlock()
	d.awaitOthersCaptureLocked()
	if d.capturing != nil { // the recording's memory (capture.go)
		return d.poolAllocLocked(d.capturing, nbytes)
	}
	if free := d.cache[class]; len(free) > 0 {
		p := free[len(free)-1]
		d.cache[class] = free[:len(free)-1]
		d.cached -= size
		d.use(size)
		return d.track(&buffer{dev: d, ptr: p, size: nbytes, class: class}), nil
	}
	var p cu.Ptr
	err := d.ctx.Do(func() (err error) { p, err = d.ctx.MemAlloc(size, d.s); return })
	var ce *cu.Error
	if errors.As(err, &ce) && ce.Code == cu.ErrorOutOfMemory {
		d.emptyCacheLocked()
		err = d.ctx.Do(func() (err error) { p, err = d.ctx.MemAlloc(size, d.s); return })
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %d bytes with %d in use: %v", device.ErrOutOfMemory, d.name, nbytes, d.inUse, err)
	}
	d.use(size)
	return d.track(&buffer{dev: d, ptr: p, size: nbytes, class: class}), nil
}

// use counts size more bytes in use (d.mu held).
func (d *Device) use(size int) {
	d.inUse += size
	d.peak = max(d.peak, d.inUse)
}

// MemoryStats are a GPU's memory counts in bytes, by the size classes
// buffers are allocated in (powers of two from 256 bytes): held by live
// buffers, the most they held since the last ResetPeak, and held by the
// cache of freed buffers for reuse.
type MemoryStats struct{ InUse, Peak, Cached int }

// MemoryStats returns the device's memory counts.
func (d *Device) MemoryStats() MemoryStats {
	d.mu.Lock()
	defer d.mu.Unlock()
	return MemoryStats{InUse: d.inUse, Peak: d.peak, Cached: d.cached}
}

// ResetPeak starts the peak count afresh from the memory in use now.
func (d *Device) ResetPeak() {
	d.mu.Lock()
	d.peak = d.inUse
	d.mu.Unlock()
}

// track sets b's cleanup.
func (d *Device) track(b *buffer) *buffer {
	b.cleanup = runtime.AddCleanup(b, d.reclaimFn, block{ptr: b.ptr, class: b.class, pool: b.pool})
	return b
}

// reclaim returns the memory of a buffer that was never freed to the
// cache. The stream's order keeps the work queued on it before its next
// user, as Free's does.
func (d *Device) reclaim(m block) {
	d.mu.Lock()
	if m.pool != nil { // back to its recording
		m.pool.free[m.class] = append(m.pool.free[m.class], m.ptr)
		d.mu.Unlock()
		return
	}
	d.cache[m.class] = append(d.cache[m.class], m.ptr)
	d.inUse -= 1 << m.class
	d.cached += 1 << m.class
	d.mu.Unlock()
}

// emptyCacheLocked frees every cached buffer.
func (d *Device) emptyCacheLocked() {
	_ = d.ctx.Do(func() error {
		for class, free := range d.cache {
			for _, p := range free {
				_ = d.ctx.MemFree(p, d.s)
			}
			delete(d.cache, class)
		}
		return d.streamSync()
	})
	d.cached = 0
}

// Free returns b to the cache of its size class; the stream's order keeps
// work queued on it before the next user.
func (d *Device) Free(b device.Buffer) {
	gb, ok := b.(*buffer)
	if !ok || gb.dev != d {
		panic(fmt.Sprintf("cuda: %s freeing a buffer of %s", d.name, b.Device().Name()))
	}
	gb.cleanup.Stop()
	d.reclaim(block{ptr: gb.ptr, class: gb.class, pool: gb.pool})
}

// MaxAlloc is the GPU's memory.
func (d *Device) MaxAlloc() int { return d.info.Memory }

// stage returns a page-locked host buffer of n bytes; d.mu must be held.
func (d *Device) stageLocked(n int) ([]byte, error) {
	if len(d.staging) >= n {
		return d.staging[:n], nil
	}
	err := d.ctx.Do(func() error {
		if d.staging != nil {
			if err := d.ctx.MemFreeHost(d.staging); err != nil {
				return err
			}
			d.staging = nil
		}
		b, err := d.ctx.MemAllocHost(max(n, 1<<20))
		d.staging = b
		return err
	})
	if err != nil {
		return nil, err
	}
	return d.staging[:n], nil
}

func bufOf(b device.Buffer, d *Device, what string) (*buffer, error) {
	gb, ok := b.(*buffer)
	if !ok || gb.dev != d {
		return nil, fmt.Errorf("%w: %s: the %s is on %s", device.ErrCopy, d.name, what, b.Device().Name())
	}
	return gb, nil
}

// copyBufs returns a copy's destination and source as this device's
// buffers, or the ErrCopy naming the one that is not.
func copyBufs(d *Device, dst, src device.Buffer) (db, sb *buffer, err error) {
	if db, err = bufOf(dst, d, "destination"); err != nil {
		return nil, nil, err
	}
	sb, err = bufOf(src, d, "source")
	return db, sb, err
}

// CopyToHost copies len(dst) bytes from src at byte srcOff, after the work
// queued before it.
func (d *Device) CopyToHost(dst []byte, src device.Buffer, srcOff int) error {
	defer d.hostWorkBegins()()
	return d.staged(src, "source", len(dst), func(host []byte, p cu.Ptr) error {
		if err := d.ctx.MemcpyDtoH(host, p+cu.Ptr(srcOff), d.s); err != nil {
			return err
		}
		// The index checks of the kernels queued before are read in the
		// same wait (a loss read and its labels' check: one round trip).
		checks, err := d.queueCheckReadsLocked()
		if err != nil {
			return err
		}
		if err := d.streamSync(); err != nil {
			return err
		}
		copy(dst, host)
		if checks == nil {
			return nil
		}
		return d.decodeChecksLocked(checks) // a bad index found by a kernel queued before
	})
}

// CopyFromHost copies src into dst at byte dstOff: src's bytes go to a
// page-locked block at once and the copy to the device is queued behind
// the stream's work, the block free again once the stream has passed it
// (the next wait for the stream), so the host does not wait (a batch, a
// tensor made on the host, every step). While a capture records, and
// for copies over maxPending bytes, it waits for the copy instead.
func (d *Device) CopyFromHost(dst device.Buffer, dstOff int, src []byte) error {
	defer d.hostWorkBegins()()
	if d.Capturing() || len(src) > maxPending {
		return d.copyFromHostWaiting(dst, dstOff, src)
	}
	gb, err := bufOf(dst, d, "destination")
	if err != nil || len(src) == 0 {
		return err
	}
	if d.pendingFull() {
		if err := d.ctx.Do(d.streamSync); err != nil {
			return err
		}
	}
	block, err := d.hostBlock(len(src))
	if err != nil {
		return err
	}
	copy(block, src)
	err = d.ctx.Do(func() error { return d.ctx.MemcpyHtoD(gb.ptr+cu.Ptr(dstOff), block[:len(src)], d.s) })
	d.retire(block)
	return err
}

// copyFromHostWaiting is CopyFromHost through the staging buffer, waiting
// for the copy.
func (d *Device) copyFromHostWaiting(dst device.Buffer, dstOff int, src []byte) error {
	return d.staged(dst, "destination", len(src), func(host []byte, p cu.Ptr) error {
		copy(host, src)
		if err := d.ctx.MemcpyHtoD(p+cu.Ptr(dstOff), host, d.s); err != nil {
			return err
		}
		// The staging buffer is reused by the next copy: wait for this one.
		return d.streamSync()
	})
}

// staged runs fn, in the context, with n bytes of the page-locked staging
// buffer and the device address of b (what names b in errors); the
// staging buffer is d's alone while fn runs.
func (d *Device) staged(b device.Buffer, what string, n int, fn func(host []byte, p cu.Ptr) error) error {
	gb, err := bufOf(b, d, what)
	if err != nil || n == 0 {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	host, err := d.stageLocked(n)
	if err != nil {
		return err
	}
	return d.ctx.Do(func() error { return fn(host, gb.ptr) })
}

// Copy copies a strided box of elements between buffers of this device
// (device.Device.Copy); from any other device it returns ErrCopy and the
// caller stages through the host.
func (d *Device) Copy(dst device.Buffer, dOff int, dSt []int, src device.Buffer, sOff int, sSt []int, shape []int, esize int) error {
	db, sb, err := copyBufs(d, dst, src)
	if err != nil {
		return err
	}
	n := 1
	for _, s := range shape {
		n *= s
	}
	if n == 0 {
		return nil
	}
	if contiguous(shape, dSt) && contiguous(shape, sSt) {
		return d.ctx.Do(func() error {
			return d.ctx.MemcpyDtoD(db.ptr+cu.Ptr(dOff*esize), sb.ptr+cu.Ptr(sOff*esize), n*esize, d.s)
		})
	}
	if p := planTranspose(shape, dSt, sSt, esize); p.planned {
		return d.transpose(p, db.ptr, sb.ptr, dOff, sOff)
	}
	if esize == 1 || esize == 2 || esize == 4 || esize == 8 {
		shape, dSt, sSt, dOff, sOff, esize = widenRuns(shape, dSt, sSt, dOff, sOff, esize, uint64(db.ptr), uint64(sb.ptr))
	}
	name := map[int]string{1: "copy_b8", 2: "copy_b16", 4: "copy_b32", 8: "copy_b64"}[esize]
	if name == "" || len(shape) > kernels.MaxRank {
		return fmt.Errorf("cuda: %s: a strided copy of %d-byte elements, rank %d", d.name, esize, len(shape))
	}
	n = 1
	for _, s := range shape {
		n *= s
	}
	g := kernels.Geometry(shape, [][]int{dSt, sSt}, []int{dOff, sOff})
	return d.launch("copy", name, n, newArgs().Ptr(db.ptr).Ptr(sb.ptr).U64(uint64(n)).Bytes(g, 8))
}

// widenRuns recasts a strided copy whose innermost runs are contiguous on
// both sides (the rows of a head split's [N T H D] -> [N H T D], a
// slice of whole rows) as a copy of wider elements, up to 8 bytes: k
// elements of esize become one where the runs, the other strides and
// both offsets hold whole groups of k and both addresses align to
// k·esize. A warp then moves 256 bytes where it moved 64 (2-byte
// elements), and k times fewer threads compute their offsets. It returns
// the copy as it was where no k above 1 fits.
func widenRuns(shape, dSt, sSt []int, dOff, sOff, esize int, dPtr, sPtr uint64) ([]int, []int, []int, int, int, int) {
	inner := len(shape) - 1 // the innermost dimension of more than one element
	for inner >= 0 && shape[inner] == 1 {
		inner--
	}
	if inner < 0 || dSt[inner] != 1 || sSt[inner] != 1 { // no run to widen (a broadcast, a transpose)
		return shape, dSt, sSt, dOff, sOff, esize
	}
	merged, st := kernels.MergeDims(shape, [][]int{dSt, sSt})
	r := len(merged)
	if r == 0 || st[0][r-1] != 1 || st[1][r-1] != 1 {
		return shape, dSt, sSt, dOff, sOff, esize
	}
	k := 8 / esize
	for ; k > 1; k /= 2 {
		fits := merged[r-1]%k == 0 && dOff%k == 0 && sOff%k == 0 &&
			(dPtr+uint64(dOff*esize))%uint64(k*esize) == 0 && (sPtr+uint64(sOff*esize))%uint64(k*esize) == 0
		for i := range r - 1 {
			fits = fits && st[0][i]%k == 0 && st[1][i]%k == 0
		}
		if fits {
			break
		}
	}
	if k == 1 {
		return shape, dSt, sSt, dOff, sOff, esize
	}
	wide := slices.Clone(merged)
	wide[r-1] /= k
	ds, ss := make([]int, r), make([]int, r)
	for i := range r {
		ds[i], ss[i] = st[0][i]/k, st[1][i]/k
	}
	ds[r-1], ss[r-1] = 1, 1
	return wide, ds, ss, dOff / k, sOff / k, esize * k
}

// contiguous reports whether strides st are shape's row-major ones.
func contiguous(shape, st []int) bool {
	want := 1
	for i := len(shape) - 1; i >= 0; i-- {
		if shape[i] != 1 && st[i] != want {
			return false
		}
		want *= shape[i]
	}
	return true
}

// Fill sets n elements of len(v) bytes from element off of dst to v.
func (d *Device) Fill(dst device.Buffer, off, n int, v []byte) error {
	db, err := bufOf(dst, d, "destination")
	if err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	p := db.ptr + cu.Ptr(off*len(v))
	switch len(v) {
	case 1:
		return d.ctx.Do(func() error { return d.ctx.MemsetD8(p, v[0], n, d.s) })
	case 2:
		w := uint32(v[0]) | uint32(v[1])<<8
		return d.launch("copy", "fill_b16", n, newArgs().Ptr(p).U64(uint64(n)).U32(w))
	case 4:
		w := uint32(v[0]) | uint32(v[1])<<8 | uint32(v[2])<<16 | uint32(v[3])<<24
		return d.ctx.Do(func() error { return d.ctx.MemsetD32(p, w, n, d.s) })
	case 8:
		var w uint64
		for i := 7; i >= 0; i-- {
			w = w<<8 | uint64(v[i])
		}
		return d.launch("copy", "fill_b64", n, newArgs().Ptr(p).U64(uint64(n)).U64(w))
	}
	return fmt.Errorf("cuda: %s: fill with %d-byte elements", d.name, len(v))
}

// Synchronize waits for the work queued on the stream.
func (d *Device) Synchronize() error {
	defer d.hostWorkBegins()()
	if err := d.ctx.Do(d.streamSync); err != nil { // without d.mu: a wait may be long
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.reportChecksLocked()
}

// function returns a kernel of family, loading it on first use as a
// module of its own (modules.go).
func (d *Device) function(family, name string) (cu.Function, error) {
	d.mu.Lock()
	f, ok := d.funcs[funcKey{family, name}]
	d.mu.Unlock()
	if ok { // loaded: no closure, no key built
		return f, nil
	}
	return d.loadFunction(funcKey{family, name}, family+"/"+name, func() (string, error) { return kernelModule(family, name) })
}

// compiled returns kernel name of the PTX module src made at run time (a
// fused chain), loading it on first use; modules are kept by their text's
// hash. The driver compiles PTX for the device (and keeps its own cache
// of compiled PTX on disk, CUDA_CACHE_PATH).
func (d *Device) compiled(src, name string) (cu.Function, error) {
	sum := sha256.Sum256([]byte(src))
	key := "run-time/" + hex.EncodeToString(sum[:])
	return d.loadFunction(funcKey{key, name}, key, func() (string, error) { return src, nil })
}

// loadFunction returns the kernel fkey names, of the module known as key,
// loading the module from src on first use.
func (d *Device) loadFunction(fkey funcKey, key string, src func() (string, error)) (cu.Function, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if f, ok := d.funcs[fkey]; ok {
		return f, nil
	}
	err := d.ctx.Do(func() error {
		m, ok := d.mods[key]
		if !ok {
			text, err := src()
			if err != nil {
				return err
			}
			if m, err = d.ctx.ModuleLoad(text); err != nil {
				return err
			}
			d.mods[key] = m
		}
		f, err := d.ctx.Function(m, fkey.name)
		if err != nil {
			return err
		}
		d.funcs[fkey] = f
		return nil
	})
	if err != nil {
		return 0, err
	}
	return d.funcs[fkey], nil
}

// funcKey names a loaded kernel: its module's key and its name.
type funcKey struct{ module, name string }

// blockSize is the threads per block of the elementwise kernels.
const blockSize = 256

// launch queues kernel name of family over n elements (a grid-stride
// loop: at most a few blocks per multiprocessor).
func (d *Device) launch(family, name string, n int, args *cu.Args) error {
	return d.launchBlocks(family, name, d.gridFor(n), blockSize, args)
}

// launchVector is launch for the elementwise kernels of full operands,
// whose threads take lanes elements at a time (kernels.Lanes of the
// operands' dtypes): a thread per lanes elements.
func (d *Device) launchVector(family, name string, n, lanes int, args *cu.Args) error {
	return d.launchBlocks(family, name, d.gridFor((n+lanes-1)/lanes), blockSize, args)
}

// gridFor is the blocks of a grid-stride launch over n elements.
func (d *Device) gridFor(n int) int { return min((n+blockSize-1)/blockSize, max(d.info.SMs, 1)*32) }

// launchBlocks queues kernel name of family over grid blocks of block
// threads.
func (d *Device) launchBlocks(family, name string, grid, block int, args *cu.Args) error {
	f, err := d.function(family, name)
	if err != nil {
		return err
	}
	return d.launchFunction(f, grid, block, args)
}

// defaultShared is the dynamic shared memory a kernel may take without
// raising its limit: 48 KB, less its static bytes.
const defaultShared = 48 << 10

// launchShared is launchBlocks with shared bytes of dynamic shared
// memory (a kernel that declares an .extern .shared array); beyond the
// default 48 KB it first raises the kernel's limit to shared, once
// (cu.SharedSizer), which fails on a device without that much.
func (d *Device) launchShared(family, name string, grid, block, shared int, args *cu.Args) error {
	f, err := d.function(family, name)
	if err != nil {
		return err
	}
	if shared > defaultShared {
		d.mu.Lock()
		raised := d.sharedLimits[f] >= shared
		d.mu.Unlock()
		if !raised {
			sz, ok := d.ctx.(cu.SharedSizer)
			if !ok {
				return fmt.Errorf("cuda: %s/%s takes %d bytes of dynamic shared memory, and the driver cannot raise a kernel's limit", family, name, shared)
			}
			if err := d.ctx.Do(func() error { return sz.SetMaxDynamicShared(f, shared) }); err != nil {
				return fmt.Errorf("cuda: %s/%s: %w", family, name, err)
			}
			d.mu.Lock()
			if d.sharedLimits == nil {
				d.sharedLimits = map[cu.Function]int{}
			}
			d.sharedLimits[f] = shared
			d.mu.Unlock()
		}
	}
	return d.launchWith(f, grid, block, shared, args)
}

// launchFunction queues f over grid blocks of block threads; args go
// back to newArgs's pool (the launch has copied them, as cuLaunchKernel
// and the emulator do).
func (d *Device) launchFunction(f cu.Function, grid, block int, args *cu.Args) error {
	return d.launchWith(f, grid, block, 0, args)
}

// launchWith is launchFunction with shared bytes of dynamic shared
// memory.
func (d *Device) launchWith(f cu.Function, grid, block, shared int, args *cu.Args) error {
	err := d.ctx.DoLaunch(f, cu.Dim3{X: grid, Y: 1, Z: 1}, cu.Dim3{X: block, Y: 1, Z: 1}, shared, d.s, args)
	freeArgs(args)
	return err
}

// argsPool holds launches' argument blocks, so that a launch allocates
// none.
var argsPool = sync.Pool{New: func() any { return new(cu.Args) }}

// newArgs returns an empty argument block for one launch, which takes it
// back (launchFunction).
func newArgs() *cu.Args { return argsPool.Get().(*cu.Args) }

// freeArgs returns args, which nothing reads again, to the pool.
func freeArgs(args *cu.Args) {
	args.Reset()
	argsPool.Put(args)
}
