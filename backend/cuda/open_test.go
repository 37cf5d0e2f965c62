package cuda

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// envNoDriverChild marks the child process of TestOpenWithoutADriver.
const envNoDriverChild = "EAGERFLOW_TEST_NO_DRIVER_CHILD"

// On a machine without NVIDIA's driver, Open's error names the libraries
// it tried, where to point EAGERFLOW_CUDA_PATH, and the emulator. Run in
// a child process: the driver is loaded once a process, and the tests'
// own is the emulator.
func TestOpenWithoutADriver(t *testing.T) {
	if os.Getenv(envNoDriverChild) == "" {
		if os.Getenv("EAGERFLOW_REQUIRE_GPU") == "1" {
			t.Skip("the GPU machine has a driver")
		}
		cmd := exec.Command(os.Args[0], "-test.run", "^TestOpenWithoutADriver$", "-test.v")
		cmd.Env = append(os.Environ(), envNoDriverChild+"=1", EnvDriver+"=nvidia", "EAGERFLOW_CUDA_PATH=/nonexistent")
		out, err := cmd.CombinedOutput()
		switch {
		case strings.Contains(string(out), "--- SKIP: TestOpenWithoutADriver"):
			t.Skip("this machine has a driver")
		case err != nil || !strings.Contains(string(out), "--- PASS: TestOpenWithoutADriver"):
			t.Fatalf("child: %v\n%s", err, out)
		}
		return
	}
	_, err := Open(0)
	if err == nil {
		t.Skip("a driver loaded")
	}
	for _, want := range []string{"libcuda.so.1", "EAGERFLOW_CUDA_PATH", "EAGERFLOW_CUDA_DRIVER=emulator runs the same kernels on the host"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Open without a driver: %v; want it to name %q", err, want)
		}
	}
}
