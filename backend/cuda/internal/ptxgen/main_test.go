package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/cu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
	"github.com/eagerflow/eagerflow/backend/cuda/internal/kernels"
)

// The committed modules are what the generator writes (run `go generate
// ./backend/cuda` after changing a kernel), and every kernel in them loads
// in the emulator, which implements exactly what the generator writes.
func TestCommittedModulesMatchAndLoad(t *testing.T) {
	ctx, err := emu.New(emu.DefaultConfig).Retain(0)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range kernels.Families() {
		want := f.Module()
		got, err := os.ReadFile(filepath.Join("..", "..", "ptx", f.Name+".ptx"))
		if err != nil || string(got) != want {
			t.Errorf("backend/cuda/ptx/%s.ptx differs from the generator's output (%v); run `go generate ./backend/cuda`", f.Name, err)
			continue
		}
		err = ctx.Do(func() error {
			m, err := ctx.ModuleLoad(want)
			if err != nil {
				return err
			}
			for _, k := range f.Kernels {
				if _, err := ctx.Function(m, k.Name()); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Errorf("module %s: %v", f.Name, err)
		}
	}
	var _ cu.Context = ctx
}
