package cuda

import (
	"os"
	"testing"

	"github.com/eagerflow/eagerflow/conformance"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/tensor"
)

// EnvRequireGPU set to 1 makes the tests run on the machine's GPU and
// fail where it cannot be opened; otherwise they run on the emulator.
const envRequireGPU = "EAGERFLOW_REQUIRE_GPU"

func TestMain(m *testing.M) {
	if os.Getenv(envRequireGPU) != "1" && os.Getenv(EnvDriver) == "" {
		os.Setenv(EnvDriver, "emulator")
	}
	os.Exit(m.Run())
}

// testGPU returns gpu:0 (opened and registered, so that the conformance
// table runs every op there too).
func testGPU(t testing.TB) *Device {
	t.Helper()
	d, err := Open(0)
	if err != nil {
		t.Fatalf("opening gpu:0 (%s=%q): %v", EnvDriver, os.Getenv(EnvDriver), err)
	}
	return d
}

// pending is what the GPU does not run yet (conformance.Pending): the
// table expects ErrNoKernel there and fails if one of these runs. The
// dropped attention's float64 kernels: ops.AttentionDropout composes it
// on a GPU in float64 (float32's and the half types' flash kernels drop
// inside).
var pending = map[string][]tensor.DType{
	"ScaledDotProductAttentionDropout":         {tensor.Float64},
	"ScaledDotProductAttentionDropoutBackprop": {tensor.Float64},
}

// The conformance table on gpu:0 (the emulator's unless a GPU is required): every op the GPU
// runs agrees with cpu:0 within its dtype's tolerance.
func TestConformanceOnGPU(t *testing.T) {
	d := testGPU(t)
	t.Logf("%s: %s, driver %s", d.Name(), d.Info().Name, d.Driver())
	conformance.Run(t, conformance.Pending{Kind: device.GPU, Ops: pending})
}
