//go:build linux

package device

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMemoryLimits(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		text string
		want uint64
	}{{"max\n", 0}, {"9223372036854771712\n", 0}, {"8589934592\n", 8 << 30}, {"garbage", 0}} {
		p := filepath.Join(dir, "memory.max")
		os.WriteFile(p, []byte(c.text), 0o644)
		if got := readLimit(p); got != c.want {
			t.Errorf("readLimit(%q) = %d, want %d", c.text, got, c.want)
		}
	}
	if readLimit(filepath.Join(dir, "none")) != 0 {
		t.Error("a missing file is a limit")
	}
	if m, ram := memoryLimit(), physicalMemory(); m <= 0 || (ram > 0 && m > ram) {
		t.Errorf("memoryLimit %d with %d bytes of RAM", m, ram)
	}
	if Host().MaxAlloc() != memoryLimit() {
		t.Errorf("the host's MaxAlloc %d is not memoryLimit %d", Host().MaxAlloc(), memoryLimit())
	}
}
