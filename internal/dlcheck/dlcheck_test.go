package dlcheck

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// elfCopy writes the running test binary (an ELF file on Linux), cut to
// n bytes (all when n < 0), to a file in dir; withoutSections clears the
// section header table's place so that only the program headers say
// what the file holds.
func elfCopy(t *testing.T, dir, name string, n int, withoutSections bool) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if withoutSections { // ELF64: e_shoff at 0x28, e_shnum at 0x3c, e_shstrndx at 0x3e
		binary.LittleEndian.PutUint64(b[0x28:], 0)
		binary.LittleEndian.PutUint16(b[0x3c:], 0)
		binary.LittleEndian.PutUint16(b[0x3e:], 0)
	}
	if n >= 0 {
		b = b[:n]
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestCheck(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("checks ELF files on Linux only")
	}
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.so")
	os.WriteFile(garbage, []byte(strings.Repeat("not an ELF file ", 100)), 0o644)
	empty := filepath.Join(dir, "empty.so")
	os.WriteFile(empty, nil, 0o644)
	for _, c := range []struct {
		name, path, want string
	}{
		{"whole", elfCopy(t, dir, "whole.so", -1, false), ""},
		{"first 64 KiB", elfCopy(t, dir, "cut.so", 64<<10, false), "is not a loadable ELF file"},
		{"segments cut, no sections", elfCopy(t, dir, "segments.so", 64<<10, true), "is truncated: its segment"},
		{"garbage", garbage, "is not a loadable ELF file"},
		{"empty", empty, "is not a loadable ELF file"},
		{"missing: the loader's to report", filepath.Join(dir, "none.so"), ""},
		{"a soname found nowhere", "libnothing-here.so.1", ""},
	} {
		err := Check(c.path)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	// A bare soname is looked for in LD_LIBRARY_PATH.
	elfCopy(t, dir, "libcut.so.1", 64<<10, true)
	t.Setenv("LD_LIBRARY_PATH", dir)
	if err := Check("libcut.so.1"); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("a truncated library on LD_LIBRARY_PATH: %v", err)
	}
}
