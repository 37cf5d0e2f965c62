package kernels

import "github.com/eagerflow/eagerflow/backend/cuda/internal/ptx"

// The graph family: kernels a CUDA graph runs to steer itself. Its module
// is apart from the others because its one kernel calls the CUDA runtime's
// device function cudaGraphSetConditional, which the driver resolves when
// it loads the module (a driver without conditional nodes refuses the
// module, and only loops on the device are lost).

// SetConditional is the kernel that sets a graph's condition (a
// conditional node's handle) from a bool on the device, or from its
// negation: set_conditional(handle u64, pred *bool, negate u32 (0 or 1)),
// one thread.
const SetConditional = "set_conditional"

// setConditionalDecl declares the CUDA runtime's device function
// void cudaGraphSetConditional(cudaGraphConditionalHandle, unsigned int).
const setConditionalDecl = ".extern .func cudaGraphSetConditional (.param .b64 handle, .param .b32 value)"

func graphKernels() []*ptx.Kernel {
	k := ptx.NewKernel(SetConditional)
	h := k.Param("handle", ptx.U64)
	pred := k.ParamPtr("pred")
	negate := k.Param("negate", ptx.U32)
	v := k.Reg(ptx.U32)
	k.Op("ld.global.u8 %s, [%s]", v, pred)
	k.Op("xor.b32 %s, %s, %s", v, v, negate)
	k.Call("cudaGraphSetConditional", h, v)
	return []*ptx.Kernel{k}
}
