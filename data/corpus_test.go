package data

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// corpusDir is the shared TFRecord conformance corpus, beside the project.
const corpusDir = "../../shared/testdata/tfrecord"

func corpus(t *testing.T) map[string]map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(corpusDir, "expected", "INDEX.json"))
	if os.IsNotExist(err) {
		t.Skipf("the TFRecord corpus is not at %s (it lives in ../shared beside the project)", corpusDir)
	}
	if err != nil {
		t.Fatal(err)
	}
	var index map[string]map[string]any
	if err := json.Unmarshal(raw, &index); err != nil {
		t.Fatal(err)
	}
	return index
}

func loadExpected(t *testing.T, name string) map[string]any {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(corpusDir, "expected", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber() // int64 values beyond 2^53
	var v map[string]any
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// canon re-encodes a JSON value for comparison: float values are dropped
// where bits are given (compare bit patterns, not decimal text) and
// numbers become their exact decimal text.
func canon(t *testing.T, v any) string {
	t.Helper()
	var strip func(any) any
	strip = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			out := map[string]any{}
			for k, e := range x {
				if k == "values" && x["bits"] != nil {
					continue
				}
				out[k] = strip(e)
			}
			return out
		case []any:
			out := make([]any, len(x))
			for i, e := range x {
				out[i] = strip(e)
			}
			return out
		}
		return v
	}
	b, err := json.Marshal(strip(v))
	if err != nil {
		t.Fatal(err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var n any
	d.Decode(&n)
	out, _ := json.Marshal(n)
	return string(out)
}

func TestCorpusReadsAsExpected(t *testing.T) {
	index := corpus(t)
	names := make([]string, 0, len(index))
	for n := range index {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			checkCorpusFile(t, name)
		})
	}
}

func checkCorpusFile(t *testing.T, name string) {
	want := loadExpected(t, name)
	r, err := OpenReader(filepath.Join(corpusDir, "files", name), ReaderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if got := r.Compression().String(); got != want["compression"] {
		t.Errorf("compression %s, want %v", got, want["compression"])
	}
	records, _ := want["records"].([]any)
	truncatedGzip := strings.HasSuffix(name, "truncated_gzip.tfrecord.gz")
	n := 0
	var readErr error
	for {
		rec, err := r.Next()
		if err != nil {
			readErr = err
			break
		}
		if n >= len(records) {
			t.Fatalf("read record %d, expected only %d", n, len(records))
		}
		checkRecord(t, records[n].(map[string]any), n, r.Offset(), rec)
		n++
	}
	if got, exp := n, mustInt(t, want["num_records"]); got != exp && !(truncatedGzip && got < exp) {
		t.Errorf("read %d records, want %d", got, exp)
	}
	wantErr, _ := want["error"].(map[string]any)
	if wantErr == nil {
		if readErr != nil && !errors.Is(readErr, io.EOF) {
			t.Errorf("unexpected error %v", readErr)
		}
		return
	}
	if readErr == nil || errors.Is(readErr, io.EOF) {
		t.Fatalf("no error, want %v", wantErr["kind"])
	}
	if truncatedGzip {
		return // only the failure is firm
	}
	var re *RecordError
	if !errors.As(readErr, &re) {
		t.Fatalf("error %v is not a *RecordError", readErr)
	}
	if re.Kind.Error() != wantErr["kind"] || re.Index != mustInt(t, wantErr["record_index"]) || re.Offset != int64(mustInt(t, wantErr["offset"])) {
		t.Errorf("error %v (kind %v, record %d, offset %d), want %v", re, re.Kind, re.Index, re.Offset, wantErr)
	}
}

func checkRecord(t *testing.T, want map[string]any, i int, offset int64, rec []byte) {
	t.Helper()
	sum := sha256.Sum256(rec)
	if mustInt(t, want["index"]) != i || int64(mustInt(t, want["offset"])) != offset || mustInt(t, want["length"]) != len(rec) ||
		want["sha256"] != hex.EncodeToString(sum[:]) {
		t.Fatalf("record %d: offset %d length %d sha %x, want %v", i, offset, len(rec), sum, want)
	}
	switch want["kind"] {
	case "raw":
		if b64, ok := want["b64"]; ok && b64 != base64.StdEncoding.EncodeToString(rec) {
			t.Errorf("record %d: payload differs", i)
		}
	case "example":
		e, err := UnmarshalExample(rec)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if got, exp := canon(t, ExampleJSON(e)), canon(t, want["example"]); got != exp {
			t.Errorf("record %d:\n got %s\nwant %s", i, got, exp)
		}
		if again, _ := UnmarshalExample(e.Marshal()); canon(t, ExampleJSON(again)) != canon(t, ExampleJSON(e)) {
			t.Errorf("record %d does not survive Marshal", i)
		}
	case "sequence_example":
		s, err := UnmarshalSequenceExample(rec)
		if err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		if got, exp := canon(t, SequenceExampleJSON(s)), canon(t, want["sequence_example"]); got != exp {
			t.Errorf("record %d:\n got %s\nwant %s", i, got, exp)
		}
	}
}

func mustInt(t *testing.T, v any) int {
	t.Helper()
	switch x := v.(type) {
	case json.Number:
		n, err := x.Int64()
		if err != nil {
			t.Fatal(err)
		}
		return int(n)
	case float64:
		return int(x)
	}
	t.Fatalf("not a number: %v", v)
	return 0
}
