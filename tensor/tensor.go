package tensor

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/plumb"
)

// Tensor is an immutable n-dimensional array: a dtype, a shape, a layout and
// a reference-counted buffer on one device. Ops never change a tensor's
// values; the one exception is a variable (see package tape), whose buffer
// optimizers update in place.
//
// A Tensor must not be copied by value; pass *Tensor.
type Tensor struct {
	dtype  DType
	shape  Shape
	layout Layout        // minor-to-major; nil is row-major
	buf    device.Buffer // shared by views; its Refs count them
	flags  uint32

	ad atomic.Pointer[Autodiff] // owned by package tape
	tr atomic.Pointer[Traced]   // owned by package trace
	// version is when a variable was last assigned in place (package
	// tape's tape.Variable), on the process's count of assignments
	// (assignments): a tape that recorded an op reading it, or a trace
	// that captured it, knows whether its values changed since.
	version atomic.Uint64
}

// Flags a tensor may carry.
const (
	// FlagVariable marks the buffer of a variable, which may change in place.
	FlagVariable uint32 = 1 << iota
	// FlagWeak marks a weakly typed scalar (made by Scalar): see IsWeak.
	FlagWeak
)

// Autodiff is the differentiation state a tensor carries. Package tape owns
// its meaning; it lives here so that tensors can carry it without tensor
// importing tape. It is replaced whole (copy on write), never edited.
type Autodiff struct {
	Node  any // the recorded op that produced the tensor, or nil for a leaf
	Index int // which output of Node
	Watch any // tape-defined set of tapes that watch this leaf
}

// Traced is the tracing state a tensor carries. Package trace owns its
// meaning; it lives here, as Autodiff does, so that a trace finds its
// values by the tensors an op reads rather than by which goroutine runs
// the op. It is replaced whole, never edited.
type Traced struct {
	Trace  any // the trace the tensor is a value of, or nil
	Recipe any // how the tensor was computed from variables, or nil
}

// Empty allocates an uninitialized tensor on dev. It is the allocation
// kernels use for outputs; users want Zeros or Full.
func Empty(dev device.Device, dt DType, shape Shape) (*Tensor, error) {
	if dev == nil {
		return nil, errors.New("tensor: the device is nil")
	}
	if !dt.Valid() {
		return nil, fmt.Errorf("tensor: invalid dtype %v", dt)
	}
	if _, ok := shape.Size(); !ok {
		return nil, fmt.Errorf("tensor: %s", shapeProblem(shape))
	}
	nbytes, ok := ByteSize(dt, shape)
	if !ok {
		return nil, fmt.Errorf("%w: %v%v has more bytes than an int can count", device.ErrOutOfMemory, dt, shape)
	}
	buf, err := dev.Alloc(nbytes)
	if err != nil {
		return nil, err
	}
	buf.Refs().Store(1)
	return &Tensor{dtype: dt, shape: shape, buf: buf}, nil
}

// FromBuffer returns a row-major tensor over an existing buffer (for
// zero-copy interoperation). The buffer must hold at least the tensor's
// bytes; the tensor does not own it beyond the device's rules for that
// buffer (a wrapped host buffer is never reused by the cache).
//
// Deprecated: use backend.FromBuffer (package backend, for backends).
func FromBuffer(buf device.Buffer, dt DType, shape Shape) (*Tensor, error) {
	if buf == nil {
		return nil, errors.New("tensor: FromBuffer: the buffer is nil")
	}
	need, ok := ByteSize(dt, shape)
	if !dt.Valid() || !ok {
		return nil, fmt.Errorf("tensor: invalid dtype %v or shape %v", dt, shape)
	}
	if buf.Size() < need {
		return nil, fmt.Errorf("tensor: a %d-byte buffer cannot hold %v%v (%d bytes)", buf.Size(), dt, shape, need)
	}
	buf.Refs().Add(1)
	return &Tensor{dtype: dt, shape: shape.Clone(), buf: buf}, nil
}

// MustEmptyHost is Empty on the host (whatever the default device) that
// panics on allocation failure: the buffer code fills through HostBytes.
//
// Deprecated: use backend.MustEmptyHost (package backend, for backends).
func MustEmptyHost(dt DType, shape Shape) *Tensor {
	t, err := Empty(device.Host(), dt, shape)
	if err != nil {
		panic(allocError("MustEmptyHost", dt, shape, err))
	}
	return t
}

// MustEmpty is Empty for the default device that panics on allocation failure.
//
// Deprecated: use backend.MustEmptyHost, or Empty on device.Default() (package backend, for backends).
func MustEmpty(dt DType, shape Shape) *Tensor {
	t, err := Empty(device.Default(), dt, shape)
	if err != nil {
		panic(allocError("MustEmpty", dt, shape, err))
	}
	return t
}

// DType returns the element type.
func (t *Tensor) DType() DType {
	if t == nil {
		nilTensor("DType")
	}
	return t.dtype
}

// Shape returns the dimensions. The caller must not modify the result.
func (t *Tensor) Shape() Shape {
	if t == nil {
		nilTensor("Shape")
	}
	return t.shape
}

// Rank returns the number of dimensions.
func (t *Tensor) Rank() int {
	if t == nil {
		nilTensor("Rank")
	}
	return len(t.shape)
}

// Dim returns the size of dimension i; negative i counts from the end. It
// panics with an *Error of kind ErrAxis when i is outside [-rank, rank).
func (t *Tensor) Dim(i int) int {
	if t == nil {
		nilTensor("Dim")
	}
	s := t.shape
	if i < 0 {
		i += len(s)
	}
	if uint(i) < uint(len(s)) {
		return s[i]
	}
	return t.badDim(i)
}

func (t *Tensor) badDim(i int) int {
	if i < 0 {
		i -= len(t.shape)
	}
	panicf("tensor", "Dim", ErrAxis, []*Tensor{t}, "", "axis %d is out of range for rank %d", i, len(t.shape))
	return 0
}

// NumElements returns the number of elements.
func (t *Tensor) NumElements() int { return t.shape.NumElements() }

// nilTensor panics with an *Error for method m called on a nil tensor.
func nilTensor(m string) {
	panicf("tensor", m, ErrArity, nil, "", "called on a nil tensor (%s)", plumb.NilHint)
}

// Layout returns the minor-to-major layout (nil for row-major).
func (t *Tensor) Layout() Layout { return t.layout }

// IsRowMajor reports whether the elements are stored in the default order.
func (t *Tensor) IsRowMajor() bool { return t.layout.IsRowMajor(len(t.shape)) }

// Device returns the device that holds the buffer. It panics with
// ErrReleased for a released tensor.
func (t *Tensor) Device() device.Device {
	if t.buf == nil {
		t.released("Device")
	}
	return t.buf.Device()
}

func (t *Tensor) released(op string) {
	panicf("tensor", op, ErrReleased, []*Tensor{t}, "",
		"this tensor's buffer was released (by Release, or by a tape made with ReleaseIntermediates once its Gradient returned); it cannot be used")
}

// Buffer returns the device buffer (for kernels and devices).
func (t *Tensor) Buffer() device.Buffer { return t.buf }

// Flags returns the tensor's flags.
func (t *Tensor) Flags() uint32 { return t.flags }

// setFlags sets flags on a tensor; it is meant for the package that creates
// the tensor (tape marks variables), before the tensor is shared, and is
// lent through internal/plumb.
func (t *Tensor) setFlags(f uint32) { t.flags |= f }

// IsVariable reports whether t is a variable's value.
func (t *Tensor) IsVariable() bool { return t.flags&FlagVariable != 0 }

// IsWeak reports whether t is weakly typed: a scalar made by Scalar from a
// Go value. An op given it beside tensors of another dtype or device
// converts it to theirs (as JAX treats Python scalars), so that
// ops.Div(x, tensor.Scalar(255.0)) divides a float32 x; the value must be
// exact in that dtype (2.0 becomes an integer 2, 0.5 is an error beside
// integers) and bools stay bools. Weak scalars alone meet at the highest
// kind among them (bool, integer, float) and its narrowest dtype present.
// Tensors ops compute are never weak, and mixed dtypes among them stay an
// error.
func (t *Tensor) IsWeak() bool { return t.flags&FlagWeak != 0 }

// Autodiff returns the differentiation state (nil when there is none).
func (t *Tensor) Autodiff() *Autodiff { return t.ad.Load() }

// setAutodiff replaces the differentiation state (package tape's, lent
// through internal/plumb).
func (t *Tensor) setAutodiff(a *Autodiff) { t.ad.Store(a) }

// Traced returns the tracing state (nil when there is none).
func (t *Tensor) Traced() *Traced { return t.tr.Load() }

// setTraced replaces the tracing state (package trace's, lent through
// internal/plumb).
func (t *Tensor) setTraced(m *Traced) { t.tr.Store(m) }

// View returns a tensor sharing t's buffer with another shape and layout of
// the same element count. It panics with an *Error if they do not fit.
func (t *Tensor) View(shape Shape, l Layout) *Tensor {
	if n, ok := shape.Size(); !ok || n != t.NumElements() {
		panicf("tensor", "View", ErrShape, []*Tensor{t}, "", "shape %v does not hold %d elements", shape, t.NumElements())
	}
	if !l.valid(len(shape)) {
		panicf("tensor", "View", ErrAttr, []*Tensor{t}, "", "layout %v is not a permutation of %d dimensions", l, len(shape))
	}
	if l.IsRowMajor(len(shape)) {
		l = nil
	}
	t.buf.Refs().Add(1)
	return &Tensor{dtype: t.dtype, shape: shape, layout: l, buf: t.buf, flags: t.flags &^ (FlagVariable | FlagWeak | plumb.FlagScratch)}
}

// Release drops this tensor's reference to its buffer; when the last
// reference goes, the buffer returns to its device's cache. Release is
// optional (the garbage collector reclaims unreleased buffers) and the
// tensor must not be used afterwards. Variables ignore Release.
func (t *Tensor) Release() {
	if t.IsVariable() || t.buf == nil || t.ValuesDropped() {
		return
	}
	if t.buf.Refs().Add(-1) == 0 {
		t.buf.Device().Free(t.buf)
	}
	t.buf = nil
}

// HostBytes returns the raw bytes of a tensor on the CPU, in layout order.
// It panics if t is on another device. Inside a traced function, reading
// a value that varies between calls makes the trace guard it, as ToSlice
// does (kernels' reads aside).
func (t *Tensor) HostBytes() []byte {
	t.readOnHost()
	return t.hostBytes()
}

// hostBytes is HostBytes without telling a trace of the read: a kernel's
// access (HostData), which decides nothing the traced function does.
func (t *Tensor) hostBytes() []byte {
	if t.ValuesDropped() {
		panicf("tensor", "HostBytes", ErrDropped, []*Tensor{t}, "",
			"this tensor stands for one whose values were let go because no gradient rule reads them; an op's eager.Op.GradReads declares too little")
	}
	if t.buf == nil {
		t.released("HostBytes")
	}
	hb, ok := t.buf.(*device.HostBuffer)
	if !ok {
		panicf("tensor", "HostBytes", ErrDevice, []*Tensor{t}, "", "tensor is on %s, not the CPU", t.Device().Name())
	}
	return hb.Bytes()
}

// HostData returns the elements of a CPU tensor as a slice of T that shares
// the tensor's memory, in layout order. Kernels write their fresh outputs
// through it; anyone else must treat it as read-only. It panics if T does
// not match the dtype or t is not on the CPU.
//
// Deprecated: use backend.HostData (package backend, for backends).
func HostData[T Elem](t *Tensor) []T {
	if DTypeOf[T]() != t.dtype {
		panicf("tensor", "HostData", ErrDType, []*Tensor{t}, "", "asked for %v elements of %s tensor", DTypeOf[T](), plumb.WithArticle(t.dtype.String()))
	}
	b := t.hostBytes() // a kernel's access: no trace is told (readOnHost)
	n := t.NumElements()
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// To returns t on dev (t itself when it is there already), in t's layout:
// dev copies from t's device directly where it can read it (the CPU
// devices read each other's memory), else the data is staged through host
// memory. Errors are the devices' (wrapping device.ErrOutOfMemory or
// device.ErrCopy). The copy is an op (ops.ToDevice) where a tape or a
// trace may follow t (t was recorded or traced, or is a variable's
// value): a gradient flows back through it to t's device, and a traced
// function copies its values each call.
func (t *Tensor) To(dev device.Device) (*Tensor, error) {
	if dev == t.Device() {
		return t, nil
	}
	if plumb.RecordedTo != nil && (t.ad.Load() != nil || t.tr.Load() != nil || t.IsVariable()) {
		out, err := plumb.RecordedTo(t, dev)
		if err != nil {
			return nil, err
		}
		return out.(*Tensor), nil
	}
	return t.move(dev)
}

// move is To without recording.
func (t *Tensor) move(dev device.Device) (*Tensor, error) {
	if dev == t.Device() {
		return t, nil
	}
	out, err := Empty(dev, t.dtype, t.shape)
	if err != nil {
		return nil, err
	}
	out.layout = t.layout
	n := t.NumElements()
	flat := []int{n}
	if err := dev.Copy(out.buf, 0, []int{1}, t.buf, 0, []int{1}, flat, t.dtype.Size()); err == nil {
		return out, nil
	} else if !errors.Is(err, device.ErrCopy) {
		return nil, err
	}
	host := make([]byte, n*t.dtype.Size())
	if err := t.Device().CopyToHost(host, t.buf, 0); err != nil {
		return nil, err
	}
	if err := dev.CopyFromHost(out.buf, 0, host); err != nil {
		return nil, err
	}
	return out, nil
}

// hostCopy returns t's bytes in row-major order on the host (a fresh copy,
// made row-major on t's device first).
func (t *Tensor) hostCopy() []byte {
	c := t.Contiguous()
	raw := make([]byte, t.NumElements()*t.dtype.Size())
	if len(raw) > 0 {
		if err := c.Device().CopyToHost(raw, c.buf, 0); err != nil {
			panic(err)
		}
	}
	return raw
}

// Contiguous returns t with its elements in row-major order: t itself when
// it already is, or a copy that t's device makes (an op that tapes and
// traces record, for a tensor they follow).
func (t *Tensor) Contiguous() *Tensor {
	if t.IsRowMajor() {
		return t
	}
	if plumb.RecordedContiguous != nil && (t.ad.Load() != nil || t.tr.Load() != nil) {
		return plumb.RecordedContiguous(t).(*Tensor) // taped or traced: the copy as an op
	}
	return t.rowMajor()
}

// rowMajor is Contiguous without telling tapes or traces.
func (t *Tensor) rowMajor() *Tensor {
	if t.IsRowMajor() {
		return t
	}
	return t.copyRowMajor()
}

// copyRowMajor copies t into a new row-major tensor on its device,
// telling no tape or trace.
func (t *Tensor) copyRowMajor() *Tensor {
	dev := t.Device()
	out, err := Empty(dev, t.dtype, t.shape)
	if err != nil {
		panic(allocError("Contiguous", t.dtype, t.shape, err))
	}
	if err := dev.Copy(out.buf, 0, Strides(t.shape, nil), t.buf, 0, Strides(t.shape, t.layout), t.shape, t.dtype.Size()); err != nil {
		panic(err)
	}
	return out
}

// ToSlice copies the elements of t, in row-major order, into a new slice.
// It panics with an *Error if T does not match t's dtype. Inside a traced
// function, reading a value that varies between calls makes the trace
// guard it (package trace).
func ToSlice[T Elem](t *Tensor) []T {
	t.readOnHost()
	return toSlice[T](t)
}

// readOnHost tells package trace (plumb.HostRead) that t's values are
// read on the host, where t is a trace's value: the read's result is a
// Go value the traced function may decide on.
func (t *Tensor) readOnHost() {
	if t != nil && plumb.HostRead != nil && t.Traced() != nil {
		plumb.HostRead(t)
	}
}

// toSlice is ToSlice without telling a trace: the printer's and the
// library's own reads.
func toSlice[T Elem](t *Tensor) []T {
	if DTypeOf[T]() != t.dtype {
		panicf("tensor", "ToSlice", ErrDType, []*Tensor{t}, "", "asked for %v elements of %s tensor", DTypeOf[T](), plumb.WithArticle(t.dtype.String()))
	}
	raw := t.hostCopy()
	out := make([]T, t.NumElements())
	if len(out) > 0 {
		copy(unsafe.Slice((*byte)(unsafe.Pointer(&out[0])), len(raw)), raw)
	}
	return out
}

// Item returns the single element of a one-element tensor as its Go type
// (float32, float64, int32, int64, uint8, bool, BF16 or F16). It panics with an *Error
// if t has more or fewer than one element. Inside a traced function, reading
// a value that varies between calls makes the trace guard it (package
// trace).
func (t *Tensor) Item() any { return t.itemFor("Item") }

// itemFor is Item for the method named name (Item, Float), which errors
// name.
func (t *Tensor) itemFor(name string) any {
	if t == nil {
		nilTensor(name)
	}
	t.readOnHost()
	return t.itemOf(name)
}

// item is Item without telling a trace.
func (t *Tensor) item() any { return t.itemOf("Item") }

// itemOf is item for the method named name.
func (t *Tensor) itemOf(name string) any {
	if n := t.NumElements(); n != 1 {
		hint := ""
		if n > 1 {
			hint = " (reduce it to one first: ops.Sum, ops.Mean)"
		}
		panicf("tensor", name, ErrShape, []*Tensor{t}, "", "%s needs exactly one element, the tensor has %d%s", name, n, hint)
	}
	switch t.dtype {
	case Float32:
		return toSlice[float32](t)[0]
	case Float64:
		return toSlice[float64](t)[0]
	case Int32:
		return toSlice[int32](t)[0]
	case Int64:
		return toSlice[int64](t)[0]
	case Uint8:
		return toSlice[uint8](t)[0]
	case BFloat16:
		return toSlice[BF16](t)[0]
	case Float16:
		return toSlice[F16](t)[0]
	case Float8E4M3:
		return toSlice[F8E4M3](t)[0]
	case Float8E5M2:
		return toSlice[F8E5M2](t)[0]
	default:
		return toSlice[bool](t)[0]
	}
}

// Float returns the single element of a one-element numeric tensor as a
// float64 (booleans give 0 or 1).
func (t *Tensor) Float() float64 { return floatOf(t.itemFor("Float")) }

// floatOf is an element of Item's as a float64 (booleans give 0 or 1).
func floatOf(item any) float64 {
	switch v := item.(type) {
	case float32:
		return float64(v)
	case float64:
		return v
	case int32:
		return float64(v)
	case int64:
		return float64(v)
	case uint8:
		return float64(v)
	case BF16:
		return float64(v.Float32())
	case F16:
		return float64(v.Float32())
	case F8E4M3:
		return float64(v.Float32())
	case F8E5M2:
		return float64(v.Float32())
	case bool:
		if v {
			return 1
		}
	}
	return 0
}
