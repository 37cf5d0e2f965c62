package main

import (
	"bytes"
	"os"
	"testing"
)

// The committed assembly is what the generator writes: an edit to either
// alone fails here (run `go generate ./ops`).
func TestCommittedAssemblyIsGenerated(t *testing.T) {
	committed, err := os.ReadFile("../../gemm_amd64.s")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(committed, generate()) {
		t.Fatal("ops/gemm_amd64.s differs from the generator's output; run `go generate ./ops`")
	}
}
