package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const corpusDir = "../../../../shared/testdata/tfrecord"

func decodeJSON(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatalf("%v in %s", err, b)
	}
	return v
}

// canon re-encodes a JSON value for comparison: a value with "<key>_bits"
// beside it (or "values" beside "bits") is compared by its bits only.
func canon(t *testing.T, v any) string {
	var strip func(any) any
	strip = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			out := map[string]any{}
			for k, e := range x {
				if _, ok := x[k+"_bits"]; ok {
					continue
				}
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
	b, _ := json.Marshal(strip(v))
	return string(b)
}

func TestCatMatchesTheCorpus(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(corpusDir, "expected", "INDEX.json"))
	if os.IsNotExist(err) {
		t.Skipf("the TFRecord corpus is not at %s (it lives in ../shared beside the project)", corpusDir)
	}
	var index map[string]map[string]any
	if err := json.Unmarshal(raw, &index); err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(index))
	for n := range index {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			exp := decodeJSON(t, mustRead(t, filepath.Join(corpusDir, "expected", name+".json"))).(map[string]any)
			records, _ := exp["records"].([]any)
			kind := "raw"
			if len(records) > 0 {
				kind = records[0].(map[string]any)["kind"].(string)
			}
			var out, errOut bytes.Buffer
			status := run([]string{"cat", "--kind", kind, filepath.Join(corpusDir, "files", name)}, nil, &out, &errOut)
			lines := strings.Split(strings.TrimSpace(out.String()), "\n")
			if out.Len() == 0 {
				lines = nil
			}
			partial := strings.HasSuffix(name, "truncated_gzip.tfrecord.gz")
			if len(lines) != len(records) && !(partial && len(lines) < len(records)) {
				t.Fatalf("%d records printed, want %d (stderr %s)", len(lines), len(records), errOut.String())
			}
			for i, line := range lines {
				if got, want := canon(t, decodeJSON(t, []byte(line))), canon(t, records[i]); got != want {
					t.Fatalf("record %d:\n got %s\nwant %s", i, got, want)
				}
			}
			wantErr, _ := exp["error"].(map[string]any)
			if wantErr == nil {
				if status != 0 {
					t.Errorf("exit %d: %s", status, errOut.String())
				}
				return
			}
			if status != 1 {
				t.Errorf("exit %d on a corrupt file", status)
			}
			msg := errOut.String()
			if partial {
				return // only the failure is firm
			}
			for _, want := range []string{wantErr["kind"].(string), fmt.Sprintf("record %v", wantErr["record_index"]), fmt.Sprintf("offset %v", wantErr["offset"])} {
				if !strings.Contains(msg, want) {
					t.Errorf("stderr %q lacks %q", msg, want)
				}
			}
		})
	}
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestWriteThenCatAndCountAndVerify(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "x.tfrecord.gz")
	in := `{"features": {"label": {"kind": "int64_list", "values": [7, -9223372036854775808]}, "w": {"kind": "float_list", "values": [0.1], "bits": ["3dcccccd"]}, "name": {"kind": "bytes_list", "values": [{"len": 3, "b64": "Y2F0"}]}, "none": {"kind": null}}}
{"index": 0, "kind": "example", "example": {"features": {"x": {"kind": "float_list", "values": [1.5, -2]}}}}
`
	var so, se bytes.Buffer
	if s := run([]string{"write", out}, strings.NewReader(in), &so, &se); s != 0 {
		t.Fatalf("write: %d %s", s, se.String())
	}
	so.Reset()
	if s := run([]string{"cat", out}, nil, &so, &se); s != 0 {
		t.Fatalf("cat: %d %s", s, se.String())
	}
	lines := strings.Split(strings.TrimSpace(so.String()), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], `"-9223372036854775808"`) && !strings.Contains(lines[0], `-9223372036854775808`) ||
		!strings.Contains(lines[0], `"3dcccccd"`) || !strings.Contains(lines[1], `"bff00000"`) && !strings.Contains(lines[1], `"c0000000"`) {
		t.Errorf("cat after write:\n%s", so.String())
	}
	so.Reset()
	if s := run([]string{"count", out}, nil, &so, &se); s != 0 || !strings.HasPrefix(so.String(), "2\t") {
		t.Errorf("count: %d %q", s, so.String())
	}
	if s := run([]string{"verify", filepath.Join(corpusDir, "files", "corrupt", "bad_length_crc.tfrecord")}, nil, &so, &se); s != 1 && dirExists(corpusDir) {
		t.Errorf("verify of a corrupt file exited %d", s)
	}
	// A bad line aborts the write and leaves nothing behind.
	bad := filepath.Join(dir, "bad.tfrecord")
	se.Reset()
	if s := run([]string{"write", bad}, strings.NewReader(`{"features": {"a": {"kind": "int64_list", "values": ["x"]}}}`), &so, &se); s != 1 ||
		!strings.Contains(se.String(), "line 1") {
		t.Errorf("bad input: %d %s", s, se.String())
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Error("a failed write left a file")
	}
	if s := run([]string{"frobnicate"}, nil, &so, &se); s != 2 {
		t.Errorf("unknown command exited %d", s)
	}
}

func dirExists(p string) bool { _, err := os.Stat(p); return err == nil }

// Non-finite floats print as "NaN", "Infinity" and "-Infinity" (with
// their bits), read back through write bit for bit, and a corrupt file
// after such a record still reports its corruption.
func TestNonFiniteFloatsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "nan.tfrecord")
	in := `{"features": {"f": {"kind": "float_list", "values": ["NaN", "Infinity", "-Infinity", 1.5]}}}
{"features": {"g": {"kind": "float_list", "values": [0], "bits": ["7fc00001", "ff800000"]}}}
`
	var so, se bytes.Buffer
	if s := run([]string{"write", path}, strings.NewReader(in), &so, &se); s != 0 {
		t.Fatalf("write: %d %s", s, se.String())
	}
	so.Reset()
	if s := run([]string{"cat", path}, nil, &so, &se); s != 0 {
		t.Fatalf("cat: %d %s", s, se.String())
	}
	for _, want := range []string{`"NaN"`, `"Infinity"`, `"-Infinity"`, `"7fc00000"`, `"7f800000"`, `"ff800000"`, `"7fc00001"`} {
		if !strings.Contains(so.String(), want) {
			t.Errorf("cat lacks %s:\n%s", want, so.String())
		}
	}
	// cat's output written again gives the same records, byte for byte.
	again := filepath.Join(dir, "again.tfrecord")
	if s := run([]string{"write", again}, strings.NewReader(so.String()), &bytes.Buffer{}, &se); s != 0 {
		t.Fatalf("write of cat's output: %d %s", s, se.String())
	}
	if a, b := mustRead(t, path), mustRead(t, again); !bytes.Equal(a, b) {
		t.Error("the round trip through cat and write changed the file")
	}
	if s := run([]string{"write", filepath.Join(dir, "x")}, strings.NewReader(`{"features": {"f": {"kind": "float_list", "values": ["nan"]}}}`), &so, &se); s != 1 ||
		!strings.Contains(se.String(), `"nan"`) {
		t.Errorf("a misspelt NaN: %d %s", s, se.String())
	}
	// Corrupt the second record's data: cat prints the first, then the
	// corruption, not a JSON error.
	raw := mustRead(t, path)
	raw[len(raw)-6] ^= 0xff
	os.WriteFile(path, raw, 0o644)
	so.Reset()
	se.Reset()
	if s := run([]string{"cat", path}, nil, &so, &se); s != 1 || !strings.Contains(se.String(), "data_crc_mismatch") || strings.Count(so.String(), "\n") != 1 {
		t.Errorf("cat of a corrupt file: %d, stderr %s, stdout %s", s, se.String(), so.String())
	}
}
