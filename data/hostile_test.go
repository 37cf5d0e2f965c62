package data

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/tensor"
)

// header returns a 12-byte TFRecord header claiming length, with a valid
// length CRC, so that only the missing data can refute it.
func header(length uint64) []byte {
	h := binary.LittleEndian.AppendUint64(nil, length)
	return binary.LittleEndian.AppendUint32(h, maskedCRC(h))
}

// allocated runs fn and returns the bytes it allocated.
func allocated(fn func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	fn()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}

// A header claiming more data than the file holds costs memory in
// proportion to the file, not to the claim, on every path that reads
// records: Reader.Next, ReadRecordAt and the TFRecordFiles dataset.
func TestHugeLengthClaimsAllocateNothingLikeThem(t *testing.T) {
	dir := t.TempDir()
	for _, claim := range []uint64{1 << 36, 1 << 30, 1<<40 - 1} {
		path := filepath.Join(dir, "claim.tfrecord")
		if err := os.WriteFile(path, header(claim), 0o644); err != nil {
			t.Fatal(err)
		}
		var err error
		n := allocated(func() {
			r, oerr := OpenReader(path, ReaderOptions{})
			if oerr != nil {
				err = oerr
				return
			}
			defer r.Close()
			_, err = r.Next()
		})
		if !errors.Is(err, ErrTruncatedData) || n > 16<<20 {
			t.Errorf("Next, claim %d: %v after allocating %d bytes", claim, err, n)
		}
		n = allocated(func() { _, err = ReadRecordAt(bytes.NewReader(header(claim)), "x", 0) })
		if !errors.Is(err, ErrTruncatedData) || n > 16<<20 {
			t.Errorf("ReadRecordAt, claim %d: %v after allocating %d bytes", claim, err, n)
		}
		n = allocated(func() {
			_, err = TFRecordFiles([]string{path}, TFRecordOptions{}).Collect(context.Background())
		})
		if !errors.Is(err, ErrTruncatedData) || n > 16<<20 {
			t.Errorf("TFRecordFiles, claim %d: %v after allocating %d bytes", claim, err, n)
		}
	}
	// A genuine record larger than the read buffer still reads whole.
	big := bytes.Repeat([]byte("0123456789abcdef"), 300000) // 4.8 MB
	var file bytes.Buffer
	w := NewWriter(&file, WriterOptions{})
	w.Write(big)
	w.Close()
	r, _ := NewReader(bytes.NewReader(file.Bytes()), "big", ReaderOptions{BufferSize: 4096})
	got, err := r.Next()
	if err != nil || !bytes.Equal(got, big) {
		t.Errorf("a 4.8 MB record: %d bytes, %v", len(got), err)
	}
	if got, err := ReadRecordAt(bytes.NewReader(file.Bytes()), "big", 0); err != nil || !bytes.Equal(got, big) {
		t.Errorf("ReadRecordAt of a 4.8 MB record: %d bytes, %v", len(got), err)
	}
}

// Cache records claiming huge counts, ranks or dimensions are errors
// naming the problem, found before anything large is allocated.
func TestCacheRecordsWithHugeCountsAreRefused(t *testing.T) {
	uv := func(vs ...uint64) []byte {
		var b []byte
		for _, v := range vs {
			b = binary.AppendUvarint(b, v)
		}
		return b
	}
	good := mustEncode(t, Element{tensor.FromSlice([]float32{1, 2}), tensor.Scalar(int64(3))})
	if e, err := decodeElement(good); err != nil || len(e) != 2 {
		t.Fatalf("a good record: %v %v", e, err)
	}
	cases := map[string][]byte{
		"component count 2^40": uv(1 << 40),
		"rank 2^40":            append(append(uv(1), byte(tensor.Float32)), uv(1<<40)...),
		"dims overflow":        append(append(uv(1), byte(tensor.Float32)), uv(2, 1<<40, 1<<40, 0)...),
		"byte count 2^40":      append(append(uv(1), byte(tensor.Float32)), uv(1, 4, 1<<40)...),
		"bad dtype":            append(uv(1), 200),
		"short data":           append(append(uv(1), byte(tensor.Float32)), uv(1, 4, 16)...),
		"trailing bytes":       append(good, 0),
		"empty":                nil,
	}
	for name, rec := range cases {
		var err error
		n := allocated(func() { _, err = decodeElement(rec) })
		if !errors.Is(err, errBadCache) || n > 1<<20 {
			t.Errorf("%s: %v after allocating %d bytes", name, err, n)
		}
	}
}

// The tfrecord tool's subcommands survive the same hostile header.
func TestCommandReadersRefuseHugeClaims(t *testing.T) {
	path := filepath.Join(t.TempDir(), "claim.tfrecord")
	os.WriteFile(path, header(1<<36), 0o644)
	var err error
	n := allocated(func() {
		r, _ := OpenReader(path, ReaderOptions{})
		defer r.Close()
		for err == nil {
			_, err = r.Next()
		}
	})
	if err == io.EOF || !strings.Contains(err.Error(), "truncated_data") || n > 16<<20 {
		t.Errorf("%v after %d bytes", err, n)
	}
}
