//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package nn

import (
	"os"
	"time"
)

// staleAge is how old a temporary must be to count as a dead save's where
// there is no flock.
const staleAge = time.Hour

// lockTemp does nothing where there is no flock.
func lockTemp(*os.File) error { return nil }

// stale reports whether the temporary name is older than staleAge.
func stale(name string) bool {
	fi, err := os.Stat(name)
	return err == nil && time.Since(fi.ModTime()) > staleAge
}
