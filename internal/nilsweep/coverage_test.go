package nilsweep

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// exempt are the packages with no sweep of their own, and why.
var exempt = map[string]string{
	"backend/cpu":       "kernels registered by name; reached through ops, whose sweep covers them",
	"backend/move":      "kernels registered by name; reached through ops",
	"backend/cuda":      "Open and Count take ordinals; kernels are reached through ops (conformance runs them)",
	"backend/cuda/nccl": "Open checks its two arguments; its collectives share collective.Ops with Single, which is swept",
	"collective/mpi":    "Open takes nothing; its collectives share collective.Ops with Single, which is swept",
	"conformance":       "a test harness: Run takes a *testing.T",
	"data/cmd/tfrecord": "a command",
	".":                 "a doc package",
}

// Every package a user imports has a sweep test (a call of Covered), so a
// new package cannot ship functions that crash on nil.
func TestEveryPackageIsSwept(t *testing.T) {
	root := filepath.Join("..", "..")
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if !d.IsDir() {
			return nil
		}
		switch top := strings.SplitN(rel, string(filepath.Separator), 2)[0]; {
		case strings.HasPrefix(d.Name(), ".") && rel != ".", d.Name() == "testdata", top == "internal", top == "examples",
			top == "bench", strings.Contains(rel, "internal"):
			return filepath.SkipDir
		}
		if rel == "notebook" {
			return filepath.SkipDir // a module of its own
		}
		entries, _ := os.ReadDir(path)
		hasGo, swept := false, false
		for _, e := range entries {
			name := e.Name()
			if strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
				hasGo = true
			}
			if strings.HasSuffix(name, "_test.go") {
				b, _ := os.ReadFile(filepath.Join(path, name))
				swept = swept || strings.Contains(string(b), "nilsweep.Covered(")
			}
		}
		if hasGo && !swept && exempt[filepath.ToSlash(rel)] == "" {
			t.Errorf("package %s has no nil-argument sweep (nilsweep.Covered in a test), and no reason in exempt", rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
