package csv_test

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eagerflow/eagerflow/data/csv"
	"github.com/eagerflow/eagerflow/data/internal/arraytest"
	"github.com/eagerflow/eagerflow/tensor"
)

// tableSchema reads table.csv's typed columns (not its quoted text
// column), with a default where sepal_width is missing.
var tableSchema = csv.Schema{
	Columns: []csv.Column{
		{Name: "sepal_length"}, // float32 by default
		{Name: "sepal_width", DType: tensor.Float64, Default: -1},
		{Name: "species", DType: tensor.Int64},
		{Name: "flag", DType: tensor.Bool},
		{Name: "count", DType: tensor.Int32},
	},
	Missing: []string{"NA"},
}

func path(name string) string { return filepath.Join("testdata", name) }

func golden(t *testing.T, name string, s csv.Schema) []*tensor.Tensor {
	t.Helper()
	cols, err := csv.ReadFile(path(name), s)
	if err != nil {
		t.Fatal(err)
	}
	return cols
}

// checkTable checks table.csv's columns as tableSchema reads them.
func checkTable(t *testing.T, cols []*tensor.Tensor) {
	t.Helper()
	if len(cols) != 5 {
		t.Fatalf("%d columns, want 5", len(cols))
	}
	arraytest.Same(t, "sepal_length", cols[0], tensor.Shape{4}, []float32{5.1, 4.9, 6.2, 1e-3})
	width := tensor.ToSlice[float64](cols[1])
	if width[0] != 3.5 || width[1] != -1 || width[2] != -1 || width[3] != 0 || !math.Signbit(width[3]) {
		t.Errorf("sepal_width %v, want [3.5 -1 -1 -0]", width)
	}
	arraytest.Same(t, "species", cols[2], tensor.Shape{4}, []int64{0, 1, 2, 2})
	arraytest.Same(t, "flag", cols[3], tensor.Shape{4}, []bool{true, false, true, false})
	arraytest.Same(t, "count", cols[4], tensor.Shape{4}, []int32{12, -3, 255, 0})
}

// table.csv was written by Python's csv module, with a quoted column
// holding the separator, doubled quotes and a line break.
func TestReadTable(t *testing.T) {
	checkTable(t, golden(t, "table.csv", tableSchema))
}

func TestReadByPosition(t *testing.T) {
	cols := golden(t, "noheader.tsv", csv.Schema{Comma: '\t', NoHeader: true, Columns: []csv.Column{
		{Index: 2, DType: tensor.Int64}, {Index: 0, DType: tensor.Uint8}, {Index: 1, DType: tensor.Float64},
	}})
	arraytest.Same(t, "column 2", cols[0], tensor.Shape{2}, []int64{9007199254740993, -1})
	arraytest.Same(t, "column 0", cols[1], tensor.Shape{2}, []uint8{1, 3})
	arraytest.Same(t, "column 1", cols[2], tensor.Shape{2}, []float64{2.5, -4.25})
}

// A schema without columns reads every column of the header as float32.
func TestReadEveryColumn(t *testing.T) {
	cols, err := csv.Read(strings.NewReader("a, b\n1,2\n# skipped\n3, 4.5\n"), csv.Schema{Comment: '#'})
	if err != nil {
		t.Fatal(err)
	}
	arraytest.Same(t, "a", cols[0], tensor.Shape{2}, []float32{1, 3})
	arraytest.Same(t, "b", cols[1], tensor.Shape{2}, []float32{2, 4.5})
	// A header and nothing else: empty columns.
	cols, err = csv.Read(strings.NewReader("a,b\n"), csv.Schema{Columns: []csv.Column{{Name: "b", DType: tensor.Int32}}})
	if err != nil {
		t.Fatal(err)
	}
	arraytest.Same(t, "b", cols[0], tensor.Shape{0}, []int32{})
	// Half columns round each value; a default rounds too.
	cols, err = csv.Read(strings.NewReader("a,b\n0.1,70000\n,-2.5\n"), csv.Schema{Columns: []csv.Column{
		{Name: "a", DType: tensor.BFloat16, Default: 1.001}, {Name: "b", DType: tensor.Float16}}})
	if err != nil {
		t.Fatal(err)
	}
	arraytest.Same(t, "a", cols[0], tensor.Shape{2}, []tensor.BF16{tensor.ToBF16(0.1), tensor.ToBF16(1.001)})
	arraytest.Same(t, "b", cols[1], tensor.Shape{2}, []tensor.F16{tensor.ToF16(70000), tensor.ToF16(-2.5)})
}

func TestDataset(t *testing.T) {
	ds, err := csv.Dataset(path("table.csv"), tableSchema)
	if err != nil {
		t.Fatal(err)
	}
	for epoch := range 2 { // read afresh each epoch
		var rows [][]*tensor.Tensor
		for elem, err := range ds.All(context.Background()) {
			if err != nil {
				t.Fatal(err)
			}
			rows = append(rows, elem)
		}
		if len(rows) != 4 {
			t.Fatalf("epoch %d: %d rows, want 4", epoch, len(rows))
		}
		// The rows stacked are the columns Read gives.
		cols := make([]*tensor.Tensor, 5)
		for c := range cols {
			parts := make([]*tensor.Tensor, len(rows))
			for r := range rows {
				if rows[r][c].Rank() != 0 {
					t.Fatalf("row %d column %d has shape %v, want a scalar", r, c, rows[r][c].Shape())
				}
				parts[r] = rows[r][c].View(tensor.Shape{1}, nil)
			}
			cols[c] = concat(t, parts)
		}
		checkTable(t, cols)
	}
	batched, err := csv.Dataset(path("table.csv"), tableSchema)
	if err != nil {
		t.Fatal(err)
	}
	var first []*tensor.Tensor
	for elem, err := range batched.Batch(3, false).All(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		first = elem
		break
	}
	arraytest.Same(t, "batched species", first[2], tensor.Shape{3}, []int64{0, 1, 2})
}

// concat joins rank-1 tensors of one dtype (the test's own, to keep the
// package's dependencies out of its test).
func concat(t *testing.T, parts []*tensor.Tensor) *tensor.Tensor {
	t.Helper()
	var buf []byte
	for _, p := range parts {
		buf = append(buf, p.HostBytes()...)
	}
	out := tensor.MustEmpty(parts[0].DType(), tensor.Shape{len(parts)})
	copy(out.HostBytes(), buf)
	return out
}

func TestDatasetErrorNamesTheLine(t *testing.T) {
	ds, err := csv.Dataset(path("badcell.csv"), csv.Schema{Columns: []csv.Column{{Name: "b", DType: tensor.Int32}}})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, err := range ds.All(context.Background()) {
		if err != nil {
			if !errors.Is(err, csv.ErrFormat) || !strings.Contains(err.Error(), `line 3, column "b": "x" is not a valid int32`) {
				t.Fatalf("error %v", err)
			}
			if n != 1 {
				t.Fatalf("the error came after %d rows, want 1", n)
			}
			return
		}
		n++
	}
	t.Fatal("no error")
}

func TestErrors(t *testing.T) {
	col := func(c ...csv.Column) []csv.Column { return c }
	for _, c := range []struct {
		name, file, text string
		schema           csv.Schema
		want             string
		format           bool // wraps ErrFormat
	}{
		{name: "ragged", file: "ragged.csv", want: "record on line 3: wrong number of fields", format: true},
		{name: "bad cell", file: "badcell.csv", schema: csv.Schema{Columns: col(csv.Column{Name: "b", DType: tensor.Int32})},
			want: `line 3, column "b": "x" is not a valid int32`, format: true},
		{name: "out of range", file: "table.csv", schema: csv.Schema{Columns: col(csv.Column{Name: "count", DType: tensor.Uint8})},
			want: `line 3, column "count": "-3" is not a valid uint8`, format: true},
		{name: "missing", file: "table.csv", schema: csv.Schema{Columns: col(csv.Column{Name: "sepal_width"})},
			want: `line 3, column "sepal_width": missing cell and no default`, format: true},
		{name: "missing by NA", file: "table.csv", schema: csv.Schema{Missing: []string{"NA"},
			Columns: col(csv.Column{Name: "sepal_width", Default: math.NaN()}), NoHeader: false},
			want: ""},
		{name: "text as float32", file: "table.csv", want: `line 2, column "flag": "true" is not a valid float32`, format: true},
		{name: "unknown column", file: "table.csv", schema: csv.Schema{Columns: col(csv.Column{Name: "petal"})},
			want: `no column "petal" in the header`, format: true},
		{name: "index past the header", file: "table.csv", schema: csv.Schema{Columns: col(csv.Column{Index: 6})},
			want: "column 6: index 6 outside the header's 6 columns", format: true},
		{name: "index past the row", file: "noheader.tsv", schema: csv.Schema{Comma: '\t', NoHeader: true, Columns: col(csv.Column{Index: 3})},
			want: "line 1: column 3: index 3 outside the row's 3 fields", format: true},
		{name: "no columns, no header", file: "noheader.tsv", schema: csv.Schema{NoHeader: true},
			want: "a schema without columns needs a header"},
		{name: "quoting", text: "a,b\n1,\"2\n", want: "extraneous or missing \" in quoted-field", format: true},
		{name: "empty", text: "", want: "no header line", format: true},
		{name: "bad dtype", text: "a\n1\n", schema: csv.Schema{Columns: col(csv.Column{Name: "a", DType: 99})},
			want: `column "a": dtype dtype(99)`},
		{name: "default not a number", text: "a\n1\n", schema: csv.Schema{Columns: col(csv.Column{Name: "a", Default: "0"})},
			want: `column "a": default: string is not a number or bool`},
		{name: "default not an integer", text: "a\n1\n", schema: csv.Schema{Columns: col(csv.Column{Name: "a", DType: tensor.Int32, Default: 0.5})},
			want: "default: 0.5 is not an integer"},
		{name: "default out of range", text: "a\n1\n", schema: csv.Schema{Columns: col(csv.Column{Name: "a", DType: tensor.Uint8, Default: 256})},
			want: "default: 256 is outside uint8's range"},
		{name: "bool default for a number", text: "a\n1\n", schema: csv.Schema{Columns: col(csv.Column{Name: "a", Default: true})},
			want: "default: a bool for a float32 column"},
		{name: "bad bool", text: "a\nyes\n", schema: csv.Schema{Columns: col(csv.Column{Name: "a", DType: tensor.Bool})},
			want: `line 2, column "a": "yes" is not a valid bool`, format: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var err error
			if c.file != "" {
				_, err = csv.ReadFile(path(c.file), c.schema)
			} else {
				_, err = csv.Read(strings.NewReader(c.text), c.schema)
			}
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if c.file != "" && !strings.Contains(err.Error(), c.file) {
				t.Errorf("error %v does not name the file", err)
			}
			if errors.Is(err, csv.ErrFormat) != c.format {
				t.Errorf("errors.Is(%v, ErrFormat) = %v, want %v", err, !c.format, c.format)
			}
			// Dataset refuses the same schema problems up front.
			if c.file != "" && !c.format {
				if _, err := csv.Dataset(path(c.file), c.schema); err == nil {
					t.Error("Dataset took the schema")
				}
			}
		})
	}
}
