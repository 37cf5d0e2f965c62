package data

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/tensor"
)

// Fuzz targets for every decoder of the package. go test runs each on its
// seeds; scripts/fuzz runs them for as long as asked. Whatever the bytes,
// a decoder returns an error (of its documented kinds) or a value, never
// panics, and never allocates far beyond its input.

// seedRecords returns a few real files' bytes for the seed corpora: the
// conformance corpus's when ../shared is there, and files written here.
func seedRecords(f *testing.F) [][]byte {
	var seeds [][]byte
	var plain bytes.Buffer
	w := NewWriter(&plain, WriterOptions{Compression: CompressionNone})
	for _, r := range records(5) {
		w.Write(r)
	}
	w.Write(sampleExample().Marshal())
	w.Close()
	seeds = append(seeds, plain.Bytes(), plain.Bytes()[:len(plain.Bytes())-3], header(1<<36))
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(plain.Bytes())
	zw.Close()
	seeds = append(seeds, gz.Bytes())
	for _, p := range corpusFiles("") {
		if b, err := os.ReadFile(p); err == nil && len(b) < 64<<10 {
			seeds = append(seeds, b)
		}
	}
	return seeds
}

// corpusFiles lists the conformance corpus's files whose path contains
// part (none when ../shared is absent).
func corpusFiles(part string) []string {
	var out []string
	filepath.WalkDir(filepath.Join(corpusDir, "files"), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.Contains(p, part) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// sampleExample is an Example with every feature kind.
func sampleExample() *Example {
	return &Example{Features: map[string]*Feature{
		"label": {Kind: KindInt64, Int64s: []int64{7, -1}},
		"x":     {Kind: KindFloat, Floats: []float32{0.5, -2}},
		"name":  {Kind: KindBytes, Bytes: [][]byte{[]byte("cat")}},
		"none":  {Kind: KindNone},
	}}
}

func FuzzTFRecordReader(f *testing.F) {
	for _, s := range seedRecords(f) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := NewReader(bytes.NewReader(b), "fuzz", ReaderOptions{SkipCorrupt: len(b)%2 == 0})
		if err != nil {
			return // a bad gzip or zlib header
		}
		defer r.Close()
		total := 0
		for {
			rec, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				var re *RecordError
				if !errors.As(err, &re) && r.Compression() == CompressionNone {
					t.Fatalf("an uncompressed stream failed with %T: %v", err, err)
				}
				break
			}
			total += len(rec)
		}
		if total > len(b) && r.Compression() == CompressionNone {
			t.Fatalf("%d record bytes from a %d-byte stream", total, len(b))
		}
		for _, off := range []int64{0, int64(len(b) / 2), int64(len(b)) - 1} {
			ReadRecordAt(bytes.NewReader(b), "fuzz", off)
		}
	})
}

func FuzzUnmarshalExample(f *testing.F) {
	f.Add(sampleExample().Marshal())
	f.Add([]byte{0x0a, 0x00})
	f.Add([]byte{0x0a, 0x05, 0x0a, 0x03, 0x0a, 0x01, 0x61})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := UnmarshalExample(b)
		if err != nil {
			if !errors.Is(err, ErrBadProto) {
				t.Fatalf("error %v is not ErrBadProto", err)
			}
			return
		}
		// What decodes re-encodes to what decodes the same.
		again, err := UnmarshalExample(e.Marshal())
		if err != nil || !bytes.Equal(again.Marshal(), e.Marshal()) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

func FuzzUnmarshalSequenceExample(f *testing.F) {
	s := &SequenceExample{Context: sampleExample().Features, FeatureLists: map[string][]*Feature{
		"frames": {{Kind: KindFloat, Floats: []float32{1, 2}}, {Kind: KindInt64, Int64s: []int64{3}}},
	}}
	f.Add(s.Marshal())
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := UnmarshalSequenceExample(b)
		if err != nil {
			if !errors.Is(err, ErrBadProto) {
				t.Fatalf("error %v is not ErrBadProto", err)
			}
			return
		}
		again, err := UnmarshalSequenceExample(s.Marshal())
		if err != nil || !bytes.Equal(again.Marshal(), s.Marshal()) {
			t.Fatalf("round trip: %v", err)
		}
	})
}

// Parse accepts exactly the records UnmarshalExample accepts, short of the
// spec's own demands (a feature's kind, count or presence).
func FuzzParse(f *testing.F) {
	f.Add(sampleExample().Marshal())
	f.Add([]byte{})
	p, err := NewParser(ParseSpec{
		"label": FixedLen{Shape: []int{2}, DType: tensor.Int64, Default: tensor.FromSlice([]int64{0, 0})},
		"x":     VarLen{DType: tensor.Float32},
		"name":  VarLen{DType: tensor.Uint8, Padded: true},
	})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, perr := p.Parse([][]byte{b, b})
		if _, err := UnmarshalExample(b); err != nil && perr == nil {
			t.Fatalf("Parse accepted what UnmarshalExample refuses: %v", err)
		}
	})
}

func FuzzUnmarshalEvent(f *testing.F) {
	for _, p := range corpusFiles("tfevents") {
		r, err := OpenReader(p, ReaderOptions{})
		if err != nil {
			continue
		}
		for range 20 {
			rec, err := r.Next()
			if err != nil {
				break
			}
			f.Add(bytes.Clone(rec))
		}
		r.Close()
	}
	f.Add([]byte{0x09, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, 0x10, 0x05, 0x1a, 0x04, 'b', 'r', 'a', 'i'})
	f.Fuzz(func(t *testing.T, b []byte) {
		if _, err := UnmarshalEvent(b); err != nil && !errors.Is(err, ErrBadProto) {
			t.Fatalf("error %v is not ErrBadProto", err)
		}
	})
}

func FuzzDecodeCacheElement(f *testing.F) {
	f.Add(mustEncode(f, Element{tensor.FromSlice([]float32{1, 2}), tensor.Scalar(int64(3)), tensor.Zeros(tensor.Bool, 0, 4)}))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeElement(b)
		if err != nil {
			if !errors.Is(err, errBadCache) {
				t.Fatalf("error %v is not errBadCache", err)
			}
			return
		}
		if !bytes.Equal(mustEncode(t, e), b) {
			t.Fatal("a decoded element does not encode back to its record")
		}
	})
}

// mustEncode is encodeElement of an element on the host, which cannot fail.
func mustEncode(t testing.TB, e Element) []byte {
	t.Helper()
	b, err := encodeElement(e)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
