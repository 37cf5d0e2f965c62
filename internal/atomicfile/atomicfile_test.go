package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteFileReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	for _, content := range []string{"first version", "second"} {
		if err := WriteFile(path, []byte(content)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("read %q, %v; want %q", got, err, content)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("%d entries in the folder, want only the file: %v", len(entries), entries)
	}
}

func TestWriteFileMissingFolderLeavesNothing(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent", "out.txt")
	if err := WriteFile(path, []byte("x")); err == nil {
		t.Fatal("writing into a missing folder succeeded")
	}
}

func TestPathsNamingNoFileAreRefused(t *testing.T) {
	dir := t.TempDir()
	for _, path := range []string{"", dir + string(os.PathSeparator)} {
		if err := WriteFile(path, []byte("x")); err == nil {
			t.Errorf("WriteFile(%q) succeeded", path)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("refused writes left %v behind", entries)
	}
	if err := CheckPath(filepath.Join(dir, "out.txt")); err != nil {
		t.Errorf("CheckPath refused a file's path: %v", err)
	}
}
