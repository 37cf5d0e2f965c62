//go:build linux

package device

import (
	"bufio"
	"bytes"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The limits on a process's memory besides the machine's RAM: its
// cgroup's memory limit (a container's), and the address-space and data
// limits of ulimit -v and -d. The CPU device gives no buffer beyond the
// least of them (memoryLimit), and none beyond what RLIMIT_AS still
// leaves unmapped (addressSpaceLeft): past either the Go runtime ends the
// process ("fatal error: runtime: out of memory") instead of returning an
// error.

// memoryLimit returns the least of the machine's RAM, the cgroup memory
// limits on this process and RLIMIT_AS and RLIMIT_DATA, in bytes; 0 when
// none is known.
func memoryLimit() int {
	limit := uint64(physicalMemory())
	least := func(v uint64) {
		if v > 0 && (limit == 0 || v < limit) {
			limit = v
		}
	}
	least(cgroupLimit())
	for _, res := range []int{unix.RLIMIT_AS, unix.RLIMIT_DATA} {
		var r unix.Rlimit
		if unix.Getrlimit(res, &r) == nil && r.Cur != unix.RLIM_INFINITY {
			least(r.Cur)
		}
	}
	return int(min(limit, math.MaxInt))
}

// cgroupLimit returns the least memory limit of this process's cgroup and
// its ancestors (cgroup v2's memory.max, v1's memory.limit_in_bytes), 0
// when there is none.
func cgroupLimit() uint64 {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return 0
	}
	var least uint64
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		// "hierarchy-ID:controllers:path"; v2 is "0::path".
		f := strings.SplitN(sc.Text(), ":", 3)
		if len(f) != 3 {
			continue
		}
		var root, file string
		switch {
		case f[0] == "0" && f[1] == "":
			root, file = "/sys/fs/cgroup", "memory.max"
		case slices.Contains(strings.Split(f[1], ","), "memory"):
			root, file = "/sys/fs/cgroup/memory", "memory.limit_in_bytes"
		default:
			continue
		}
		for dir := f[2]; ; dir = filepath.Dir(dir) {
			if v := readLimit(filepath.Join(root, dir, file)); v > 0 && (least == 0 || v < least) {
				least = v
			}
			if dir == "/" || dir == "." || dir == "" {
				break
			}
		}
	}
	return least
}

// readLimit reads a cgroup limit file: a number of bytes, or "max" (v2)
// or a number near 2^63 (v1) for none, which is 0 here.
func readLimit(path string) uint64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	v, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
	if err != nil || v >= 1<<62 {
		return 0
	}
	return v
}

// addressSpaceLeft returns how many more bytes RLIMIT_AS lets this
// process map (the limit less its mapped size, /proc/self/statm's first
// field), or -1 when there is no such limit.
func addressSpaceLeft() int {
	var r unix.Rlimit
	if unix.Getrlimit(unix.RLIMIT_AS, &r) != nil || r.Cur == unix.RLIM_INFINITY {
		return -1
	}
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return -1
	}
	pages, err := strconv.ParseUint(strings.Fields(string(b) + " 0")[0], 10, 64)
	if err != nil {
		return -1
	}
	mapped := pages * uint64(os.Getpagesize())
	if mapped >= r.Cur {
		return 0
	}
	return int(min(r.Cur-mapped, math.MaxInt))
}
