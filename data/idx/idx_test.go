package idx

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/eagerflow/eagerflow/data/internal/arraytest"
	"github.com/eagerflow/eagerflow/tensor"
)

func golden(t *testing.T, name string) *tensor.Tensor {
	t.Helper()
	return arraytest.Golden(t, ReadFile, name)
}

func same[T tensor.Elem](t *testing.T, name string, x *tensor.Tensor, shape tensor.Shape, want []T) {
	t.Helper()
	arraytest.Same(t, name, x, shape, want)
}

// Every element type, gzipped and plain, reads as testdata/make.py wrote
// it, and images with labels make a dataset of rows.
func TestReadIDXFiles(t *testing.T) {
	img := make([]uint8, 24)
	for i := range img {
		img[i] = uint8(i * 10 % 256)
	}
	same(t, "images", golden(t, "images-idx3-ubyte"), tensor.Shape{2, 3, 4}, img)
	images := golden(t, "images-idx3-ubyte.gz")
	same(t, "gzipped images", images, tensor.Shape{2, 3, 4}, img)
	labels := golden(t, "labels-idx1-ubyte")
	same(t, "labels", labels, tensor.Shape{2}, []uint8{7, 2})
	same(t, "signed bytes", golden(t, "i8.idx"), tensor.Shape{4}, []int32{-128, -1, 0, 127})
	same(t, "int16", golden(t, "i16.idx"), tensor.Shape{2, 2}, []int32{-32768, 300, 7, 32767})
	same(t, "int32", golden(t, "i32.idx"), tensor.Shape{3}, []int32{-(1 << 31), 65536, 1})
	same(t, "float32", golden(t, "f32.idx"), tensor.Shape{3}, []float32{1.5, -0.25, 3e38})
	same(t, "float64", golden(t, "f64.idx"), tensor.Shape{1, 2}, []float64{1e-300, -2.5})

	ds, err := Dataset(images, labels)
	if err != nil {
		t.Fatal(err)
	}
	row := 0
	for e, err := range ds.All(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		same(t, "image row", e[0], tensor.Shape{3, 4}, img[12*row:12*row+12])
		same(t, "label row", e[1], tensor.Shape{}, []uint8{[]uint8{7, 2}[row]})
		row++
	}
	if row != 2 {
		t.Fatalf("%d rows", row)
	}
}

// Corrupt files are ErrFormat errors (truncations also io.ErrUnexpectedEOF).
func TestBadIDXFiles(t *testing.T) {
	good, err := os.ReadFile(filepath.Join("testdata", "images-idx3-ubyte"))
	if err != nil {
		t.Fatal(err)
	}
	gz, err := os.ReadFile(filepath.Join("testdata", "images-idx3-ubyte.gz"))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		file      []byte
		truncated bool
	}{
		{"truncated data", good[:len(good)-1], true},
		{"truncated dimensions", good[:9], true},
		{"truncated gzip", gz[:len(gz)-12], true},
		{"bad magic", append([]byte{1, 0}, good[2:]...), false},
		{"unknown type", append([]byte{0, 0, 0x0A}, good[3:]...), false},
		{"a huge shape", []byte{0, 0, 0x0E, 3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, false},
		{"empty", nil, true},
	} {
		_, err := Read(bytes.NewReader(c.file))
		if !errors.Is(err, ErrFormat) {
			t.Errorf("%s: %v, want ErrFormat", c.name, err)
		}
		if c.truncated && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
			t.Errorf("%s: %v does not say the file ends early", c.name, err)
		}
	}
}

// FuzzReadIDX: no input crashes the reader or makes it allocate what the
// input does not hold.
func FuzzReadIDX(f *testing.F) {
	for _, name := range []string{"images-idx3-ubyte", "i16.idx", "f64.idx"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		x, err := Read(bytes.NewReader(b))
		gzipped := len(b) > 1 && b[0] == 0x1f && b[1] == 0x8b // may expand
		if err == nil && !gzipped && x.NumElements() > len(b) {
			t.Fatalf("%v%v from %d bytes", x.DType(), x.Shape(), len(b))
		}
	})
}
