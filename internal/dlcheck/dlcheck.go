// Package dlcheck checks a shared library's file before it is handed to
// the dynamic loader. dlopen maps an ELF file's segments as its program
// headers say; where the file is shorter than they claim (a truncated
// copy, an interrupted download), touching the missing pages kills the
// process with SIGBUS inside the loader, where no Go code can recover.
// Check reads the headers first and reports such a file as an error.
package dlcheck

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// Check returns an error when the library the loader would open for name
// is a file it cannot load whole: not ELF, or shorter than its segments
// and sections. A name with a slash is that file; a bare soname is looked
// up in LD_LIBRARY_PATH's directories, and one found nowhere there is the
// loader's to find (nil: system libraries are not checked). Off Linux it
// checks nothing.
func Check(name string) error {
	if runtime.GOOS != "linux" {
		return nil
	}
	path := name
	if !strings.Contains(name, "/") {
		path = ""
		for _, dir := range filepath.SplitList(os.Getenv("LD_LIBRARY_PATH")) {
			if p := filepath.Join(dir, name); dir != "" && fileExists(p) {
				path = p
				break
			}
		}
		if path == "" {
			return nil
		}
	}
	return checkFile(path)
}

func fileExists(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// checkFile checks the ELF file at path (a missing file is the loader's
// to report: it may search elsewhere).
func checkFile(path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return nil
	}
	size := uint64(st.Size())
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("%s (%d bytes) is not a loadable ELF file: %v", path, size, err)
	}
	defer f.Close()
	for i, p := range f.Progs {
		if p.Type == elf.PT_LOAD && p.Off+p.Filesz > size {
			return fmt.Errorf("%s is truncated: its segment %d needs bytes up to %d, the file has %d", path, i, p.Off+p.Filesz, size)
		}
	}
	for _, s := range f.Sections {
		if s.Type != elf.SHT_NOBITS && s.Type != elf.SHT_NULL && s.Offset+s.FileSize > size {
			return fmt.Errorf("%s is truncated: its section %s needs bytes up to %d, the file has %d", path, s.Name, s.Offset+s.FileSize, size)
		}
	}
	return nil
}
