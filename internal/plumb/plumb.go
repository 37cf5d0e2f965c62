// Package plumb carries what one eagerflow package lends another without
// putting it in its exported API: package tensor's setters of the state
// that package tape and package trace keep in tensors. Package tensor
// fills Tensor at init; it imports nothing of the module, so that tensor
// (below internal in the layering) may import it.
//
// The functions take their arguments as any because this package cannot
// name tensor's types; callers pass *tensor.Tensor, *tensor.Autodiff and
// *tensor.Traced (typed, even when nil).
package plumb

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
}
