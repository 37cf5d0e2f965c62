package eager

import (
	"sync/atomic"

	"github.com/eagerflow/eagerflow/tensor"
)

// The half types compute through float32. An op called on a BFloat16 or
// Float16 key input, on a device with no kernel for that dtype but one for
// Float32, runs the Float32 kernel: the inputs of the half dtype are
// widened to float32 (exactly), and each output the op declares of the
// half dtype is computed in float32 and rounded to it once (to nearest,
// ties to even), as XLA and PyTorch compute their elementwise ops,
// reductions and products in bfloat16 and float16. The widening and the
// rounding are the device's Cast kernels, run directly: a tape or trace
// sees the one op it was called as. A backend with kernels of its own for
// a half type (tensor cores, packed arithmetic) registers them, and they
// run instead.

// converter is the op that converts between dtypes (ops.Cast) and its
// attributes for a target dtype, as package ops declares them
// (SetConverter).
type converter struct {
	op    *Op
	attrs func(to tensor.DType) any
}

var conversion atomic.Pointer[converter]

// SetConverter names the op that converts a tensor to another dtype and
// how its attributes say the target: the half types' dispatch runs its
// kernels (package ops sets it to Cast).
func SetConverter(op *Op, attrs func(to tensor.DType) any) {
	if op == nil || attrs == nil {
		panic("eager: SetConverter of a nil op or attributes function")
	}
	conversion.Store(&converter{op: op, attrs: attrs})
}

// halfKernel returns the kernel that runs c, whose key dtype key is a
// half type and for which the device has no kernel: the op's Float32
// kernel run through float32, where the device has it and the Cast
// kernels that widen and round; nil otherwise (and for ops without
// inputs, whose key is their output's dtype).
func halfKernel(c *Call, key tensor.DType) Kernel {
	kind, cv := c.Device.Kind(), conversion.Load()
	if !key.IsHalf() || c.Op.KeyInput >= len(c.Inputs) || cv == nil {
		return nil
	}
	k32, widen, round := c.Op.Kernel(kind, tensor.Float32), cv.op.Kernel(kind, key), cv.op.Kernel(kind, tensor.Float32)
	if k32 == nil || widen == nil || round == nil {
		return nil
	}
	return func(c *Call, outs []*tensor.Tensor) { throughFloat32(c, key, k32, cv, widen, round, outs) }
}

// ThroughFloat32 runs c, whose key input is of a half type, as dispatch
// does for a device without a kernel of that type: the op's Float32
// kernel on widened inputs, each half output rounded once. A backend's
// half kernel calls it where it cannot run the call itself (a GEMM the
// device's library does not take). It reports false, having done
// nothing, where the device has no Float32 kernel for the op.
func ThroughFloat32(c *Call, outs []*tensor.Tensor) bool {
	if c == nil || c.Op == nil || c.Op.KeyInput >= len(c.Inputs) {
		return false
	}
	k := halfKernel(c, c.Inputs[c.Op.KeyInput].DType())
	if k == nil {
		return false
	}
	k(c, outs)
	return true
}

// throughFloat32 runs c with k32, c's inputs of dtype half widened to
// float32 and its outputs of dtype half computed in float32 and rounded.
func throughFloat32(c *Call, half tensor.DType, k32 Kernel, cv *converter, widen, round Kernel, outs []*tensor.Tensor) {
	var temps []*tensor.Tensor
	defer func() {
		for _, t := range temps {
			t.Release()
		}
	}()
	convert := func(k Kernel, x *tensor.Tensor, to tensor.DType, out *tensor.Tensor) *tensor.Tensor {
		if out == nil {
			var err error
			if out, err = tensor.Empty(c.Device, to, x.Shape()); err != nil {
				c.Fail(err, "cannot allocate a float32 copy %v of a %v value on %s: %v", x.Shape(), half, c.Device.Name(), err)
			}
			temps = append(temps, out)
		}
		k(&Call{Op: cv.op, Attrs: cv.attrs(to), Device: c.Device, Inputs: []*tensor.Tensor{x}}, []*tensor.Tensor{out})
		return out
	}
	wide := &Call{Op: c.Op, Attrs: c.Attrs, Device: c.Device, Inputs: make([]*tensor.Tensor, len(c.Inputs))}
	for i, x := range c.Inputs {
		wide.Inputs[i] = x
		if x.DType() == half {
			wide.Inputs[i] = convert(widen, x, tensor.Float32, nil)
		}
	}
	wideOuts := make([]*tensor.Tensor, len(outs))
	for i, o := range outs {
		wideOuts[i] = o
		if o.DType() == half {
			t, err := tensor.Empty(c.Device, tensor.Float32, o.Shape())
			if err != nil {
				c.Fail(err, "cannot allocate its float32 output %v on %s: %v", o.Shape(), c.Device.Name(), err)
			}
			temps = append(temps, t)
			wideOuts[i] = t
		}
	}
	k32(wide, wideOuts)
	for i, o := range outs {
		if o.DType() == half {
			convert(round, wideOuts[i], half, o)
		}
	}
}
