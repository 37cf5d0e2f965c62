// Package plumb carries what one eagerflow package lends another without
// putting it in its exported API: package tensor's setters of the state
// that package tape and package trace keep in tensors, and its printer's
// pieces for the notebook module's tables. Package tensor
// fills Tensor at init; it imports nothing of the module, so that tensor
// (below internal in the layering) may import it.
//
// The functions take their arguments as any because this package cannot
// name tensor's types; callers pass *tensor.Tensor, *tensor.Autodiff and
// *tensor.Traced (typed, even when nil).
package plumb

// FlagScratch marks a tensor that library code made for a recorded op to
// read and gives to nobody else (a dropout mask, a layer's cast of its
// input): a tape that releases its intermediates (tape.Options
// ReleaseIntermediates) releases it with them, though no recorded op
// made it. Set with Tensor.SetFlags; views do not inherit it.
const FlagScratch uint32 = 1 << 31

// Tensor holds package tensor's setters.
var Tensor struct {
	// SetFlags sets flag bits of a tensor (tensor.FlagVariable).
	SetFlags func(t any, flags uint32)
	// SetAutodiff replaces a tensor's autodiff state.
	SetAutodiff func(t, a any)
	// CompareAndSwapAutodiff replaces old with a atomically.
	CompareAndSwapAutodiff func(t, old, a any) bool
	// SetTraced replaces a tensor's tracing state.
	SetTraced func(t, m any)
	// WithoutValues returns a stand-in for a tensor with its dtype, shape
	// and autodiff state but no values (see tensor.Tensor.ValuesDropped).
	WithoutValues func(t any) any
	// Print is the text printer's material: every element as String
	// writes it (row-major; floats in one notation and precision) and the
	// positions shown along a dimension of size n (-1 for the elision
	// mark, which a tensor of more than 1000 elements gets beyond 3 items
	// at each end). elems is nil when t holds no values (nil, released or
	// dropped).
	Print func(t any) (elems []string, shown func(n int) []int)
	// Move copies a tensor to a device (*tensor.Tensor, device.Device)
	// without telling tapes or traces: the ToDevice op's own work.
	Move func(t, dev any) (any, error)
	// MarkScratch sets FlagScratch on a tensor, unless a trace holds it
	// (a trace's values are its graph's), and returns it.
	MarkScratch func(t any) any
	// RowMajor copies a tensor into row-major order (itself when it is)
	// without telling tapes or traces: dispatch's own copy of an op's
	// inputs, which the op's record covers.
	RowMajor func(t any) any
	// Item is Tensor.Item without telling a trace (HostRead): the reads
	// of the library's constructs that decide on a trace's values
	// themselves (a traced Cond's or While's predicate, a guard's).
	Item func(t any) any
	// Copy copies a tensor into a new row-major tensor on its device
	// without telling tapes or traces: a trace's snapshot of a value.
	Copy func(t any) any
	// Version is when a variable's tensor was last assigned in place, on
	// the process's count of assignments (Assignments, now); Bump counts
	// an assignment (package tape's Variable).
	Version     func(t any) uint64
	Bump        func(t any)
	Assignments func() uint64
}

// NilHint says where a nil tensor most often comes from; the errors of
// ops and tensor methods given one end with it.
const NilHint = "a gradient is nil where the target does not depend on the source on that tape: " +
	"not watched (Tape.Watch), not a variable, not used, or the target computed after the tape's Stop; " +
	"tape.Options{UnconnectedZeros: true} gives zeros instead"

// WithArticle is a dtype's (or any word's) name after "a" or "an", as a
// message reads it: "an int32", "a float32", "a uint8".
func WithArticle(name string) string {
	if name != "" && name[0] == 'i' {
		return "an " + name
	}
	return "a " + name
}

// GuardValue is package trace's (set at its init): an op that reads the
// value of x (an integer scalar) on the host to decide a shape, as
// ops.Nonzero reads its count, calls it; when x is a value of a live
// trace, the trace records a guard that x has this value on later calls
// (a graph whose guard fails runs its function eagerly instead), so the
// shape read once is not a constant of the graph. construct names the op.
var GuardValue func(construct string, x any)

// HostRead is package trace's (set at its init): tensor.ToSlice,
// Tensor.Item and Tensor.Float call it when the tensor x they read is a
// trace's value (tensor.Tensor.Traced). The Go value the caller gets may
// decide what the traced function does next, which the graph would not
// see: where x varies between calls, the trace records a guard that x
// holds the same values on later calls (a call where it does not runs
// the function eagerly instead).
var HostRead func(x any)

// VariesInTrace is package trace's (set at its init): it reports whether
// x is a value that varies between the calls of a function being traced
// (computed from its arguments or variables), which package tape's
// variable assignments refuse: an assignment is not an op, so the graph
// would not repeat it.
var VariesInTrace func(x any) bool

// AssignedHere is package trace's (set at its init), which package tape
// calls on every variable assignment with the variable's tensor: where
// the calling goroutine runs a function being traced, the trace fails
// (the graph would not repeat the assignment), whatever the value and
// whether or not the function reads the variable.
var AssignedHere func(v any)

// VariableName is package tape's (set at its init): the name of the
// variable whose tensor t is, or "".
var VariableName func(t any) string

// KernelFrame is the name of the function package eager runs every
// kernel in (set at its init), as runtime.Frame.Function names it: a
// host read on a stack that holds it is a kernel's, not the traced
// function's (HostRead).
var KernelFrame string

// RecordedTo is package ops' ToDevice (set at its init): tensor.To calls
// it for a tensor a tape or a trace may be following, so that the copy is
// recorded (a gradient flows back through it, a trace replays it).
var RecordedTo func(t, dev any) (any, error)

// RecordedContiguous is package ops' row-major copy as a recorded op (set
// at its init): tensor.Contiguous calls it for a tensor a tape or a trace
// may be following, so that a gradient flows through the copy and a trace
// replays it.
var RecordedContiguous func(t any) any
