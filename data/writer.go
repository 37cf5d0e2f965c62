package data

import (
	"bufio"
	"compress/gzip"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/eagerflow/eagerflow/internal/atomicfile"
)

// WriterOptions configure a TFRecord writer (CompressionAuto means by the
// file's extension, else none).
type WriterOptions struct {
	Compression Compression
}

// Writer writes TFRecord records. A record written is a record read: the
// framing and CRCs are TensorFlow's. Not safe for concurrent use.
type Writer struct {
	bw     *bufio.Writer
	zw     io.WriteCloser // compressor, or nil
	file   *os.File       // with CreateWriter: the temporary file
	path   string         // final name
	n      int
	closed bool
}

// CreateWriter writes a TFRecord file atomically: records go to a
// temporary file in the same directory, which Close flushes, syncs and
// renames to path. A writer that fails or is never closed leaves any
// previous file at path untouched (Abort removes the temporary file).
func CreateWriter(path string, opts WriterOptions) (*Writer, error) {
	if opts.Compression == CompressionAuto {
		switch strings.ToLower(filepath.Ext(path)) {
		case ".gz", ".gzip":
			opts.Compression = CompressionGZIP
		case ".zlib", ".zz":
			opts.Compression = CompressionZLIB
		}
	}
	if err := atomicfile.CheckPath(path); err != nil {
		return nil, fmt.Errorf("data: CreateWriter: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	w := NewWriter(f, opts)
	w.file, w.path = f, path
	return w, nil
}

// NewWriter writes TFRecord records to dst. Close flushes (and finishes
// the compressed stream) but does not close dst.
func NewWriter(dst io.Writer, opts WriterOptions) *Writer {
	if dst == nil {
		dst = nilDestination{} // its writes fail, saying so
	}
	w := &Writer{}
	switch opts.Compression {
	case CompressionGZIP:
		w.zw = gzip.NewWriter(dst)
		dst = w.zw
	case CompressionZLIB:
		w.zw = zlib.NewWriter(dst)
		dst = w.zw
	}
	w.bw = bufio.NewWriterSize(dst, 256<<10)
	return w
}

// nilDestination stands for a nil io.Writer given to NewWriter.
type nilDestination struct{}

func (nilDestination) Write([]byte) (int, error) {
	return 0, errors.New("data: the TFRecord writer's destination is nil")
}

// Write appends one record.
func (w *Writer) Write(record []byte) error {
	if w.closed {
		return errors.New("data: write to a closed TFRecord writer")
	}
	var hdr [headerSize]byte
	binary.LittleEndian.PutUint64(hdr[:8], uint64(len(record)))
	binary.LittleEndian.PutUint32(hdr[8:], maskedCRC(hdr[:8]))
	var tail [4]byte
	binary.LittleEndian.PutUint32(tail[:], maskedCRC(record))
	for _, b := range [][]byte{hdr[:], record, tail[:]} {
		if _, err := w.bw.Write(b); err != nil {
			return fmt.Errorf("data: writing record %d: %w", w.n, err)
		}
	}
	w.n++
	return nil
}

// Count returns the number of records written.
func (w *Writer) Count() int { return w.n }

// Flush writes buffered records through (not the compressor's buffer).
func (w *Writer) Flush() error { return w.bw.Flush() }

// Close flushes everything; for CreateWriter it then syncs and renames the
// file into place. After an error the previous file at the path is intact.
func (w *Writer) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	err := w.bw.Flush()
	if w.zw != nil {
		err = errors.Join(err, w.zw.Close())
	}
	if w.file == nil {
		return wrap(err)
	}
	err = errors.Join(err, w.file.Sync(), w.file.Close())
	if err == nil {
		err = os.Rename(w.file.Name(), w.path)
	}
	if err != nil {
		os.Remove(w.file.Name())
	}
	return wrap(err)
}

// Abort discards a CreateWriter's temporary file without touching path.
func (w *Writer) Abort() {
	if w.closed {
		return
	}
	w.closed = true
	if w.file != nil {
		w.file.Close()
		os.Remove(w.file.Name())
	}
}

func wrap(err error) error {
	if err != nil {
		return fmt.Errorf("data: %w", err)
	}
	return nil
}
