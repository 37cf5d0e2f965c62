package npy

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/eagerflow/eagerflow/data/internal/arraytest"
	"github.com/eagerflow/eagerflow/tensor"
)

// golden reads a file of testdata (written by NumPy: testdata/make.py).
func golden(t *testing.T, name string) *tensor.Tensor {
	t.Helper()
	return arraytest.Golden(t, ReadFile, name)
}

func same[T tensor.Elem](t *testing.T, name string, x *tensor.Tensor, shape tensor.Shape, want []T) {
	t.Helper()
	arraytest.Same(t, name, x, shape, want)
}

// Every dtype eagerflow has, both byte orders, Fortran order, a scalar,
// an empty array and format version 2.0 read as NumPy wrote them.
func TestReadNumPyFiles(t *testing.T) {
	same(t, "f4", golden(t, "f4.npy"), tensor.Shape{2, 3}, []float32{-1, -0.5, 0, 0.5, 1, 1.5})
	same(t, "f8 big-endian", golden(t, "f8_big.npy"), tensor.Shape{2, 2}, []float64{1.5, -2.25, 3e300, math.Copysign(0, -1)})
	same(t, "i4", golden(t, "i4.npy"), tensor.Shape{1, 3}, []int32{-7, 0, math.MaxInt32})
	same(t, "i8 big-endian", golden(t, "i8_big.npy"), tensor.Shape{2}, []int64{-(1 << 40), 5})
	u8 := make([]uint8, 24)
	for i := range u8 {
		u8[i] = uint8(i)
	}
	same(t, "u1", golden(t, "u1.npy"), tensor.Shape{2, 3, 4}, u8)
	same(t, "b1", golden(t, "b1.npy"), tensor.Shape{3}, []bool{true, false, true})
	// float16's bits as NumPy wrote them: 0.1, -2.5, 65504, 6e-8 (the least
	// subnormal), -0, inf; and big-endian 1.5, -1000.5.
	same(t, "f2", golden(t, "f2.npy"), tensor.Shape{2, 3}, []tensor.F16{0x2e66, 0xc100, 0x7bff, 0x0001, 0x8000, 0x7c00})
	same(t, "f2 big-endian", golden(t, "f2_big.npy"), tensor.Shape{2}, []tensor.F16{0x3e00, 0xe3d1})
	i64 := make([]int64, 24)
	for i := range i64 {
		i64[i] = int64(i)
	}
	same(t, "Fortran order", golden(t, "fortran.npy"), tensor.Shape{2, 3, 4}, i64)
	same(t, "scalar", golden(t, "scalar.npy"), tensor.Shape{}, []float64{3.25})
	same(t, "empty", golden(t, "empty.npy"), tensor.Shape{0, 3}, []float32{})
	same(t, "version 2.0", golden(t, "v2.npy"), tensor.Shape{2}, []float32{1, 2})
	if !math.Signbit(tensor.ToSlice[float64](golden(t, "f8_big.npy"))[3]) {
		t.Error("-0 lost its sign")
	}
}

// Archives (stored and compressed) read by name, and as a dataset of rows.
func TestReadArchives(t *testing.T) {
	x := make([]float32, 12)
	for i := range x {
		x[i] = float32(i)
	}
	for _, name := range []string{"archive.npz", "compressed.npz"} {
		path := filepath.Join("testdata", name)
		arrays, err := ReadArchiveFile(path)
		if err != nil {
			t.Fatal(err)
		}
		same(t, name+" x", arrays["x"], tensor.Shape{4, 3}, x)
		same(t, name+" y", arrays["y"], tensor.Shape{4}, []int64{0, 1, 1, 0})
		ds, err := ArchiveDataset(path, "x", "y")
		if err != nil {
			t.Fatal(err)
		}
		rows := 0
		for e, err := range ds.All(context.Background()) {
			if err != nil {
				t.Fatal(err)
			}
			same(t, name+" row", e[0], tensor.Shape{3}, x[3*rows:3*rows+3])
			rows++
		}
		if rows != 4 {
			t.Fatalf("%s: %d rows", name, rows)
		}
		if _, err := ArchiveDataset(path, "z"); err == nil {
			t.Fatal("a missing array gave no error")
		}
	}
}

// What eagerflow cannot hold, and corrupt files, are errors that say what
// was wrong, never panics.
func TestBadFiles(t *testing.T) {
	for _, c := range []struct{ file, says string }{
		{"object.npy", "object array"},
		{"i2.npy", `dtype "<i2"`},
	} {
		_, err := ReadFile(filepath.Join("testdata", c.file))
		if !errors.Is(err, ErrFormat) || !bytes.Contains([]byte(err.Error()), []byte(c.says)) {
			t.Errorf("%s: %v, want an ErrFormat saying %q", c.file, err, c.says)
		}
	}
	good, err := os.ReadFile(filepath.Join("testdata", "f4.npy"))
	if err != nil {
		t.Fatal(err)
	}
	header := func(h string) []byte {
		b := append([]byte(magic), 1, 0, byte(len(h)), 0)
		return append(b, h...)
	}
	for _, c := range []struct {
		name string
		file []byte
	}{
		{"truncated data", good[:len(good)-3]},
		{"truncated header", good[:20]},
		{"no magic", []byte("PK\x03\x04 not an array")},
		{"version 9", append([]byte(magic), 9, 0, 0, 0)},
		{"no shape", header("{'descr': '<f4', 'fortran_order': False, }")},
		{"a huge shape", header("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000, 1000000000), }")},
		{"a bad bool", append(header("{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }"), 1, 7)},
		{"an unknown key", header("{'descr': '<f4', 'fortran_order': False, 'shape': (), 'x': 1}")},
		{"no byte order", header("{'descr': 'f4', 'fortran_order': False, 'shape': (), }")},
	} {
		_, err := Read(bytes.NewReader(c.file))
		if !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v, want ErrFormat", c.name, err)
		}
		if c.name == "truncated data" && !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("truncated data: %v does not wrap io.ErrUnexpectedEOF", err)
		}
	}
}

// FuzzRead: no input crashes the reader or makes it allocate what the
// input does not hold.
func FuzzRead(f *testing.F) {
	for _, name := range []string{"f4.npy", "fortran.npy", "b1.npy", "v2.npy", "object.npy"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := Read(bytes.NewReader(b))
		if err == nil && x.NumElements()*x.DType().Size() > len(b) {
			t.Fatalf("%v%v from %d bytes", x.DType(), x.Shape(), len(b))
		}
	})
}
