package cpu

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// Kernels names the kernels gemm actually uses, and the debug switch
// prints it at start-up.
func TestKernelsReportsTheChoice(t *testing.T) {
	r := Kernels()
	if first := gemmKernels[float32]()[0].name; !strings.Contains(r, "gemm float32: "+first) {
		t.Errorf("the report does not lead float32 with %s:\n%s", first, r)
	}
	if !strings.Contains(r, "cpu: ") || !strings.Contains(r, "gemm blocking") {
		t.Errorf("report:\n%s", r)
	}
	if os.Getenv("EAGERFLOW_KERNELS_CHILD") != "" {
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run", "^TestKernelsReportsTheChoice$")
	cmd.Env = append(os.Environ(), "EAGERFLOW_DEBUG=kernels", "EAGERFLOW_KERNELS_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(string(out), r) {
		t.Errorf("EAGERFLOW_DEBUG=kernels printed:\n%s\nwant the report:\n%s", out, r)
	}
}
