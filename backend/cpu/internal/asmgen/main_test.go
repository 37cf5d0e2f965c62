package main

import (
	"bytes"
	"os"
	"testing"
)

// The committed assembly and Go declarations are what the generator
// writes: an edit to either alone fails here (run `go generate ./backend/cpu`).
func TestCommittedFilesAreGenerated(t *testing.T) {
	for file, want := range map[string][]byte{"gemm_amd64.s": generate(), "gemm_kernels_amd64.go": generateGo()} {
		committed, err := os.ReadFile("../../" + file)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(committed, want) {
			t.Errorf("backend/cpu/%s differs from the generator's output; run `go generate ./backend/cpu`", file)
		}
	}
}
