package cuda

import (
	"io/fs"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/backend/cuda/internal/emu"
)

// Every embedded module splits into its header and entries, which put
// back together are the module (but for blank lines between entries),
// and each kernel's own module loads and holds the kernel (on the
// emulator, whose parser refuses what ptxas refuses that it knows of; a
// GPU's driver would compile every kernel, and the GPU script runs ptxas
// over the modules instead).
func TestKernelModules(t *testing.T) {
	d := testGPU(t)
	_, emulated := d.ctx.(*emu.Context)
	files, err := fs.Glob(modules, "ptx/*.ptx")
	if err != nil || len(files) == 0 {
		t.Fatalf("no embedded modules: %v", err)
	}
	kernels := 0
	for _, f := range files {
		family := strings.TrimSuffix(strings.TrimPrefix(f, "ptx/"), ".ptx")
		src, err := modules.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		k, err := splitModule(string(src))
		if err != nil {
			t.Fatalf("%s: %v", family, err)
		}
		whole := k.header
		n := strings.Count(string(src), ".visible .entry ")
		if len(k.entries) != n {
			t.Errorf("%s: %d entries indexed, %d in the module", family, len(k.entries), n)
		}
		for name, e := range k.entries {
			if !strings.Contains(string(src), e) {
				t.Errorf("%s: %s's text is not the module's", family, name)
			}
			whole += e
			text, err := kernelModule(family, name)
			if err != nil {
				t.Fatal(err)
			}
			if text != k.header+e {
				t.Errorf("%s/%s: the kernel's module is not the header and its entry", family, name)
			}
			if !emulated {
				continue
			}
			if _, err := d.function(family, name); err != nil {
				t.Errorf("%s/%s: %v", family, name, err)
			}
		}
		kernels += len(k.entries)
		squeeze := func(s string) string { return strings.ReplaceAll(s, "\n\n", "\n") }
		if len(squeeze(whole)) != len(squeeze(string(src))) {
			t.Errorf("%s: header and entries hold %d bytes, the module %d", family, len(squeeze(whole)), len(squeeze(string(src))))
		}
	}
	if _, err := kernelModule("binary", "no_such_kernel"); err == nil || !strings.Contains(err.Error(), "no kernel no_such_kernel") {
		t.Errorf("a missing kernel: %v", err)
	}
	if _, err := kernelModule("no_such_family", "add_f32_vv"); err == nil || !strings.Contains(err.Error(), "no kernel module") {
		t.Errorf("a missing family: %v", err)
	}
	t.Logf("%d kernels in %d modules, each loaded alone", kernels, len(files))
}
