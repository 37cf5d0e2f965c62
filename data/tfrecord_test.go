package data

import (
	"bytes"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/encoding/protowire"
)

func records(n int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		out[i] = bytes.Repeat([]byte{byte(i)}, i*37%300)
	}
	return out
}

func readAll(t *testing.T, r *Reader) [][]byte {
	t.Helper()
	var out [][]byte
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, bytes.Clone(rec))
	}
}

func TestRoundTripEveryCompression(t *testing.T) {
	dir := t.TempDir()
	want := records(50)
	for _, name := range []string{"plain.tfrecord", "a.tfrecord.gz", "b.tfrecord.zlib"} {
		path := filepath.Join(dir, name)
		w, err := CreateWriter(path, WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range want {
			if err := w.Write(rec); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		// By extension, and by sniffing under a neutral name.
		for _, p := range []string{path, path + ".renamed"} {
			if p != path {
				os.Link(path, p)
			}
			r, err := OpenReader(p, ReaderOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := readAll(t, r); !cmp.Equal(got, want) {
				t.Errorf("%s: records differ", p)
			}
			r.Close()
		}
	}
}

func TestReadRecordAtAndOffsets(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, WriterOptions{})
	want := records(10)
	for _, rec := range want {
		w.Write(rec)
	}
	w.Close()
	r, _ := NewReader(bytes.NewReader(buf.Bytes()), "mem", ReaderOptions{})
	var offsets []int64
	for range want {
		if _, err := r.Next(); err != nil {
			t.Fatal(err)
		}
		offsets = append(offsets, r.Offset())
	}
	for i := len(want) - 1; i >= 0; i-- { // random access, backwards
		rec, err := ReadRecordAt(bytes.NewReader(buf.Bytes()), "mem", offsets[i])
		if err != nil || !bytes.Equal(rec, want[i]) {
			t.Errorf("record %d at %d: %v", i, offsets[i], err)
		}
	}
	if _, err := ReadRecordAt(bytes.NewReader(buf.Bytes()), "mem", offsets[3]+1); !errors.Is(err, ErrLengthCRCMismatch) {
		t.Errorf("misaligned offset: %v", err)
	}
}

func TestCorruptionIsReportedOrSkipped(t *testing.T) {
	var buf bytes.Buffer
	w := NewWriter(&buf, WriterOptions{})
	for _, rec := range records(5) {
		w.Write(rec)
	}
	w.Close()
	data := buf.Bytes()
	// Damage the payload of record 2 (offset: records 0 and 1 before it).
	r, _ := NewReader(bytes.NewReader(data), "x", ReaderOptions{})
	r.Next()
	r.Next()
	r.Next()
	at := r.Offset()
	bad := append([]byte(nil), data...)
	bad[at+headerSize] ^= 0xff
	r, _ = NewReader(bytes.NewReader(bad), "bad.tfrecord", ReaderOptions{Compression: CompressionNone})
	var err error
	for err == nil {
		_, err = r.Next()
	}
	var re *RecordError
	if !errors.As(err, &re) || !errors.Is(err, ErrDataCRCMismatch) || re.Index != 2 || re.Offset != at || re.File != "bad.tfrecord" {
		t.Errorf("got %v", err)
	}
	if _, again := r.Next(); again != err {
		t.Error("the error must stick")
	}
	r, _ = NewReader(bytes.NewReader(bad), "bad", ReaderOptions{Compression: CompressionNone, SkipCorrupt: true})
	if got := readAll(t, r); len(got) != 4 || r.Skipped() != 1 {
		t.Errorf("skipping: %d records, %d skipped", len(got), r.Skipped())
	}
	// Truncations are data loss, never a clean end.
	for cut, kind := range map[int]error{5: ErrTruncatedHeader, headerSize + 3: ErrTruncatedData} {
		r, _ := NewReader(bytes.NewReader(data[:int(at)+cut]), "cut", ReaderOptions{Compression: CompressionNone})
		var err error
		for err == nil {
			_, err = r.Next()
		}
		if !errors.Is(err, kind) || !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("cut at %d: %v", cut, err)
		}
	}
}

func TestAtomicWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.tfrecord")
	w, _ := CreateWriter(path, WriterOptions{})
	w.Write([]byte("first"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	// A writer that fails midway (aborted) leaves the previous file whole.
	w, _ = CreateWriter(path, WriterOptions{})
	w.Write([]byte("second, never finished"))
	w.Abort()
	r, _ := OpenReader(path, ReaderOptions{})
	if got := readAll(t, r); len(got) != 1 || string(got[0]) != "first" {
		t.Errorf("after an aborted write: %q", got)
	}
	r.Close()
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	if err := w.Write([]byte("x")); err == nil {
		t.Error("write after abort accepted")
	}
}

func TestExampleRoundTripAndWireForms(t *testing.T) {
	e := &Example{Features: map[string]*Feature{
		"b":     {Kind: KindBytes, Bytes: [][]byte{[]byte("cat"), {}}},
		"f":     {Kind: KindFloat, Floats: []float32{1.5, float32(math.Inf(-1)), -0}},
		"i":     {Kind: KindInt64, Int64s: []int64{-1, 1 << 62, 0}},
		"empty": {Kind: KindNone},
		"fe":    {Kind: KindFloat, Floats: []float32{}},
	}}
	got, err := UnmarshalExample(e.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	if !cmp.Equal(ExampleJSON(got), ExampleJSON(e)) {
		t.Errorf("round trip:\n%v\n%v", ExampleJSON(got), ExampleJSON(e))
	}
	if !bytes.Equal(got.Marshal(), e.Marshal()) {
		t.Error("encoding is not deterministic")
	}
	// Unpacked numbers (older writers) decode the same as packed ones.
	var fl []byte
	for _, v := range []float32{1, 2} {
		fl = protowire.AppendTag(fl, 1, protowire.Fixed32Type)
		fl = protowire.AppendFixed32(fl, math.Float32bits(v))
	}
	feat := protowire.AppendBytes(protowire.AppendTag(nil, fieldFloatList, protowire.BytesType), fl)
	f, err := decodeFeature(feat)
	if err != nil || !cmp.Equal(f.Floats, []float32{1, 2}) {
		t.Errorf("unpacked floats: %v %v", f, err)
	}
	s := &SequenceExample{Context: map[string]*Feature{"len": {Kind: KindInt64, Int64s: []int64{3}}},
		FeatureLists: map[string][]*Feature{"tok": {{Kind: KindBytes, Bytes: [][]byte{[]byte("a")}}, {Kind: KindBytes, Bytes: [][]byte{[]byte("b")}}}}}
	s2, err := UnmarshalSequenceExample(s.Marshal())
	if err != nil || !cmp.Equal(SequenceExampleJSON(s2), SequenceExampleJSON(s)) {
		t.Errorf("sequence example round trip: %v", err)
	}
	for i, bad := range [][]byte{{0x0a, 0x05, 0x01}, {0xff}, {0x0a, 0x02, 0x0a, 0x09}} {
		if _, err := UnmarshalExample(bad); !errors.Is(err, ErrBadProto) {
			t.Errorf("malformed %d (%x): %v", i, bad, err)
		}
	}
	if c, err := ParseCompression("GZIP"); err != nil || c != CompressionGZIP {
		t.Error(c, err)
	}
	if _, err := ParseCompression("lz4"); err == nil {
		t.Error("unknown compression accepted")
	}

}
