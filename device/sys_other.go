//go:build !linux

package device

// adviseHugePages does nothing where there is no madvise(MADV_HUGEPAGE).
func adviseHugePages(b []byte) {}

// physicalMemory returns 0: unknown on this system.
func physicalMemory() int { return 0 }
