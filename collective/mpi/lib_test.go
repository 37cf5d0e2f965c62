package mpi

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A library named by EAGERFLOW_MPI_LIB that cannot be loaded is an error
// naming the file and why: missing, empty, garbage, or a truncated copy
// of libmpi (which the loader would map past its end and die of SIGBUS).
func TestUnloadableLibrariesAreErrors(t *testing.T) {
	dir := t.TempDir()
	garbage, empty := filepath.Join(dir, "garbage.so"), filepath.Join(dir, "empty.so")
	os.WriteFile(garbage, []byte(strings.Repeat("garbage ", 1000)), 0o644)
	os.WriteFile(empty, nil, 0o644)
	cases := map[string]string{
		filepath.Join(dir, "missing.so"): "missing.so",
		empty:                            "empty.so",
		garbage:                          "garbage.so",
	}
	for _, lib := range []string{"/usr/lib/x86_64-linux-gnu/libmpi.so.40", "/usr/lib/aarch64-linux-gnu/libmpi.so.40"} {
		b, err := os.ReadFile(lib)
		if err != nil || len(b) < 64<<10 {
			continue
		}
		cut := filepath.Join(dir, "libmpi-cut.so.40")
		if err := os.WriteFile(cut, b[:64<<10], 0o644); err != nil {
			t.Fatal(err)
		}
		cases[cut] = "libmpi-cut.so.40 (65536 bytes) is not a loadable ELF file"
	}
	for path, want := range cases {
		t.Setenv("EAGERFLOW_MPI_LIB", path)
		if _, err := openLib(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("EAGERFLOW_MPI_LIB=%s: %v, want an error containing %q", path, err, want)
		}
	}
}
