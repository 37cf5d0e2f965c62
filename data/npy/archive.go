package npy

import (
	"archive/zip"
	"bufio"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/tensor"
)

// ReadArchiveFile reads every array of the .npz archive at path (np.savez
// or np.savez_compressed), by name: the member "x.npy" is "x".
func ReadArchiveFile(path string) (map[string]*tensor.Tensor, error) {
	z, err := zip.OpenReader(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	defer z.Close()
	out, err := readArchive(&z.Reader)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// ReadArchive reads every array of a .npz archive of size bytes read from
// r.
func ReadArchive(r io.ReaderAt, size int64) (map[string]*tensor.Tensor, error) {
	if r == nil {
		return nil, errors.New("npy: ReadArchive: the reader is nil")
	}
	z, err := zip.NewReader(r, size)
	if err != nil {
		return nil, err
	}
	return readArchive(z)
}

func readArchive(z *zip.Reader) (map[string]*tensor.Tensor, error) {
	out := map[string]*tensor.Tensor{}
	for _, f := range z.File {
		name, ok := strings.CutSuffix(f.Name, ".npy")
		if !ok {
			return nil, fmt.Errorf("%w: archive member %q is not a .npy array", ErrFormat, f.Name)
		}
		if _, dup := out[name]; dup {
			return nil, fmt.Errorf("%w: the archive holds %q twice", ErrFormat, f.Name)
		}
		rc, err := f.Open()
		if err != nil {
			return nil, fmt.Errorf("member %q: %w", f.Name, err)
		}
		br := bufio.NewReader(rc)
		t, err := Read(br)
		if err == nil {
			// Reading to the end checks the member's CRC-32.
			var rest int64
			if rest, err = io.Copy(io.Discard, br); err == nil && rest > 0 {
				err = fmt.Errorf("%w: %d bytes after the array's data", ErrFormat, rest)
			}
		}
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("member %q: %w", f.Name, err)
		}
		out[name] = t
	}
	return out, nil
}

// ArchiveDataset is a data.Dataset of the rows of the named arrays of the
// .npz archive at path (element i holds row i of each, in the order
// named; all share their first dimension); with no names, every array in
// name order.
func ArchiveDataset(path string, names ...string) (*data.Dataset, error) {
	arrays, err := ReadArchiveFile(path)
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		for n := range arrays {
			names = append(names, n)
		}
		sort.Strings(names)
	}
	comps := make([]*tensor.Tensor, len(names))
	for i, n := range names {
		t, ok := arrays[n]
		if !ok {
			return nil, fmt.Errorf("%s: no array %q in the archive", path, n)
		}
		comps[i] = t
	}
	ds, err := data.FromSlices(comps...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return ds, nil
}
