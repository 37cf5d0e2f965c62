// Command tfrecord counts, verifies, prints and writes TFRecord files.
//
//	go run ./data/cmd/tfrecord count FILE...
//	go run ./data/cmd/tfrecord verify FILE...
//	go run ./data/cmd/tfrecord cat [--kind auto|example|sequence_example|event|raw] [--compression auto|none|gzip|zlib] FILE
//	go run ./data/cmd/tfrecord write [--compression auto|none|gzip|zlib] OUT < examples.jsonl
//
// cat prints one JSON object per record and line: index, offset, length,
// sha256, kind, and the decoded example, sequence_example or event (or the
// payload in base64 for raw records of at most 256 bytes), in the form of
// the conformance corpus (features as {"kind", "values"}, floats with their
// float32 "bits"; NaN and the infinities, which JSON cannot hold as
// numbers, are the strings "NaN", "Infinity" and "-Infinity" in "values",
// as in proto3's JSON mapping). On a corrupt file it prints the records
// before the damage, then exits 1 with the error (its kind, record index
// and byte offset) on stderr. write reads Examples in that same form, one
// per line ({"features": ...}, or a record object with "example"), and
// writes them atomically: float values from "bits" when present (exact),
// else from "values", numbers or those three strings.
package main

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"

	"github.com/eagerflow/eagerflow/data"
)

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

const usage = `usage: tfrecord count FILE...
       tfrecord verify FILE...
       tfrecord cat [--kind auto|example|sequence_example|event|raw] [--compression auto|none|gzip|zlib] FILE
       tfrecord write [--compression auto|none|gzip|zlib] OUT

cat prints a JSON object per record; floats carry their float32 "bits",
and NaN and the infinities are the strings "NaN", "Infinity" and
"-Infinity" in "values". write reads the same form (bits first, if any).
`

// run is the command with its streams, returning the exit status.
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	fs := flag.NewFlagSet("tfrecord "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	kind := fs.String("kind", "auto", "how to decode records: auto, example, sequence_example, event or raw")
	comp := fs.String("compression", "auto", "auto, none, gzip or zlib")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	c, err := data.ParseCompression(*comp)
	if err != nil {
		fmt.Fprintln(stderr, "tfrecord:", err)
		return 2
	}
	out := bufio.NewWriter(stdout)
	defer out.Flush()
	switch args[0] {
	case "count", "verify":
		if fs.NArg() == 0 {
			fmt.Fprint(stderr, usage)
			return 2
		}
		status := 0
		for _, f := range fs.Args() {
			n, err := count(f, c)
			if err != nil {
				out.Flush()
				fmt.Fprintln(stderr, "tfrecord:", err)
				if args[0] == "verify" {
					return 1
				}
				status = 1
				continue
			}
			if args[0] == "count" {
				fmt.Fprintf(out, "%d\t%s\n", n, f)
			} else {
				fmt.Fprintf(out, "ok\t%d records\t%s\n", n, f)
			}
		}
		return status
	case "cat":
		if fs.NArg() != 1 {
			fmt.Fprint(stderr, usage)
			return 2
		}
		if err := cat(out, fs.Arg(0), c, *kind); err != nil {
			out.Flush()
			fmt.Fprintln(stderr, "tfrecord:", err)
			return 1
		}
		return 0
	case "write":
		if fs.NArg() != 1 {
			fmt.Fprint(stderr, usage)
			return 2
		}
		n, err := write(stdin, fs.Arg(0), c)
		if err != nil {
			fmt.Fprintln(stderr, "tfrecord:", err)
			return 1
		}
		fmt.Fprintf(out, "wrote %d records to %s\n", n, fs.Arg(0))
		return 0
	}
	fmt.Fprint(stderr, usage)
	return 2
}

func count(path string, c data.Compression) (int, error) {
	r, err := data.OpenReader(path, data.ReaderOptions{Compression: c})
	if err != nil {
		return 0, err
	}
	defer r.Close()
	n := 0
	for {
		if _, err := r.Next(); err == io.EOF {
			return n, nil
		} else if err != nil {
			return n, err
		}
		n++
	}
}

func cat(out io.Writer, path string, c data.Compression, kind string) error {
	switch kind {
	case "auto", data.KindExample, data.KindSequenceExample, data.KindEvent, data.KindRaw:
	default:
		return fmt.Errorf("unknown kind %q", kind)
	}
	r, err := data.OpenReader(path, data.ReaderOptions{Compression: c})
	if err != nil {
		return err
	}
	defer r.Close()
	enc := json.NewEncoder(out)
	for i := 0; ; i++ {
		rec, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if kind == "auto" {
			kind = data.GuessKind(path, rec)
		}
		obj, err := data.RecordJSON(kind, i, r.Offset(), rec)
		if err != nil {
			return fmt.Errorf("%s: record %d at offset %d is not a %s: %w", path, i, r.Offset(), kind, err)
		}
		if err := enc.Encode(obj); err != nil {
			return err
		}
	}
}

func write(in io.Reader, path string, c data.Compression) (int, error) {
	w, err := data.CreateWriter(path, data.WriterOptions{Compression: c})
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<30)
	line := 0
	for sc.Scan() {
		line++
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		e, err := parseExample(sc.Bytes())
		if err == nil {
			err = w.Write(e.Marshal())
		}
		if err != nil {
			w.Abort()
			return 0, fmt.Errorf("line %d: %w", line, err)
		}
	}
	if err := sc.Err(); err != nil {
		w.Abort()
		return 0, fmt.Errorf("reading input at line %d: %w", line+1, err)
	}
	return w.Count(), w.Close()
}

// parseExample reads an Example in the JSON form: {"features": ...} or a
// record object holding one under "example".
func parseExample(line []byte) (*data.Example, error) {
	d := json.NewDecoder(bytes.NewReader(line))
	d.UseNumber()
	var obj map[string]any
	if err := d.Decode(&obj); err != nil {
		return nil, err
	}
	if ex, ok := obj["example"].(map[string]any); ok {
		obj = ex
	}
	feats, ok := obj["features"].(map[string]any)
	if !ok {
		return nil, errors.New(`no "features" object`)
	}
	e := &data.Example{Features: map[string]*data.Feature{}}
	for name, v := range feats {
		f, err := parseFeature(v)
		if err != nil {
			return nil, fmt.Errorf("feature %q: %w", name, err)
		}
		e.Features[name] = f
	}
	return e, nil
}

func parseFeature(v any) (*data.Feature, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("not an object")
	}
	vals, _ := m["values"].([]any)
	switch m["kind"] {
	case nil:
		return &data.Feature{Kind: data.KindNone}, nil
	case "bytes_list":
		f := &data.Feature{Kind: data.KindBytes, Bytes: [][]byte{}}
		for i, x := range vals {
			b, _ := x.(map[string]any)
			s, ok := b["b64"].(string)
			if !ok {
				return nil, fmt.Errorf("value %d has no b64 payload (only a hash): it cannot be written", i)
			}
			raw, err := base64.StdEncoding.DecodeString(s)
			if err != nil {
				return nil, fmt.Errorf("value %d: %w", i, err)
			}
			f.Bytes = append(f.Bytes, raw)
		}
		return f, nil
	case "float_list":
		f := &data.Feature{Kind: data.KindFloat, Floats: []float32{}}
		if bits, ok := m["bits"].([]any); ok { // exact: the float32 bit patterns
			for i, b := range bits {
				s, _ := b.(string)
				u, err := strconv.ParseUint(s, 16, 32)
				if err != nil {
					return nil, fmt.Errorf("bits %d: %w", i, err)
				}
				f.Floats = append(f.Floats, math.Float32frombits(uint32(u)))
			}
			return f, nil
		}
		for i, x := range vals {
			if s, ok := x.(string); ok {
				v, ok := data.ParseJSONFloat(s)
				if !ok {
					return nil, fmt.Errorf(`value %d is %q, not a number, "NaN", "Infinity" or "-Infinity"`, i, s)
				}
				f.Floats = append(f.Floats, float32(v))
				continue
			}
			n, ok := x.(json.Number)
			if !ok {
				return nil, fmt.Errorf("value %d is not a number", i)
			}
			v, err := n.Float64()
			if err != nil {
				return nil, fmt.Errorf("value %d: %w", i, err)
			}
			f.Floats = append(f.Floats, float32(v))
		}
		return f, nil
	case "int64_list":
		f := &data.Feature{Kind: data.KindInt64, Int64s: []int64{}}
		for i, x := range vals {
			n, ok := x.(json.Number)
			if !ok {
				return nil, fmt.Errorf("value %d is not a number", i)
			}
			v, err := n.Int64()
			if err != nil {
				return nil, fmt.Errorf("value %d: %w", i, err)
			}
			f.Int64s = append(f.Int64s, v)
		}
		return f, nil
	}
	return nil, fmt.Errorf("unknown kind %v", m["kind"])
}
