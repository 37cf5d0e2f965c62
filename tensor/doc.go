// Package tensor is eagerflow's value type: an immutable n-dimensional array
// with a dtype, a shape, an XLA-style layout and a buffer on a device.
//
// # Values
//
// DTypes are Float32, Float64, Int32, Int64, Uint8, Bool (XLA's PRED) and
// the half-precision floats BFloat16 and Float16 (Go types BF16 and F16;
// ToBF16 and ToF16 round float32 values to them, FromFloat32s makes a
// tensor of them from float32 data). Ops compute on the half types in
// float32 and round each result once (reductions and products accumulate
// in float32), on every device, and their gradients keep the half dtype;
// they are printed as NumPy prints float16, and read and written as
// safetensors BF16/F16 and .npy float16. The 8-bit floats Float8E4M3 and
// Float8E5M2 of the OCP FP8 specification (Go types F8E4M3, F8E5M2;
// ToF8E4M3 and ToF8E5M2 round and saturate) are stored, cast, moved and
// multiplied by ops.ScaledMatMul.
// Shapes have any rank, rank 0 being a scalar, and dimensions may be zero.
// Tensors are made from Go slices (FromSlice), scalars (Scalar, weakly
// typed; ScalarOf, of a given dtype), constants
// (Zeros, Ones, FullOf, the identity Eye), ranges (Arange, Linspace) and the seeded,
// counter-based RNG (RandUniform, RandNormal, RandBernoulli, RandInt). They are read
// back with ToSlice and Item. Printing follows NumPy.
//
// Constructors take their arguments in one order: the dtype first, then
// values, the shape last (Zeros(dt, 2, 3), FullOf(dt, 0.5, 2, 3),
// RandUniform(rng, dt, lo, hi, 2, 3)); each has an On variant taking the
// device first (FullOn, RandUniformOn, FromSliceOn) where the default
// device is not meant. Full, which took a typed value instead, is a
// deprecated alias of FullOf.
//
// # Layout
//
// A Layout is XLA's minor_to_major list; nil is row-major. Strides,
// LinearIndex and MultiIndex convert between element indices and memory
// positions for any layout. View reinterprets a buffer under another shape
// and layout without copying (a transpose is a layout change); Contiguous
// copies into row-major order when a kernel needs it.
//
// # Errors
//
// Programmer errors (a shape that does not hold the data, a wrong dtype for
// ToSlice, Item on many elements) panic with an *Error that wraps a sentinel
// (ErrShape, ErrDType, ...) and names the function, the inputs and the
// caller's file:line; Catch recovers them. Shapes are checked before
// anything is allocated: a negative dimension, or more elements or bytes
// than an int can count, is ErrShape (Shape.Size and ByteSize say which
// shapes are valid). Device failures (out of memory, copies) are returned
// as errors where a function returns an error; the constructors, which
// have nowhere to return them, panic with an *Error whose kind wraps
// device.ErrOutOfMemory, also for a tensor larger than the device's memory
// (the CPU device's MaxAlloc), before the Go runtime would end the process.
//
// # Concurrency and memory
//
// A tensor may be read by any number of goroutines. Buffers come from the
// device's cache and go back to it on Release, which is optional: an
// unreleased buffer is reclaimed by the garbage collector. The Autodiff and
// Trace fields belong to packages tape and eager; they are updated
// atomically.
package tensor
