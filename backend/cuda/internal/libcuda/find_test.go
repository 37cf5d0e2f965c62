//go:build linux && (amd64 || arm64)

package libcuda

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A pip wheel's library directory is searched, the override first; files
// that do not load are named in the error with why.
func TestSearchFindsWheelsAndReportsFailures(t *testing.T) {
	venv := t.TempDir()
	lib := filepath.Join(venv, "lib", "python3.12", "site-packages", "nvidia", "cu13", "lib")
	if err := os.MkdirAll(lib, 0o755); err != nil {
		t.Fatal(err)
	}
	fake := filepath.Join(lib, "libcublas.so.13")
	if err := os.WriteFile(fake, []byte("not a shared object"), 0o644); err != nil {
		t.Fatal(err)
	}
	extra := t.TempDir()
	t.Setenv("VIRTUAL_ENV", venv)
	t.Setenv(EnvPath, extra)
	dirs := searchDirs()
	if len(dirs) < 2 || dirs[0] != extra {
		t.Fatalf("search starts %v, want %s first", dirs, extra)
	}
	got := candidates("", cublasNames, dirs)
	if len(got) == 0 || got[0] != fake {
		t.Fatalf("candidates %v, want %s first", got, fake)
	}
	if c := candidates("/x/libcuda.so.1", cudaNames, dirs); len(c) != 1 || c[0] != "/x/libcuda.so.1" {
		t.Fatalf("with an override: %v", c)
	}
	_, _, err := open("cuBLAS", []string{fake})
	if err == nil || !strings.Contains(err.Error(), fake) || !strings.Contains(err.Error(), EnvPath) {
		t.Fatalf("loading a file that is no library: %v", err)
	}
}

// A missing driver is an error from Load naming the file, never a panic.
func TestLoadWithoutDriver(t *testing.T) {
	t.Setenv(EnvLibcuda, filepath.Join(t.TempDir(), "libcuda.so.1"))
	if _, err := load(); err == nil || !strings.Contains(err.Error(), "libcuda.so.1") {
		t.Fatalf("load with no driver: %v", err)
	}
}
