//go:build linux || darwin || freebsd || netbsd || openbsd

package nn

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockTemp takes the lock that marks f as a live save's temporary; it is
// released when f is closed or the process ends.
func lockTemp(f *os.File) error {
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
}

// stale reports whether no live save holds the temporary name.
func stale(name string) bool {
	f, err := os.Open(name)
	if err != nil {
		return false
	}
	defer f.Close()
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil
}
