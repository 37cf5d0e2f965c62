//go:build !linux

package device

// adviseHugePages does nothing where there is no madvise(MADV_HUGEPAGE).
func adviseHugePages(b []byte) {}

// physicalMemory returns 0: unknown on this system.
func physicalMemory() int { return 0 }

// memoryLimit returns 0: unknown on this system (see memlimit_linux.go).
func memoryLimit() int { return 0 }

// addressSpaceLeft returns -1: no limit known on this system.
func addressSpaceLeft() int { return -1 }
