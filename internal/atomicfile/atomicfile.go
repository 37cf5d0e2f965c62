// Package atomicfile writes files whole or not at all: through a temporary
// file in the target's folder and a rename, so a reader (or a crash) never
// sees half a file.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// CheckPath returns an error for a path that names no file to write: an
// empty one, or one that ends in a separator (a folder's).
func CheckPath(path string) error {
	if path == "" || os.IsPathSeparator(path[len(path)-1]) {
		return fmt.Errorf("%q names no file to write", path)
	}
	return nil
}

// WriteFile writes data to path with permissions 0644. On any error path
// is left as it was and the temporary is removed.
func WriteFile(path string, data []byte) error {
	if err := CheckPath(path); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
