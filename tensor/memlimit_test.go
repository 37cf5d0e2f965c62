package tensor_test

import (
	"errors"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/tensor"
)

// Under an address-space limit (ulimit -v 8G) a tensor larger than it is
// an out-of-memory error, not the Go runtime's fatal error; one that fits
// is made (issue 31: the limit was the machine's RAM alone).
func TestAllocationsRespectUlimit(t *testing.T) {
	if os.Getenv("EAGERFLOW_ULIMIT_CHILD") == "1" {
		err := tensor.Catch(func() { tensor.Zeros(tensor.Float32, 1<<32) }) // 16 GiB
		if !errors.Is(err, device.ErrOutOfMemory) {
			t.Fatalf("16 GiB under ulimit -v 8G: %v", err)
		}
		if max := device.Host().MaxAlloc(); max > 8<<30 {
			t.Fatalf("MaxAlloc %d beyond the 8 GiB limit", max)
		}
		// Under MaxAlloc, but beyond what the mapped address space leaves.
		err = tensor.Catch(func() { tensor.Zeros(tensor.Float32, 8<<30/4-1<<20) })
		if !errors.Is(err, device.ErrOutOfMemory) || !strings.Contains(err.Error(), "ulimit -v") {
			t.Fatalf("8 GiB less 4 MiB under ulimit -v 8G: %v", err)
		}
		x := tensor.Zeros(tensor.Float32, 1<<26) // 256 MiB fits
		if x.NumElements() != 1<<26 {
			t.Fatal("the 256 MiB tensor")
		}
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("ulimit -v is checked on Linux")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to set ulimit -v with")
	}
	cmd := exec.Command("sh", "-c", `ulimit -v 8388608 && exec "$0" -test.run '^TestAllocationsRespectUlimit$' -test.v`, os.Args[0])
	cmd.Env = append(os.Environ(), "EAGERFLOW_ULIMIT_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "PASS") {
		t.Fatalf("the child under ulimit -v 8G: %v\n%s", err, out)
	}
}
