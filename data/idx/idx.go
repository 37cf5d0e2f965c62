// Package idx reads the IDX files MNIST, Fashion-MNIST and their kin ship
// in (gzipped or not: the compression is recognised by its magic bytes).
//
//	images, err := idx.ReadFile("train-images-idx3-ubyte.gz") // uint8 [60000 28 28]
//	labels, err := idx.ReadFile("train-labels-idx1-ubyte.gz") // uint8 [60000]
//	ds, err := idx.Dataset(images, labels)                    // rows for a pipeline
//
// The format (LeCun and Cortes' description): two zero bytes, a type code
// (0x08 unsigned byte, 0x09 signed byte, 0x0B int16, 0x0C int32, 0x0D
// float32, 0x0E float64), the rank, each dimension as a big-endian
// uint32, then the elements, big-endian, row-major. Unsigned bytes read
// as Uint8; signed bytes and int16 widen to Int32 (eagerflow has no
// narrower signed type); int32, float32 and float64 read as themselves.
// Corrupt files are errors naming the file and what was wrong, never a
// panic, and a header claiming more data than the file holds allocates
// nothing beyond what is there.
package idx

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/eagerflow/eagerflow/data"
	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/tensor"
)

// ErrFormat is wrapped by every error about a file that is not valid IDX.
var ErrFormat = errors.New("idx: not a valid IDX file")

// ReadFile reads the IDX file at path, gzipped or not.
func ReadFile(path string) (*tensor.Tensor, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := Read(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Dataset is a data.Dataset of the rows of the given tensors (IDX arrays
// read by ReadFile, sharing their first dimension: images and labels).
func Dataset(arrays ...*tensor.Tensor) (*data.Dataset, error) {
	if len(arrays) == 0 {
		return nil, errors.New("idx: Dataset: no arrays")
	}
	for i, a := range arrays {
		if a == nil {
			return nil, fmt.Errorf("idx: Dataset: array %d is nil", i)
		}
	}
	return data.FromSlices(arrays...)
}

// elem is an IDX element type: its size and the dtype it reads as.
type elem struct {
	size  int
	dtype tensor.DType
	name  string
}

var elems = map[byte]elem{
	0x08: {1, tensor.Uint8, "unsigned byte"},
	0x09: {1, tensor.Int32, "signed byte"},
	0x0B: {2, tensor.Int32, "int16"},
	0x0C: {4, tensor.Int32, "int32"},
	0x0D: {4, tensor.Float32, "float32"},
	0x0E: {8, tensor.Float64, "float64"},
}

// Read reads one IDX array from r (gzipped or not) into a tensor on the
// host.
func Read(r io.Reader) (*tensor.Tensor, error) {
	if r == nil {
		return nil, errors.New("idx: Read: the reader is nil")
	}
	br := bufio.NewReader(r)
	if head, err := br.Peek(2); err == nil && head[0] == 0x1f && head[1] == 0x8b {
		z, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%w: gzip: %w", ErrFormat, err)
		}
		defer z.Close()
		return read(z)
	}
	return read(br)
}

func read(r io.Reader) (*tensor.Tensor, error) {
	var h [4]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return nil, fmt.Errorf("%w: reading the magic number: %w", ErrFormat, err)
	}
	if h[0] != 0 || h[1] != 0 {
		return nil, fmt.Errorf("%w: the magic number % x does not start with two zero bytes", ErrFormat, h)
	}
	e, ok := elems[h[2]]
	if !ok {
		return nil, fmt.Errorf("%w: unknown type code 0x%02x", ErrFormat, h[2])
	}
	shape := make(tensor.Shape, h[3])
	n := 1
	for d := range shape {
		var b [4]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return nil, fmt.Errorf("%w: reading dimension %d of %d: %w", ErrFormat, d, len(shape), err)
		}
		shape[d] = int(binary.BigEndian.Uint32(b[:]))
		if shape[d] > 0 && n > math.MaxInt/e.size/shape[d] {
			return nil, fmt.Errorf("%w: shape %v has more bytes than an int can count", ErrFormat, shape[:d+1])
		}
		n *= shape[d]
	}
	// Read what is there before allocating what the header claims.
	raw, err := io.ReadAll(io.LimitReader(r, int64(n*e.size)))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	if len(raw) < n*e.size {
		return nil, fmt.Errorf("%w: %d %s elements of shape %v need %d bytes, the file has %d: %w",
			ErrFormat, n, e.name, shape, n*e.size, len(raw), io.ErrUnexpectedEOF)
	}
	t, err := tensor.Empty(device.Host(), e.dtype, shape)
	if err != nil {
		return nil, err
	}
	out := t.HostBytes()
	switch h[2] {
	case 0x08:
		copy(out, raw)
	case 0x09:
		for i, v := range raw {
			binary.NativeEndian.PutUint32(out[4*i:], uint32(int32(int8(v))))
		}
	case 0x0B:
		for i := range n {
			binary.NativeEndian.PutUint32(out[4*i:], uint32(int32(int16(binary.BigEndian.Uint16(raw[2*i:])))))
		}
	case 0x0C, 0x0D:
		for i := range n {
			binary.NativeEndian.PutUint32(out[4*i:], binary.BigEndian.Uint32(raw[4*i:]))
		}
	case 0x0E:
		for i := range n {
			binary.NativeEndian.PutUint64(out[8*i:], binary.BigEndian.Uint64(raw[8*i:]))
		}
	}
	return t, nil
}
