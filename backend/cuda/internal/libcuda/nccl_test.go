//go:build linux && (amd64 || arm64)

package libcuda

import (
	"strings"
	"testing"
)

// Loading NCCL where there is none, or from a library that is not NCCL,
// is an error naming what was tried and what is missing.
func TestLoadNCCLErrors(t *testing.T) {
	t.Setenv(EnvLibnccl, "/nonexistent/libnccl.so.2")
	_, err := loadNCCL()
	if err == nil || !strings.Contains(err.Error(), "no NCCL (libnccl.so.2) could be loaded") || !strings.Contains(err.Error(), "/nonexistent/libnccl.so.2") {
		t.Errorf("a missing file: %v", err)
	}
	t.Setenv(EnvLibnccl, "libm.so.6")
	_, err = loadNCCL()
	if err == nil || !strings.Contains(err.Error(), "has no symbol nccl") || !strings.Contains(err.Error(), "NCCL 2.23 or newer") {
		t.Errorf("a library that is not NCCL: %v", err)
	}
}
