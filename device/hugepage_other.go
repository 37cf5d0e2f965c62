//go:build !linux

package device

// adviseHugePages does nothing where there is no madvise(MADV_HUGEPAGE).
func adviseHugePages(b []byte) {}
