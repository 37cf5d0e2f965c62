package cuda

import (
	"sync"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
	"github.com/eagerflow/eagerflow/conformance"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/tensor"
)

// emulated opens gpu:0 on the emulated driver, once per test binary, and
// registers it so that the conformance table runs every op there.
var emulated = sync.OnceValues(func() (*Device, error) {
	d, err := open(emu.New(emu.DefaultConfig), 0)
	if err != nil {
		return nil, err
	}
	device.Register(d)
	return d, nil
})

func emulatedGPU(t *testing.T) *Device {
	t.Helper()
	d, err := emulated()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// pending is what the GPU does not run yet (conformance.Pending): the
// table expects ErrNoKernel there and fails if one of these runs.
var pending = map[string][]tensor.DType{
	"ArgMaxMin": nil, "ArgSort": nil, "Cumsum": nil,
	"Conv2DGemm": nil, "Conv2DGemmBackpropFilter": nil, "Conv2DGemmBackpropInput": nil,
	"Exp": nil, "Log": nil, "Tanh": nil, "Sigmoid": nil, "Sin": nil, "Cos": nil, "Erf": nil, "Expm1": nil, "Log1p": nil,
	"Gelu": nil, "Softplus": nil, "Pow": {tensor.Float32, tensor.Float64},
	"Gather": nil, "Scatter": nil, "ScatterAdd": nil, "TakeAlongAxis": nil, "PutAlongAxisAdd": nil,
	"ExtractPatches": nil, "ScatterPatches": nil, "ReduceWindow": nil, "SelectAndScatter": nil, "SelectAndGather": nil,
	"LogSoftmax": nil, "Softmax": nil, "SparseSoftmaxCrossEntropy": nil,
	"MatMul": nil, "Reduce": nil, "ReluGrad": nil,
}

// The conformance table on gpu:0 through the emulator: every op the GPU
// runs agrees with cpu:0 within its dtype's tolerance.
func TestConformanceOnEmulatedGPU(t *testing.T) {
	emulatedGPU(t)
	conformance.Run(t, conformance.Pending{Kind: device.GPU, Ops: pending})
}
