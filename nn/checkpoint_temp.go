package nn

import (
	"os"
	"path/filepath"
	"strings"
)

// A save writes a temporary file beside its target and renames it over the
// target when whole. A save killed midway leaves its temporary behind; the
// next save or load of the same target removes it. A temporary is stale
// when no live save holds its lock (flock on Linux and the BSDs, released
// by the kernel when the writer dies; elsewhere, when it is older than
// staleAge).

// tempPrefix is the name prefix of path's temporaries.
func tempPrefix(path string) string { return "." + filepath.Base(path) + ".tmp-" }

// removeStaleTemps removes the temporaries of path that no live save
// holds. Errors are ignored: a temporary that cannot be removed now will be
// tried again next time.
func removeStaleTemps(path string) {
	dir, prefix := filepath.Dir(path), tempPrefix(path)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		name := filepath.Join(dir, e.Name())
		if stale(name) {
			os.Remove(name)
		}
	}
}
