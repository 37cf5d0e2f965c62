package data

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// Compression of a TFRecord file: CompressionAuto (the zero value: by
// file extension when writing, by sniffing the first bytes when reading),
// CompressionNone, CompressionGZIP or CompressionZLIB.
type Compression uint8

// Compressions. CompressionAuto picks by file extension (.gz, .gzip,
// .zlib, .zz) and, failing that, by the file's first bytes.
const (
	CompressionAuto Compression = iota
	CompressionNone
	CompressionGZIP
	CompressionZLIB
)

func (c Compression) String() string {
	return [...]string{"auto", "none", "gzip", "zlib"}[min(int(c), 3)]
}

// ParseCompression reads "auto", "none", "gzip" or "zlib".
func ParseCompression(s string) (Compression, error) {
	switch strings.ToLower(s) {
	case "auto", "":
		return CompressionAuto, nil
	case "none":
		return CompressionNone, nil
	case "gzip":
		return CompressionGZIP, nil
	case "zlib":
		return CompressionZLIB, nil
	}
	return 0, fmt.Errorf("data: unknown compression %q (want auto, none, gzip or zlib)", s)
}

// Sentinels of corrupt TFRecord data, matched with errors.Is on a
// *RecordError. Truncations also match io.ErrUnexpectedEOF.
var (
	ErrTruncatedHeader   = errors.New("truncated_header")
	ErrLengthCRCMismatch = errors.New("length_crc_mismatch")
	ErrTruncatedData     = errors.New("truncated_data")
	ErrDataCRCMismatch   = errors.New("data_crc_mismatch")
)

// RecordError reports a corrupt or truncated record: the file, the index of
// the record (the number of records read before it), and the byte offset of
// its header in the decompressed stream.
type RecordError struct {
	File   string
	Index  int
	Offset int64
	Kind   error // one of the sentinels above
	Detail string
}

func (e *RecordError) Error() string {
	return fmt.Sprintf("data: %s: record %d at offset %d: %v: %s", e.File, e.Index, e.Offset, e.Kind, e.Detail)
}

// Unwrap returns the sentinel, and io.ErrUnexpectedEOF for truncations.
func (e *RecordError) Unwrap() []error {
	if e.Kind == ErrTruncatedHeader || e.Kind == ErrTruncatedData {
		return []error{e.Kind, io.ErrUnexpectedEOF}
	}
	return []error{e.Kind}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// maskedCRC is TFRecord's masked CRC-32C.
func maskedCRC(b []byte) uint32 {
	c := crc32.Checksum(b, castagnoli)
	return (c>>15 | c<<17) + 0xa282ead8
}

const headerSize = 12 // uint64 length + masked CRC of it

// ReaderOptions configure a TFRecord reader. The zero value detects the
// compression and stops at the first corrupt record.
type ReaderOptions struct {
	Compression Compression
	// SkipCorrupt moves past a record whose data CRC does not match and
	// counts it (Skipped) instead of failing. Framing damage (a bad length
	// CRC, truncation) still fails: past it, record boundaries are lost.
	SkipCorrupt bool
	// BufferSize is the read buffer (default 256 KiB).
	BufferSize int
}

// Reader reads TFRecord records one at a time, streaming: files may be
// larger than memory. It is not safe for concurrent use.
type Reader struct {
	name     string
	br       *bufio.Reader
	closers  []io.Closer
	opts     ReaderOptions
	index    int   // records returned so far
	offset   int64 // decompressed offset of the next header
	last     int64 // offset of the last record returned
	skipped  int
	buf      []byte
	pending  int // bytes of the last record still in br (returned without a copy)
	err      error
	compress Compression
}

// OpenReader opens a TFRecord file. The caller must Close it.
func OpenReader(path string, opts ReaderOptions) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	if opts.Compression == CompressionAuto {
		switch strings.ToLower(filepath.Ext(path)) {
		case ".gz", ".gzip":
			opts.Compression = CompressionGZIP
		case ".zlib", ".zz":
			opts.Compression = CompressionZLIB
		}
	}
	r, err := NewReader(f, path, opts)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.closers = append(r.closers, f)
	return r, nil
}

// NewReader reads TFRecord records from src; name labels errors. With
// CompressionAuto it looks at the first bytes: a valid record header means
// none, else a gzip or zlib header means that compression.
func NewReader(src io.Reader, name string, opts ReaderOptions) (*Reader, error) {
	if src == nil {
		return nil, fmt.Errorf("data: NewReader %s: the source is nil", name)
	}
	size := opts.BufferSize
	if size <= 0 {
		size = 256 << 10
	}
	br := bufio.NewReaderSize(src, size)
	c := opts.Compression
	if c == CompressionAuto {
		c = sniff(br)
	}
	r := &Reader{name: name, opts: opts, compress: c}
	switch c {
	case CompressionGZIP:
		zr, err := gzip.NewReader(br)
		if err == io.EOF {
			r.br = bufio.NewReaderSize(bytes.NewReader(nil), 16)
			return r, nil
		}
		if err != nil {
			return nil, fmt.Errorf("data: %s: gzip: %w", name, err)
		}
		zr.Multistream(true)
		r.br, r.closers = bufio.NewReaderSize(zr, size), append(r.closers, zr)
	case CompressionZLIB:
		zr, err := zlib.NewReader(br)
		if err == io.EOF {
			r.br = bufio.NewReaderSize(bytes.NewReader(nil), 16)
			return r, nil
		}
		if err != nil {
			return nil, fmt.Errorf("data: %s: zlib: %w", name, err)
		}
		r.br, r.closers = bufio.NewReaderSize(zr, size), append(r.closers, zr)
	default:
		r.br = br
	}
	return r, nil
}

// sniff guesses the compression from the stream's first bytes.
func sniff(br *bufio.Reader) Compression {
	head, _ := br.Peek(headerSize)
	if len(head) == headerSize && maskedCRC(head[:8]) == binary.LittleEndian.Uint32(head[8:]) {
		return CompressionNone
	}
	if len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b {
		return CompressionGZIP
	}
	if len(head) >= 2 && head[0]&0x0f == 8 && (uint16(head[0])<<8|uint16(head[1]))%31 == 0 {
		return CompressionZLIB
	}
	return CompressionNone
}

// Compression reports the compression the reader decodes.
func (r *Reader) Compression() Compression { return r.compress }

// Next returns the next record's payload. The slice stays valid until the
// next call to Next. A clean end returns io.EOF; corrupt or truncated data
// returns a *RecordError (and every later call returns it again).
func (r *Reader) Next() ([]byte, error) {
	for {
		rec, err := r.next()
		if err == nil || r.err != nil || !errors.Is(err, ErrDataCRCMismatch) || !r.opts.SkipCorrupt {
			if err != nil && err != io.EOF {
				r.err = err
			}
			return rec, err
		}
		r.skipped++
	}
}

func (r *Reader) fail(kind error, format string, args ...any) error {
	return &RecordError{File: r.name, Index: r.index, Offset: r.offset, Kind: kind, Detail: fmt.Sprintf(format, args...)}
}

func (r *Reader) next() ([]byte, error) {
	if r.err != nil {
		return nil, r.err
	}
	if r.pending > 0 {
		r.br.Discard(r.pending)
		r.pending = 0
	}
	var hdr [headerSize]byte
	n, err := io.ReadFull(r.br, hdr[:])
	switch {
	case n == 0 && err == io.EOF:
		return nil, io.EOF
	case err == io.ErrUnexpectedEOF:
		return nil, r.fail(ErrTruncatedHeader, "%d of %d header bytes", n, headerSize)
	case err != nil:
		return nil, r.fail(ErrTruncatedHeader, "reading header: %v", err)
	}
	length := binary.LittleEndian.Uint64(hdr[:8])
	if got, want := maskedCRC(hdr[:8]), binary.LittleEndian.Uint32(hdr[8:]); got != want {
		return nil, r.fail(ErrLengthCRCMismatch, "length %d has masked CRC %08x, header says %08x", length, got, want)
	}
	if length > 1<<40 {
		return nil, r.fail(ErrLengthCRCMismatch, "implausible length %d", length)
	}
	need := int(length) + 4
	var buf []byte
	if need <= r.br.Size() {
		// The record fits the read buffer: return it from there, no copy;
		// it is discarded at the next call.
		b, err := r.br.Peek(need)
		if err != nil {
			return nil, r.fail(ErrTruncatedData, "%d of %d data and CRC bytes: %v", len(b), need, err)
		}
		buf, r.pending = b, need
	} else {
		var n int
		var err error
		r.buf, n, err = readGrowing(r.br, r.buf, need)
		if err != nil {
			return nil, r.fail(ErrTruncatedData, "%d of %d data and CRC bytes: %v", n, need, err)
		}
		buf = r.buf
	}
	data := buf[:length]
	if got, want := maskedCRC(data), binary.LittleEndian.Uint32(buf[length:]); got != want {
		e := r.fail(ErrDataCRCMismatch, "%d-byte record has masked CRC %08x, trailer says %08x", length, got, want)
		r.offset += int64(headerSize + need) // framing is intact: the next record can be read
		return nil, e
	}
	r.last = r.offset
	r.offset += int64(headerSize + need)
	r.index++
	return data, nil
}

// growStep is the first allocation of a record read in pieces.
const growStep = 1 << 20

// readGrowing reads exactly need bytes from src into buf (reused when large
// enough), allocating as the data arrives: the buffer at most doubles per
// read, so a length claimed by a corrupt header costs memory in proportion
// to the bytes that are really there, not to the claim (TensorFlow's
// reader grows its buffer the same way). It returns the bytes read and,
// short of need, the read error (io.ErrUnexpectedEOF for a clean end).
func readGrowing(src io.Reader, buf []byte, need int) ([]byte, int, error) {
	if cap(buf) >= need {
		buf = buf[:need]
		n, err := io.ReadFull(src, buf)
		return buf, n, err
	}
	buf = buf[:0]
	for len(buf) < need {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(need, max(2*cap(buf), growStep)))
			copy(grown, buf)
			buf = grown
		}
		n, err := io.ReadFull(src, buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			return buf, len(buf), err
		}
	}
	return buf, len(buf), nil
}

// Index returns the number of records returned so far (skipped ones do not
// count; see Skipped).
func (r *Reader) Index() int { return r.index }

// Offset returns the byte offset (in the decompressed stream) of the last
// record returned; uncompressed files can be read there with ReadRecordAt.
func (r *Reader) Offset() int64 { return r.last }

// Skipped returns how many corrupt records SkipCorrupt passed over.
func (r *Reader) Skipped() int { return r.skipped }

// Close releases the file and decompressor.
func (r *Reader) Close() error {
	var first error
	for i := len(r.closers) - 1; i >= 0; i-- {
		if err := r.closers[i].Close(); err != nil && first == nil {
			first = err
		}
	}
	r.closers = nil
	return first
}

// ReadRecordAt reads the record whose header starts at offset of an
// uncompressed TFRecord file (offsets come from Reader.Offset), checking
// both CRCs. name labels errors.
func ReadRecordAt(src io.ReaderAt, name string, offset int64) ([]byte, error) {
	if src == nil {
		return nil, fmt.Errorf("data: ReadRecordAt %s: the source is nil", name)
	}
	r := &Reader{name: name, offset: offset}
	var hdr [headerSize]byte
	if n, err := src.ReadAt(hdr[:], offset); n < headerSize {
		return nil, r.fail(ErrTruncatedHeader, "%d of %d header bytes: %v", n, headerSize, err)
	}
	length := binary.LittleEndian.Uint64(hdr[:8])
	if maskedCRC(hdr[:8]) != binary.LittleEndian.Uint32(hdr[8:]) || length > 1<<40 {
		return nil, r.fail(ErrLengthCRCMismatch, "bad header at offset %d", offset)
	}
	buf, n, err := readGrowing(io.NewSectionReader(src, offset+headerSize, int64(length)+4), nil, int(length)+4)
	if err != nil {
		return nil, r.fail(ErrTruncatedData, "%d of %d data and CRC bytes: %v", n, int(length)+4, err)
	}
	if maskedCRC(buf[:length]) != binary.LittleEndian.Uint32(buf[length:]) {
		return nil, r.fail(ErrDataCRCMismatch, "data CRC mismatch")
	}
	return buf[:length], nil
}
