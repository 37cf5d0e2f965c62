package data

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/eagerflow/eagerflow/backend"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/tensor"
)

// CacheFile is Cache to a file: the first complete run writes its elements
// to path (a TFRecord file, written atomically, so an interrupted run leaves
// no cache), and runs that find the file read it instead of running the
// pipeline above, in this process or a later one. Delete the file when the
// data upstream changes.
func (d *Dataset) CacheFile(path string) *Dataset {
	stage := fmt.Sprintf("CacheFile(%q)", path)
	return d.derive(stage, func(epoch int) iterator {
		if _, err := os.Stat(path); err == nil {
			return cacheReader(stage, path)
		}
		up := d.open(epoch)
		w, werr := CreateWriter(path, WriterOptions{Compression: CompressionNone})
		finished := false
		return &funcIter{nextFn: func(ctx context.Context) (Element, error) {
			if werr != nil {
				return nil, &StageError{Stage: stage, Err: werr}
			}
			e, err := up.next(ctx)
			if err == io.EOF {
				finished = true
				if cerr := w.Close(); cerr != nil {
					return nil, &StageError{Stage: stage, Err: cerr}
				}
				return nil, io.EOF
			}
			if err != nil {
				return nil, stageErr(d.stage, err)
			}
			rec, err := encodeElement(e)
			if err == nil {
				err = w.Write(rec)
			}
			if err != nil {
				return nil, &StageError{Stage: stage, Err: err}
			}
			return e, nil
		}, closeFn: func() {
			if !finished && w != nil {
				w.Abort()
			}
			up.close()
		}}
	})
}

func cacheReader(stage, path string) iterator {
	var r *Reader
	return &funcIter{nextFn: func(context.Context) (Element, error) {
		if r == nil {
			var err error
			if r, err = OpenReader(path, ReaderOptions{Compression: CompressionNone}); err != nil {
				return nil, &StageError{Stage: stage, Err: err}
			}
		}
		rec, err := r.Next()
		if err == io.EOF {
			return nil, io.EOF
		}
		if err != nil {
			return nil, &StageError{Stage: stage, Err: err}
		}
		e, err := decodeElement(rec)
		if err != nil {
			return nil, &StageError{Stage: stage, Err: fmt.Errorf("record %d: %w", r.Index()-1, err)}
		}
		return e, nil
	}, closeFn: func() {
		if r != nil {
			r.Close()
		}
	}}
}

// encodeElement serializes an element: the component count, then for each
// its dtype, rank, dimensions and row-major bytes (varints throughout);
// components on a device are read from it.
func encodeElement(e Element) ([]byte, error) {
	b := binary.AppendUvarint(nil, uint64(len(e)))
	for i, c := range e {
		c, err := backend.OnHost(c)
		if err != nil {
			return nil, fmt.Errorf("component %d: %w", i, err)
		}
		b = append(b, byte(c.DType()))
		b = binary.AppendUvarint(b, uint64(c.Rank()))
		for _, d := range c.Shape() {
			b = binary.AppendUvarint(b, uint64(d))
		}
		raw := c.HostBytes()
		b = binary.AppendUvarint(b, uint64(len(raw)))
		b = append(b, raw...)
	}
	return b, nil
}

var errBadCache = errors.New("malformed cache record")

// decodeElement decodes encodeElement's form. Every count is bounded by
// the bytes left before anything is allocated, so a corrupt record costs
// no more memory than its own size.
func decodeElement(b []byte) (Element, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", errBadCache, fmt.Sprintf(format, args...))
	}
	uv := func(what string) (int, error) {
		v, n := binary.Uvarint(b)
		if n <= 0 || n != len(binary.AppendUvarint(nil, v)) {
			return 0, bad("%s: not a (minimal) varint", what)
		}
		b = b[n:]
		// A count of components, dimensions or bytes needs at least that
		// many bytes after it; a dimension may be large (with a zero
		// beside it) but fits an int.
		if v > uint64(len(b)) && what != "dimension" {
			return 0, bad("%s %d is more than the %d bytes left", what, v, len(b))
		}
		if v > 1<<62 {
			return 0, bad("%s %d is implausible", what, v)
		}
		return int(v), nil
	}
	n, err := uv("component count")
	if err != nil {
		return nil, err
	}
	e := make(Element, 0, n)
	for i := range n {
		if len(b) == 0 {
			return nil, bad("component %d of %d: no bytes left", i, n)
		}
		dt := tensor.DType(b[0])
		b = b[1:]
		if !dt.Valid() {
			return nil, bad("component %d: invalid dtype %d", i, dt)
		}
		rank, err := uv("rank")
		if err != nil {
			return nil, err
		}
		shape := make(tensor.Shape, rank)
		for d := range shape {
			if shape[d], err = uv("dimension"); err != nil {
				return nil, err
			}
		}
		want, ok := tensor.ByteSize(dt, shape)
		if !ok {
			return nil, bad("component %d: shape %v has more elements than an int can count", i, shape)
		}
		size, err := uv("byte count")
		if err != nil {
			return nil, err
		}
		if size != want {
			return nil, bad("component %d: %d bytes for %v%v, which needs %d", i, size, dt, shape, want)
		}
		t, err := tensor.Empty(device.Host(), dt, shape)
		if err != nil {
			return nil, bad("component %d: %v", i, err)
		}
		copy(t.HostBytes(), b[:size])
		b = b[size:]
		e = append(e, t)
	}
	if len(b) != 0 {
		return nil, bad("%d bytes after the last component", len(b))
	}
	return e, nil
}
