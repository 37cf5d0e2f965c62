package data

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"testing"

	"github.com/eagerflow/eagerflow/device"
	"github.com/eagerflow/eagerflow/internal/nilsweep"
	"github.com/eagerflow/eagerflow/tensor"
)

// collect runs a dataset made by a pipeline method to its end: where a nil
// argument is reported lazily, at iteration, it is reported here.
func collect(d *Dataset) (err error) {
	if cerr := tensor.Catch(func() { _, err = d.Collect(context.Background()) }); cerr != nil {
		return cerr
	}
	return err
}

// Every exported function of data and every method of its pipeline,
// called with nil arguments one at a time beside valid ones, reports what
// was nil instead of crashing (issue 31).
func TestNilArgumentsAreReported(t *testing.T) {
	x := tensor.Zeros(tensor.Float32, 4, 2)
	ds := func() *Dataset { d, _ := FromSlices(x); return d }
	dir := t.TempDir()
	var file bytes.Buffer
	w := NewWriter(&file, WriterOptions{})
	w.Write([]byte("record"))
	w.Close()
	parser, err := NewParser(ParseSpec{"x": FixedLen{DType: tensor.Float32, Shape: []int{1}, Default: tensor.FromSlice([]float32{0})}})
	if err != nil {
		t.Fatal(err)
	}
	fns := []nilsweep.Func{
		{Name: "FromTensors", Fn: func(c ...*tensor.Tensor) error { return collect(FromTensors(c...)) }, Valid: []any{[]*tensor.Tensor{x, x}}},
		{Name: "FromSlices", Fn: FromSlices, Valid: []any{[]*tensor.Tensor{x, x}}},
		{Name: "FromSlices none", Fn: FromSlices},
		{Name: "Range", Fn: Range},
		{Name: "FromGenerator", Fn: func(g func(yield func(Element) bool) error) error { return collect(FromGenerator(g)) }},
		{Name: "Zip", Fn: func(d ...*Dataset) error { return collect(Zip(d...)) }, Valid: []any{[]*Dataset{ds(), ds()}}},
		{Name: "TFRecordFiles", Fn: func(f []string, o TFRecordOptions) error { return collect(TFRecordFiles(f, o)) }, Valid: []any{[]string{filepath.Join(dir, "none")}, TFRecordOptions{}}},
		{Name: "ParseWith", Fn: func(p *Parser) error { _, err := ParseWith(p)(Element{tensor.FromSlice([]byte("x"))}); return err }},
		{Name: "UnmarshalEvent", Fn: UnmarshalEvent},
		{Name: "UnmarshalExample", Fn: UnmarshalExample},
		{Name: "UnmarshalSequenceExample", Fn: UnmarshalSequenceExample},
		{Name: "JSONFloat", Fn: JSONFloat},
		{Name: "ParseJSONFloat", Fn: ParseJSONFloat},
		{Name: "FeatureJSON", Fn: FeatureJSON},
		{Name: "ExampleJSON", Fn: ExampleJSON},
		{Name: "BytesJSON", Fn: BytesJSON},
		{Name: "SequenceExampleJSON", Fn: SequenceExampleJSON},
		{Name: "EventJSON", Fn: EventJSON},
		{Name: "RecordJSON", Fn: RecordJSON},
		{Name: "GuessKind", Fn: GuessKind},
		{Name: "NewParser", Fn: NewParser},
		{Name: "ParseCompression", Fn: ParseCompression},
		{Name: "OpenReader", Fn: OpenReader},
		{Name: "NewReader", Fn: NewReader},
		{Name: "ReadRecordAt", Fn: ReadRecordAt},
		{Name: "ReadRecordAt bytes", Fn: ReadRecordAt, Valid: []any{bytes.NewReader(file.Bytes()), "f", int64(0)}},
		{Name: "CreateWriter", Fn: CreateWriter},
		{Name: "NewWriter", Fn: func(dst io.Writer) error { w := NewWriter(dst, WriterOptions{}); w.Write(nil); return w.Close() }},
		{Name: "Dataset.Filter", Fn: func(p func(Element) (bool, error)) error { return collect(ds().Filter(p)) }},
		{Name: "Dataset.Map", Fn: func(fn func(Element) (Element, error)) error { return collect(ds().Map(fn)) }},
		{Name: "Dataset.Map parallel", Fn: func(fn func(Element) (Element, error)) error {
			return collect(ds().Map(fn, MapOptions{Parallel: 2}))
		}},
		{Name: "Dataset.MapContext", Fn: func(fn func(context.Context, Element) (Element, error)) error { return collect(ds().MapContext(fn)) }},
		{Name: "Dataset.FilterContext", Fn: func(p func(context.Context, Element) (bool, error)) error { return collect(ds().FilterContext(p)) }},
		{Name: "FromGeneratorContext", Fn: func(g func(context.Context, func(Element) bool) error) error { return collect(FromGeneratorContext(g)) }},
		{Name: "Dataset.Interleave", Fn: func(fn func(Element) (*Dataset, error)) error {
			return collect(ds().Interleave(fn, InterleaveOptions{Cycle: 2}))
		}},
		{Name: "Dataset.Interleave to nil", Fn: func(fn func(Element) (*Dataset, error)) error {
			return collect(ds().Interleave(fn, InterleaveOptions{Cycle: 2}))
		}, Valid: []any{func(Element) (*Dataset, error) { return nil, nil }}},
		{Name: "Parser.Parse", Fn: func(records [][]byte) error { _, err := parser.Parse(records); return err },
			Valid: []any{[][]byte{[]byte("x")}}},
		{Name: "Writer.Write", Fn: func(record []byte) error { return NewWriter(&bytes.Buffer{}, WriterOptions{}).Write(record) }},
		{Name: "Dataset.To", Fn: func(dev device.Device) error { return collect(ds().To(dev)) }, Valid: []any{device.Host()}},
	}
	// Receivers are the caller's own values; methods whose only
	// arguments are numbers or strings have nothing nil to be given.
	noNil := "no argument that can be nil"
	skip := map[string]string{}
	for _, m := range []string{"Dataset.All", "Dataset.Epoch", "Dataset.Collect", "Dataset.Batch", "Dataset.PaddedBatch", "Dataset.Unbatch",
		"Dataset.CacheFile", "Dataset.Shard", "Dataset.Take", "Dataset.Skip", "Dataset.Repeat", "Dataset.Enumerate",
		"Dataset.Shuffle", "Dataset.Cache", "Dataset.Prefetch", "Reader.Next", "Reader.Compression", "Reader.Index",
		"Reader.Offset", "Reader.Skipped", "Reader.Close", "Writer.Count", "Writer.Flush", "Writer.Close", "Writer.Abort"} {
		skip[m] = noNil
	}
	nilsweep.Covered(t, ".", fns, skip, "Dataset", "Parser", "Reader", "Writer")
	nilsweep.Sweep(t, fns)
}
