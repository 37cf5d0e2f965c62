// Command ptxgen writes the CUDA backend's kernels, one PTX module per
// family (package kernels), into a directory: backend/cuda/ptx, which the
// backend embeds. Run it through `go generate ./backend/cuda`; the files
// are committed, and a test fails when they differ from what it writes.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
)

func main() {
	out := flag.String("out", "ptx", "directory for the .ptx files")
	flag.Parse()
	if err := write(*out); err != nil {
		fmt.Fprintln(os.Stderr, "ptxgen:", err)
		os.Exit(1)
	}
}

// write writes every family's module to dir/<family>.ptx.
func write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, f := range kernels.Families() {
		if err := os.WriteFile(filepath.Join(dir, f.Name+".ptx"), []byte(f.Module()), 0o644); err != nil {
			return err
		}
	}
	return nil
}
