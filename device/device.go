package device

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Kind is the family of a device: what kernels it runs. CPU (the zero
// value) and GPU are built in; backends register kinds of their own with
// RegisterKind; every device of a kind runs the kernels registered for
// it.
type Kind uint8

const (
	// CPU is host memory and host cores.
	CPU Kind = iota
	// GPU is an NVIDIA accelerator with its own memory.
	GPU
)

var kinds = struct {
	sync.RWMutex
	names []string
}{names: []string{"cpu", "gpu"}}

// RegisterKind returns the kind named name, registering it the first time
// (for a backend of a new family of devices).
func RegisterKind(name string) Kind {
	kinds.Lock()
	defer kinds.Unlock()
	for i, n := range kinds.names {
		if n == name {
			return Kind(i)
		}
	}
	if len(kinds.names) > 255 {
		panic("device: too many device kinds")
	}
	kinds.names = append(kinds.names, name)
	return Kind(len(kinds.names) - 1)
}

// String returns the kind's name: "cpu", "gpu", or a registered one.
func (k Kind) String() string {
	kinds.RLock()
	defer kinds.RUnlock()
	if int(k) < len(kinds.names) {
		return kinds.names[k]
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// Sentinel errors, matched with errors.Is.
var (
	ErrUnknownDevice = errors.New("device: unknown device")
	ErrOutOfMemory   = errors.New("device: out of memory")
	ErrCopy          = errors.New("device: copy failed")
)

// Buffer is a block of device memory. Its contents are reached through the
// owning device's copy methods, or, for the CPU, through HostBuffer.Bytes.
type Buffer interface {
	// Device returns the device that owns the buffer.
	Device() Device
	// Size returns the usable size in bytes.
	Size() int
	// Refs is the buffer's reference count. Package tensor keeps it (one per
	// tensor or view using the buffer) and frees the buffer at zero.
	Refs() *atomic.Int32
}

// Device owns memory and runs kernels. A device may run asynchronously:
// Copy, Fill and the kernels of its backend may queue work and return,
// provided work runs in the order queued; CopyToHost returns only once the
// bytes it copies are final (reading a value on the host synchronises),
// and Synchronize waits for everything queued.
type Device interface {
	// Name is "<kind>:<ordinal>", e.g. "cpu:0".
	Name() string
	Kind() Kind
	// Alloc returns a buffer of at least nbytes bytes. The contents are
	// unspecified. It returns an error wrapping ErrOutOfMemory on failure.
	Alloc(nbytes int) (Buffer, error)
	// Free returns a buffer to the device's cache. The buffer must not be
	// used afterwards. Freeing a buffer of another device panics.
	Free(b Buffer)
	// CopyToHost copies len(dst) bytes starting at byte srcOff of src,
	// after the work queued before it that writes src.
	CopyToHost(dst []byte, src Buffer, srcOff int) error
	// CopyFromHost copies src into dst starting at byte dstOff.
	CopyFromHost(dst Buffer, dstOff int, src []byte) error
	// Copy copies a box of elements of esize bytes from src to dst, where
	// element (i0, i1, ...) of shape is read at sOff + Σ i_k·sSt[k] and
	// written at dOff + Σ i_k·dSt[k] (offsets and strides count elements;
	// strides may be negative). dst is this device's; src is this
	// device's or one it reads directly (each CPU device reads the
	// others'); for any other src it returns an error wrapping ErrCopy and
	// the caller stages the data through the host. A layout change, a
	// copy between buffers and a copy between devices are all Copy.
	Copy(dst Buffer, dOff int, dSt []int, src Buffer, sOff int, sSt []int, shape []int, esize int) error
	// Fill sets n elements of len(v) bytes, from element off of dst on, to
	// the element v.
	Fill(dst Buffer, off, n int, v []byte) error
	// Synchronize waits until all work queued on the device is done.
	Synchronize() error
}

// Limited is a device that knows the largest buffer it can give.
type Limited interface {
	MaxAlloc() int
}

// CheckAlloc returns an error wrapping ErrOutOfMemory when d cannot give a
// buffer of nbytes bytes (negative, or beyond its MaxAlloc), before
// anything is allocated; nil otherwise.
func CheckAlloc(d Device, nbytes int) error {
	if nbytes < 0 {
		return fmt.Errorf("%w: negative size %d on %s", ErrOutOfMemory, nbytes, d.Name())
	}
	if l, ok := d.(Limited); ok && nbytes > l.MaxAlloc() {
		return fmt.Errorf("%w: %d bytes asked of %s, which gives at most %d (its memory, or a limit on it)", ErrOutOfMemory, nbytes, d.Name(), l.MaxAlloc())
	}
	return nil
}

var registry struct {
	sync.RWMutex
	byName map[string]Device
}

var defaultDevice atomic.Pointer[Device]

func init() {
	registry.byName = map[string]Device{}
	hostCPU, secondCPU = newCPU(0), newCPU(1)
	Register(hostCPU)
	Register(secondCPU)
	var d Device = hostCPU
	defaultDevice.Store(&d)
}

// Register makes a device findable by Lookup under its name. Registering a
// second device with the same name replaces the first.
func Register(d Device) {
	if d == nil {
		panic("device: Register of a nil device")
	}
	name := d.Name()
	registry.Lock()
	defer registry.Unlock()
	registry.byName[name] = d
}

// Lookup returns the device named name ("cpu:0", "gpu:0", ...).
func Lookup(name string) (Device, error) {
	registry.RLock()
	d, ok := registry.byName[name]
	registry.RUnlock()
	if !ok {
		var known []string
		for _, d := range Devices() {
			known = append(known, d.Name())
		}
		return nil, fmt.Errorf("%w %q (registered: %s)", ErrUnknownDevice, name, strings.Join(known, ", "))
	}
	return d, nil
}

// Devices returns every registered device, ordered by name.
func Devices() []Device {
	registry.RLock()
	out := make([]Device, 0, len(registry.byName))
	for _, d := range registry.byName {
		out = append(out, d)
	}
	registry.RUnlock()
	slices.SortFunc(out, func(a, b Device) int { return strings.Compare(a.Name(), b.Name()) })
	return out
}

// Host returns the CPU device "cpu:0".
func Host() *CPUDevice { return hostCPU }

// SecondCPU returns "cpu:1": another CPU device, with buffers and workers
// of its own, so that placement on two devices and copies between them are
// exercised (and tested) without a GPU. Its buffers are host memory, which
// both CPU devices read.
func SecondCPU() *CPUDevice { return secondCPU }

// Default returns the device new tensors are created on (initially cpu:0).
func Default() Device { return *defaultDevice.Load() }

// SetDefault makes d the default device for the whole process and returns a
// function that restores the previous default:
//
//	defer device.SetDefault(gpu)()
func SetDefault(d Device) (restore func()) {
	prev := defaultDevice.Swap(&d)
	return func() { defaultDevice.Store(prev) }
}

// RandomDist is a distribution a RandomFiller draws from: Uniform (the
// zero value, in [A, B)), Normal (standard normal) or Bernoulli (1 with
// probability A).
type RandomDist uint8

// The distributions of the tensor package's random constructors.
const (
	Uniform   RandomDist = iota // in [A, B)
	Normal                      // standard normal (Box-Muller over uniform pairs)
	Bernoulli                   // 1 (true) with probability A, else 0
)

// RandomDraw is one draw from the tensor package's counter-based stream
// (tensor.RNG, Philox4x32-10): its key, the first 128-bit block the draw
// reserved, the distribution and its parameters, and the element type by
// its tensor.DType name ("float32", ...).
type RandomDraw struct {
	Key     [2]uint32
	Counter uint64
	Dist    RandomDist
	A, B    float64
	DType   string
}

// RandomFiller is a device that computes random tensors itself, the same
// numbers as the host computes from the same stream (tensor.RNG uses it
// where the tensor is made on such a device).
type RandomFiller interface {
	// FillRandom writes n elements of the draw to dst.
	FillRandom(dst Buffer, n int, r RandomDraw) error
}

// Capturer is a device that records the work queued on it and replays
// the record with one launch (a GPU, through CUDA graphs): what a traced
// function queues on each call, kernel by kernel, then costs the device
// one launch.
type Capturer interface {
	// Capture runs fn while the device records the work fn queues instead
	// of running it; the memory fn allocates, and frees, stays the
	// recording's, so that every replay finds it where the record says. A
	// wait for the device inside fn (a read of a value) cannot be
	// recorded: Capture then returns an error wrapping ErrCapture, and no
	// work has run. fn's own error is returned as it is. The buffers the
	// recorded work uses that are not the recording's (its inputs,
	// weights) must stay allocated while it is replayed: keep their
	// tensors.
	Capture(fn func() error) (Recording, error)
}

// LoopCapturer is a Capturer whose recordings hold loops and branches
// that run on the device (a GPU: CUDA graphs' conditional WHILE and IF
// nodes, CUDA 12.4 and later), so that a loop whose trip count its values
// decide, or a branch they choose, replays without waiting for the host.
type LoopCapturer interface {
	Capturer
	// CaptureWhile, called inside Capture's fn, records a loop: the work
	// body queues is recorded once and replayed, in the recording, while
	// the predicate holds. pred is the buffer of a Bool scalar, read when
	// the loop is reached (after the work queued before it); the buffer
	// body returns is read after each pass. Loops nest. Where the device
	// cannot record the loop, CaptureWhile returns an error wrapping
	// ErrCapture, and the capture must be abandoned (Capture's fn returns
	// the error); body's own error is returned as it is.
	CaptureWhile(pred Buffer, body func() (Buffer, error)) error
	// CaptureIf, called as CaptureWhile, records a branch: the work body
	// queues runs, in the recording, where the Bool scalar at pred holds
	// when the branch is reached (where it does not, with negate). Its
	// errors are CaptureWhile's.
	CaptureIf(pred Buffer, negate bool, body func() error) error
}

// PositionCopier is a device that copies a box at positions it reads in
// its own memory when the copy runs, not on the host (a GPU: a recorded
// loop's gradient stacks, pushed and popped at a count the device keeps).
type PositionCopier interface {
	// CopyAt is Copy (the box shape of elements of esize bytes, from src
	// with strides sSt to dst with strides dSt, both from offset 0) with
	// the destination's offset (toDst) or the source's moved by
	// Σ_d clamp(at[d], 0, bounds[d])·moved[d], at the buffer of an Int64
	// vector of len(bounds) elements on this device.
	CopyAt(dst Buffer, dSt []int, src Buffer, sSt []int, shape []int, esize int, at Buffer, toDst bool, bounds, moved []int) error
	// AddAt adds delta to the Int64 at the start of at, on the device, in
	// the order of its other work (a stack's count).
	AddAt(at Buffer, delta int64) error
}

// LimitCounter is a PositionCopier whose counts can outgrow the buffers
// they index (a recorded loop gradient's stack whose loop has no bound:
// its pushes past the buffer's end are clamped onto its last element by
// CopyAt, and counted here, so that the host learns the values were lost
// and how deep the stack went).
type LimitCounter interface {
	// AddAtLimit is AddAt that, where the new count passes limit, raises
	// the Int64 at peak to the count and sets the Bool at over, on the
	// device, in the order of its other work.
	AddAtLimit(at Buffer, delta, limit int64, peak, over Buffer) error
}

// CaptureState is a Capturer that says whether it records now: memory
// allocated meanwhile is the recording's (freed with it), so a cache of
// lasting buffers (package ops' constants) makes none then.
type CaptureState interface {
	Capturing() bool
}

// Recording is work a Capturer recorded.
type Recording interface {
	// Replay queues the recorded work again: the same kernels and copies
	// on the same buffers, whatever they hold then.
	Replay() error
	// Alloc returns n bytes of the recording's memory (the buffers a
	// replay's inputs are copied into), kept with it.
	Alloc(n int) (Buffer, error)
	// Release frees the recording and its memory, once the work queued
	// before is done; its buffers must not be used after.
	Release()
}

// ErrCapture is the error of work a Capturer cannot record.
var ErrCapture = errors.New("device: the work cannot be captured")

// Timer is a device whose queue of work can be timed (a GPU, through
// CUDA events): Mark queues a mark behind the work queued so far; Between
// waits until the device has passed b and returns its time from a to b;
// Forget frees a mark. Package profile times each op's device work so.
type Timer interface {
	Mark() (Mark, error)
	Between(a, b Mark) (time.Duration, error)
	Forget(m Mark)
}

// Mark is a point in a Timer's queue.
type Mark uint64

// Stepper is a device that takes an optimizer's step over many tensors
// in place at once (a GPU: one launch for a whole model, where the step
// written in ops launches several kernels a variable). Each rule's formula
// is its ops parameters' (ops.AdamParams, ops.MomentumParams,
// ops.RMSPropParams; backend/cpu's in-place kernels on the host), to the
// bit.
type Stepper interface {
	// Step updates each tensor's W and slots from its G by s.Rule; elem
	// is the element size (4: float32, 8: float64), a tensor's Half the
	// format of its G and Copy. It fails, changing nothing, on a rule or
	// format it does not take, or buffers of another device or too small
	// for N elements.
	Step(elem int, ts []StepTensor, s StepSettings) error
}

// StepRecorder is a Stepper whose steps a recording (Capturer) can hold:
// a step that reads its constants from device memory when it runs, so
// that each replay takes the step count and learning rate the host wrote
// there before it.
type StepRecorder interface {
	Stepper
	// StepAt queues Step's update of ts by s.Rule (and s's structure:
	// Nesterov, Momentum above 0), reading the constants, when it runs,
	// from consts, a buffer of this device of at least StepConstBytes
	// bytes, which SetStepConstants fills. It fails as Step does.
	StepAt(elem int, ts []StepTensor, s StepSettings, consts Buffer) error
	// SetStepConstants queues the write of s's constants into consts,
	// ordered with the device's other work, without waiting for it.
	SetStepConstants(elem int, s StepSettings, consts Buffer) error
}

// StepConstBytes is the size of a StepRecorder's constants buffer.
const StepConstBytes = 80

// StepRule is the formula of an optimizer's step, and the slots each
// tensor of it has.
type StepRule uint8

const (
	// StepAdam is Adam's (AdamW's with a weight decay): slots the first
	// and second moments.
	StepAdam StepRule = iota
	// StepMomentum is SGD with momentum (Nesterov's where set): slot the
	// velocity.
	StepMomentum
	// StepRMSProp is RMSProp: slots the mean square and, where Momentum
	// is above 0, the momentum (nil otherwise).
	StepRMSProp
)

// StepTensor is one variable of a step: its value W, its gradient G and
// the rule's slots, each N elements from the buffer's start. Where Half
// is set (a mixed-precision step), G holds N elements of that 2-byte
// format, widened exactly, and Copy, when not nil, receives W's new
// value rounded to it (to nearest even, as a Cast rounds): the half copy
// the next forward pass reads.
type StepTensor struct {
	W, G  Buffer
	Slots [2]Buffer
	N     int
	Half  StepHalf
	Copy  Buffer
}

// StepHalf is the format of a mixed-precision step's gradients and
// copies: none (the value's dtype), bfloat16 or float16.
type StepHalf uint8

const (
	StepNoHalf StepHalf = iota
	StepBFloat16
	StepFloat16
)

// StepSettings are a step's rule and constants: the fields of the rule's
// ops parameters (Adam: LR, Beta1, Beta2, the bias corrections C1 and C2,
// Eps, WeightDecay; momentum: LR, Momentum, Nesterov; RMSProp: LR, Rho,
// Eps, Momentum). A rule reads its own, and every rule GradScale: each
// gradient (a half one widened) is multiplied by it first, the product
// rounded to the value's dtype (0 is 1; a loss scale's inverse, so that
// a scaled gradient is unscaled in the step's own pass), and then by the
// scalar GradFactor holds where it is not nil (one element of the
// values' dtype in a buffer of the device, read when the step runs: a
// clip factor the device computed), the product rounded again. A
// recorded step (StepRecorder.StepAt) reads it from that buffer at every
// replay.
type StepSettings struct {
	Rule                                       StepRule
	LR, Beta1, Beta2, C1, C2, Eps, WeightDecay float64
	Momentum, Rho                              float64
	Nesterov                                   bool
	GradScale                                  float64
	GradFactor                                 Buffer
}

// SpanCopier is a device that copies many contiguous spans at once (a
// GPU: one launch for many, where each Copy is a call of the driver's):
// Concatenate, whose inputs each fill one stretch of its output, takes
// it. CopySpans copies each span's N elements of esize bytes from
// element SOff of Src to element DOff of Dst, buffers of this device; it
// fails, copying nothing, on another device's buffer.
type SpanCopier interface {
	CopySpans(spans []Span, esize int) error
}

// Span is one contiguous copy of SpanCopier.CopySpans.
type Span struct {
	Dst, Src   Buffer
	DOff, SOff int
	N          int
}

// Swapper is a device that moves a buffer's contents to host memory and
// back without the host waiting: page-locked host memory, and copies
// queued in order with the device's work (the control-flow paper's
// memory swapping, which a graph's loop-gradient stacks use by option).
type Swapper interface {
	// SwapOut queues a copy of the first n bytes of b to host memory and
	// returns it; b may be freed at once.
	SwapOut(b Buffer, n int) (Swapped, error)
	// SwapIn queues the copy back into a new buffer of the device; s is
	// consumed.
	SwapIn(s Swapped) (Buffer, error)
}

// Swapped is a buffer's contents held in host memory by a Swapper.
type Swapped interface {
	// Size is the bytes held.
	Size() int
}
